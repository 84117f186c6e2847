"""Answering a query: analysis, retrieval streams, fusion, and which ranking answers."""
