"""Indexing: looking at files, writing them, resolving references into edges, PageRank."""
