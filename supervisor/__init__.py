"""The actor pipeline's supervisor: processes, addresses, heartbeats, restarts, shutdown, control.

See `supervisor.main.Supervisor` and `supervisor.cli` (`nsccn index`, `nsccn serve --no-mcp`,
`nsccn stop`, `python -m supervisor`). It knows processes and addresses; it imports nothing from
`workers/` (the actors import from it).
"""
