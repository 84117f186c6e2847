"""Causal path traces over the edge table: breadth-first, cycle-safe, bounded."""

from __future__ import annotations

from collections import deque

from nsccn.store import EdgeRow, Store
from nsccn.vocab import DIRECTION_RELATIONS, MAX_DEPTH  # noqa: F401  (which relations each direction follows)

DEFAULT_MAX_NODES = 200

PSEUDO_KINDS = {
    "ext": "external",
    "var": "variable",
    "attr": "attribute",
    "env": "environment variable",
    "config": "configuration key",
}


def pseudo_entity(node_id: str) -> dict:
    """Metadata for a target that is not an entity of ours (external symbol, variable, env key)."""
    prefix = node_id.split(":", 1)[0]
    return {"kind": PSEUDO_KINDS.get(prefix, "unknown"), "name": node_id.split(":")[-1]}


def trace(
    store: Store,
    root_id: str,
    direction: str = "downstream",
    depth: int = 3,
    relations: list[str] | None = None,
    min_confidence: float = 0.0,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> dict:
    if direction not in DIRECTION_RELATIONS:
        raise ValueError(f"direction must be one of {sorted(DIRECTION_RELATIONS)}, not {direction!r}")
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}, not {depth}")
    rels = tuple(relations) if relations else DIRECTION_RELATIONS[direction]
    adjacency: dict[str, list[dict]] = {}
    reached = {root_id: 0}
    queue = deque([root_id])
    truncated = False
    merged: dict[tuple[str, str, str], dict] = {}
    while queue:
        node = queue.popleft()
        hop = reached[node]
        if hop >= depth:
            continue
        steps: list[tuple[str, EdgeRow, str]] = []
        if direction in ("downstream", "state", "all"):
            steps += [(e.target, e, "out") for e in store.edges_from(node, rels)]
        if direction in ("upstream", "all"):
            steps += [(e.source, e, "in") for e in store.edges_to(node, rels)]
        for other, edge, way in steps:
            if edge.confidence < min_confidence:
                continue
            item = {
                "target" if way == "out" else "source": other,
                "relation": edge.relation,
                "confidence": round(edge.confidence, 3),
                "resolution": edge.resolution,
                "line": edge.line,
            }
            key = (node, other, edge.relation)
            if key in merged:  # the same relation at another line: one entry, every line
                merged[key]["lines"].append(edge.line)
                merged[key]["confidence"] = max(merged[key]["confidence"], item["confidence"])
                continue
            item["lines"] = [item.pop("line")]
            merged[key] = item
            if other not in reached:
                if len(reached) >= max_nodes:
                    truncated = True
                    continue
                reached[other] = hop + 1
                if ":" in other and other.split(":", 1)[0] in ("module", "class", "func", "method"):
                    queue.append(other)
            adjacency.setdefault(node, []).append(item)
    known = store.entities(reached)
    entities = {}
    for node_id, hop in reached.items():
        row = known.get(node_id)
        meta = row.brief() if row else pseudo_entity(node_id)
        meta.pop("id", None)
        meta["hops"] = hop
        entities[node_id] = meta
    return {
        "root": root_id,
        "direction": direction,
        "depth": depth,
        "relations": list(rels),
        "adjacency_list": adjacency,
        "entities": entities,
        "truncated": truncated,
    }
