"""MCP front actor: the MCP server on this process's stdin/stdout, reading the index through
read-only connections, embedding queries through the embedder actor's priority lane.

Nothing but MCP goes to stdout: logs go to stderr. It exits 0 when the client closes stdin,
which tells the supervisor that the session is over.
"""

from __future__ import annotations

import os
import sys

from nsccn.config import load_config
from workers.base import Actor, actor_main
from workers.query_client import QueryEmbedClient


def status_provider(root, config):
    """The live pipeline status for `index_status` and the partial-result notes."""
    from supervisor.control import query_status

    def provider() -> dict | None:
        return query_status(root, config, timeout_s=1.0)

    return provider


def serve_stdio(root, db_path, query_address: str, key_file: str = "") -> None:
    """Serve MCP on stdio until the client goes away (also used by an attaching `nsccn serve`)."""
    from nsccn.mcp_server import run_stdio

    config = load_config(root)
    client = QueryEmbedClient(query_address, root=root, key_file=key_file)
    try:
        run_stdio(root, db_path, embedder=client, status_provider=status_provider(root, config))
    finally:
        client.close()


class McpFront(Actor):
    """Serve the MCP tools on stdio against the shared index."""

    kind = "mcp"

    def _on_signal(self, signum, frame) -> None:
        # Read-only: nothing to save. The server's event loop does not poll a flag, so leave now.
        self.log.info("stopping on signal %d", signum)
        sys.stderr.flush()
        os._exit(0)

    def run(self) -> None:
        self.tick("serving")
        with self.busy("serving MCP on stdio"):
            serve_stdio(self.root, self.spec.db_path, self.addrs.query, self.spec.key_file)
        self.log.info("the client closed the session")


def main(argv=None) -> int:
    return actor_main(McpFront, argv)


if __name__ == "__main__":
    raise SystemExit(main())
