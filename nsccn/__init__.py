"""NSCCN: the Neuro-Symbolic Causal Code Navigator."""

__version__ = "0.1.0"
