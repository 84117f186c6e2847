"""Talking to a running pipeline's supervisor over its control socket (`nsccn status`, attach)."""

from __future__ import annotations

from pathlib import Path

import zmq

from nsccn.config import Config, load_config
from nsccn.messages import BadMessage, Message, ShutdownRequest, StatusReply, StatusRequest, decode, encode
from supervisor.addresses import addresses, running_pipeline


def request(address: str, msg: Message, timeout_s: float = 2.0) -> Message | None:
    """One request/reply on a control socket; None when nobody answers in time."""
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(address)
        sock.send(encode(msg))
        if not sock.poll(int(timeout_s * 1000)):
            return None
        try:
            return decode(sock.recv())
        except BadMessage:
            return None
    finally:
        sock.close(0)


def control_address(root: Path, config: Config, info: dict | None = None) -> str:
    if info and isinstance(info.get("addresses"), dict) and info["addresses"].get("control"):
        return info["addresses"]["control"]
    return addresses(root, config).control


def query_status(root: str | Path, config: Config | None = None, timeout_s: float = 2.0) -> dict | None:
    """The live status of the pipeline running on `root`, or None when none runs."""
    root = Path(root).resolve()
    config = config or load_config(root)
    info = running_pipeline(root, config)
    if info is None:
        return None
    address = control_address(root, config, info)
    reply = request(address, StatusRequest(), timeout_s)
    if isinstance(reply, StatusReply):
        return reply.status
    note = "a pipeline holds the lock but its control socket did not answer"
    return {
        "state": "not responding",
        "pid": info.get("pid"),
        "mode": info.get("mode"),
        "started": info.get("started"),
        "note": note,
    }


def request_shutdown(root: str | Path, config: Config | None = None, reason: str = "") -> bool:
    root = Path(root).resolve()
    config = config or load_config(root)
    info = running_pipeline(root, config)
    if info is None:
        return False
    return request(control_address(root, config, info), ShutdownRequest(reason=reason)) is not None
