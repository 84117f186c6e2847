"""The guardrail of every change to the store, the writer and the extractor: the entities, edges,
skeletons, full-text terms and ranks of an index, in a canonical form independent of how the
schema stores them (benchmarks/index_identity.py; on real trees: docs/indexing.md).

The pinned dump (tests/data/shop_index.txt) was made by the text-id store (schema 3) before
integer ids; regenerate it only for a change meant to alter what is indexed:
`python benchmarks/index_identity.py dump REPO/.nsccn/index.db > tests/data/shop_index.txt`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import SHOP, write_repo
from nsccn.indexing.indexer import index_repository

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import index_identity  # noqa: E402

PINNED = Path(__file__).parent / "data" / "shop_index.txt"


def _pinned() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {s: [] for s in index_identity.SECTIONS}
    for line in PINNED.read_text().splitlines():
        section, fact = line.split("\t", 1)
        out[section].append(fact)
    return out


def test_shop_index_is_the_pinned_one(tmp_path):
    root = write_repo(tmp_path / "repo", SHOP)
    index_repository(root, workers=1)
    got = index_identity.dump(str(root / ".nsccn" / "index.db"))
    assert index_identity.compare(_pinned(), got) == []


def test_incremental_updates_end_where_a_fresh_index_does(tmp_path):
    """Edits, a deletion and a re-creation, each indexed incrementally: the same index as one
    built from scratch (a file's refs and edges leave with it, nothing dangles)."""
    root = write_repo(tmp_path / "repo", SHOP)
    index_repository(root, workers=1)
    models = root / "shop" / "models.py"
    models.write_text(models.read_text().replace("def bump():", "def bump_counter():").replace("m.bump()", "m.bump_counter()"))
    index_repository(root, workers=1)
    service = root / "shop" / "service.py"
    text = service.read_text()
    service.unlink()
    index_repository(root, workers=1)
    service.write_text(text.replace("m.bump()", "m.bump_counter()"))
    index_repository(root, workers=1)
    fresh = write_repo(tmp_path / "fresh", {p: (root / p).read_text() for p in SHOP})
    index_repository(fresh, workers=1)
    a = index_identity.dump(str(root / ".nsccn" / "index.db"))
    b = index_identity.dump(str(fresh / ".nsccn" / "index.db"))
    assert index_identity.compare(a, b) == []
    assert any("bump_counter" in e for e in a["edges"])


def test_relations_have_the_ids_the_schema_fixes(tmp_path):
    """Relation ids in name order: a node's edges list CALLS before CONTAINS before INHERITS, as
    the text-id schema listed them (the graph stream's ties, hence localization, depend on it)."""
    from nsccn.model import RELATIONS
    from nsccn.store import Store
    from nsccn.store.schema import INHERITS_ID

    with Store(tmp_path / "index.db") as store:
        ids = {r: store.symbol(r) for r in RELATIONS}
    assert sorted(RELATIONS, key=ids.get) == sorted(RELATIONS) and ids["INHERITS"] == INHERITS_ID
