"""The MCP front of `nsccn serve`: the MCP server on this process's stdin/stdout, reading the
index through read-only connections, embedding queries through the embedder actor's priority
lane, attached to the repository's shared pipeline (supervisor/attach.py) for as long as the
session lasts.

Nothing but MCP goes to stdout: logs go to stderr. The pipeline is not this process's: it was
found running or started detached, and it outlives the session.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from nsccn.config import Config, load_config
from nsccn.private import PrivatePathError
from supervisor.addresses import addresses
from supervisor.attach import Attachment, PipelineStartError
from supervisor.cli import EXIT_FAILED, EXIT_OK, busy_message, setup_logging
from supervisor.main import PipelineBusy
from workers.query_client import QueryEmbedClient


def serve(root: str | Path, workers: int = 0, embed: bool = True, overrides: dict | None = None) -> int:
    """`nsccn serve`: MCP on stdio, attached to the repository's shared pipeline: the running one,
    or one started detached that outlives this session (`pipeline_linger_s`). An exit code."""
    root = Path(root).resolve()
    config = load_config(root, overrides)
    setup_logging(logging.INFO)
    try:
        serve_stdio(root, config, workers=workers, embed=embed)
    except (PipelineStartError, PrivatePathError) as exc:
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except PipelineBusy as busy:
        print(f"nsccn: {busy_message(busy.info)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def serve_stdio(root: Path, config: Config, workers: int = 0, embed: bool = True) -> None:
    """Attach to (or start) the repository's pipeline and serve MCP on stdio until the client
    goes away; the pipeline then lingers for the next session."""
    from nsccn.serving.mcp_server import run_stdio

    root = Path(root)

    def query_address(info: dict) -> str:
        return (info.get("addresses") or {}).get("query") or addresses(root, config).query

    client: QueryEmbedClient | None = None

    def on_new_pipeline(info: dict) -> None:
        # A new pipeline: drop the old socket.
        client.address = query_address(info)
        client.close()

    attachment = Attachment(root, config, workers=workers, embed=embed, on_new_pipeline=on_new_pipeline)
    info = attachment.start()
    address = query_address(info)
    client = QueryEmbedClient(address, root=root)
    try:
        run_stdio(root, config.db_path(root), embedder=client, status_provider=attachment.status)
    finally:
        attachment.close()
        client.close()
