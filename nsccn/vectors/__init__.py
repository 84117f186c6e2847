"""Vectors: the embeddings, the vector table and its nearest-neighbour search."""
