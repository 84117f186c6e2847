"""The static model's file, checked without loading it: no numpy, no table, so a process that
only asks whether vectors can be made (the supervisor, `nsccn index` before it starts actors)
stays small. The model itself is `nsccn.vectors.static_embed`."""

from __future__ import annotations

import json
import os
from pathlib import Path

# The default embedding model (nsccn.vectors.static_embed) and the names that ask for it (lowercased).
# Here, not in nsccn.config, so the model loads without the configuration's dependencies.
STATIC_MODEL = "nsccn/static-code-v2"
# The first static model's names (v1, replaced in stop 50) ask for the current one.
STATIC_ALIASES = frozenset({STATIC_MODEL, "static", "static-code", "static-code-v2", "nsccn/static-code-v1",
                            "static-code-v1"})


# How the static model reads a query (`static_embed.TITLE_REPEAT`, `static_embed.CODE_WEIGHT`; a test
# holds them together): vectors stored from a query's reading (the history's commit messages) are keyed
# by the model and this, so a new reading makes them again.
QUERY_READING = "title2-code0.5"


def is_static_model(name: str) -> bool:
    return name.lower() in STATIC_ALIASES


def retired_static_model(model_id: str | None) -> bool:
    """Vectors an earlier static model made (`nsccn/static-code-v1`): no query can be embedded
    beside them any more; the next `nsccn index` embeds the index again."""
    return bool(model_id) and model_id != STATIC_MODEL and model_id.lower() in STATIC_ALIASES


FORMAT = "nsccn-static-embedding"
FORMAT_VERSION = 1
STATIC_MODEL_FILE = Path(__file__).resolve().parent.parent / "models" / "static-code-v2" / "model.npz"


def model_file() -> Path:
    """The shipped model file, or the one `NSCCN_STATIC_MODEL` names (a model being evaluated)."""
    return Path(os.environ.get("NSCCN_STATIC_MODEL") or STATIC_MODEL_FILE)


_DIGESTS: dict[str, str] = {}


def model_digest(path: str | Path | None = None) -> str:
    """A digest of the model file's bytes (once per process): two processes embed alike only if
    theirs agree (a Ray node's vectors are used by the driver only then)."""
    import hashlib

    path = model_file() if path is None else Path(path)
    key = str(path)
    if key not in _DIGESTS:
        h = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def file_problem(path: str | Path | None = None) -> str | None:
    """Why the model file cannot be used, or None, from its header alone: no numpy, no table
    (a process that only checks, such as the supervisor, stays small). The `.npy` inside the zip
    is read as its format says: magic, version, header length, header, then the raw bytes."""
    import ast
    import zipfile

    path = model_file() if path is None else Path(path)
    if not path.is_file():
        return f"the static embedding model is missing: {path}"
    try:
        with zipfile.ZipFile(path) as z, z.open("header.npy") as f:
            head = f.read(10)
            if head[:6] != b"\x93NUMPY":
                raise ValueError("not an .npy header")
            size = int.from_bytes(head[8:10], "little") if head[6] == 1 else int.from_bytes(head[8:10] + f.read(2), "little")
            meta = ast.literal_eval(f.read(size).decode("latin-1"))
            header = json.loads(f.read(int(meta["shape"][0])).decode("utf-8"))
    except (OSError, KeyError, ValueError, SyntaxError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        return f"the static embedding model {path} cannot be read: {exc}"
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        return (f"{path} is not a static embedding model of format {FORMAT} v{FORMAT_VERSION} "
                f"(it says {header.get('format')!r} v{header.get('format_version')!r})")
    if header.get("model_id") != STATIC_MODEL:
        return f"the static model file {path} holds {header.get('model_id')}, not {STATIC_MODEL}"
    return None




def configured_model(config) -> str:
    """The embedding model asked for: `NSCCN_EMBED_MODEL` (tests, a model being evaluated), else
    the configuration's."""
    return os.environ.get("NSCCN_EMBED_MODEL") or config.embedding_model


def uses_static_model(config) -> bool:
    return is_static_model(configured_model(config))


def model_problem(config) -> str | None:
    """Why the configured model cannot make vectors here, or None. Only the static model is
    checked (a transformer that is not cached falls back to the bundled one: `embed.load_embedder`)."""
    return file_problem() if uses_static_model(config) else None
