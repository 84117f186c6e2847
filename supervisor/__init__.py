"""The actor pipeline's supervisor: processes, addresses, heartbeats, restarts, shutdown, control.

See `supervisor.main.Supervisor` and `supervisor.cli` (`nsccn index`, `nsccn serve`,
`python -m supervisor`).
"""
