"""The causal graph's answers: path traces, change impact and the tests that reach a change."""
