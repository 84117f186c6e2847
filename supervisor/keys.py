"""The pipeline's key: every tcp socket is ZeroMQ CURVE, and only peers holding the key get in.

One CURVE key pair per pipeline, made afresh each time `nsccn index`/`nsccn serve` starts one
and kept 0600 beside the index (`pipeline.key`): a key file that came with a cloned repository
is replaced, never used (honcho's actors, started together, share the first one made). Every binding socket is a CURVE server with it, every connecting
socket a client with it (the pair is both the server's and the one client identity allowed),
and a ZAP handler in each binding process accepts only that client key. A peer without the file
cannot complete the handshake, so it gets nothing and nothing it sends is read: CURVE
authenticates and encrypts every frame. ipc sockets need none of this: they live in a 0700
directory.

A worker on another host gets the key by an explicit copy (`nsccn worker --key-file`).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

import zmq

from nsccn.private import PrivatePathError, create_private_once, write_private


class PipelineKey(NamedTuple):
    public: bytes  # z85, 40 bytes
    secret: bytes


def new_key(path: str | Path) -> PipelineKey:
    """A fresh key pair at `path` (0600), replacing whatever was there."""
    public, secret = zmq.curve_keypair()
    write_private(path, json.dumps({"public": public.decode(), "secret": secret.decode()}).encode())
    return read_key(path)


def ensure_key(path: str | Path) -> PipelineKey:
    """The key at `path`, made (0600) when there is none yet; safe when several processes race."""
    path = Path(path)
    if not os.path.lexists(path):
        public, secret = zmq.curve_keypair()
        create_private_once(path, json.dumps({"public": public.decode(), "secret": secret.decode()}).encode())
    return read_key(path)


def read_key(path: str | Path) -> PipelineKey:
    """A key file: a regular file of ours that nobody else can read (else refused, saying why)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise PrivatePathError(f"no pipeline key at {path}") from None
    if not stat.S_ISREG(st.st_mode):
        raise PrivatePathError(f"the pipeline key {path} is not a regular file")
    if st.st_uid != os.getuid():
        raise PrivatePathError(f"the pipeline key {path} belongs to uid {st.st_uid}, not to this user")
    if st.st_mode & 0o077:
        raise PrivatePathError(
            f"the pipeline key {path} has mode {stat.S_IMODE(st.st_mode):04o} (other users can read it):"
            f" chmod 600 {path}"
        )
    try:
        data = json.loads(path.read_bytes())
        key = PipelineKey(data["public"].encode("ascii"), data["secret"].encode("ascii"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        raise PrivatePathError(f"{path} is not a pipeline key (expected JSON with z85 \"public\" and \"secret\")") from None
    if len(key.public) != 40 or len(key.secret) != 40 or zmq.curve_public(key.secret) != key.public:
        raise PrivatePathError(f"{path} is not a pipeline key: its public and secret halves do not match")
    return key


def key_for(address: str, key_file: str | Path) -> PipelineKey | None:
    """The key a socket on `address` needs: the pipeline's for tcp, none for ipc and inproc."""
    if not address.startswith("tcp://"):
        return None
    if not key_file:
        raise PrivatePathError(f"{address} is tcp but no pipeline key was given")
    return read_key(key_file)


def secure(sock: zmq.Socket, key: PipelineKey | None, *, server: bool) -> None:
    """Make `sock` CURVE before it binds (server) or connects (client); nothing for ipc (key None)."""
    if key is None:
        return
    sock.curve_secretkey = key.secret
    sock.curve_publickey = key.public
    if server:
        sock.curve_server = True
    else:
        sock.curve_serverkey = key.public


class _OnlyOurKey:
    def __init__(self, public: bytes):
        self.public = public

    def callback(self, domain: str, client_key: bytes) -> bool:
        return client_key == self.public


def start_authenticator(ctx: zmq.Context, key: PipelineKey):
    """The ZAP handler of a process that binds tcp sockets: only our key gets in. Stop it before
    the context is destroyed."""
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_curve_callback(domain="*", credentials_provider=_OnlyOurKey(key.public))
    return auth
