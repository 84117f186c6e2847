"""Which code made an index's contents: a digest of the nsccn sources that decide what an index
holds (the languages' queries and extractors, reading, indexing and resolution) and the package
version. A file's content hash says whether the file changed, not whether the rules that read it
did: an index made by other code is refused by readers (`IndexOutdated`) and rebuilt by the next
index run (`nsccn.store.schema.migrate`), so no answer mixes what two versions extracted."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

EXTRACTED_BY = "extracted_by"  # the meta key

_PACKAGE = Path(__file__).resolve().parents[1]
_SOURCES = ("languages", "reading", "indexing", "model.py", "text.py", "vocab.py", "__init__.py")


@lru_cache(maxsize=1)
def extraction_digest() -> str:
    """16 hex digits over those sources' paths and bytes (read once per process, a few ms)."""
    h = hashlib.sha256()
    for part in _SOURCES:
        top = _PACKAGE / part
        files = sorted(top.rglob("*")) if top.is_dir() else [top]
        for f in files:
            if f.suffix in (".py", ".scm") and "__pycache__" not in f.parts and f.is_file():
                h.update(f.relative_to(_PACKAGE).as_posix().encode())
                h.update(b"\0")
                h.update(f.read_bytes())
                h.update(b"\0")
    return h.hexdigest()[:16]
