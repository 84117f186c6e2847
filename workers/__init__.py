"""The actors of the NSCCN pipeline: thin loops around the `nsccn` library.

Each runs as `python -m workers.<kind>` (watcher, parser, writer, embedder, mcp_front), started
by the supervisor (`nsccn serve`, `nsccn index`) or by `honcho start` with the Procfile.
"""
