"""Which references are resolved, and where: every one (after a first build, or when a change
touches most of them) in this process (`nsccn.indexing.resolve`) or in child processes
(`nsccn.indexing.resolve_partitions`), else only those in the changed files and those elsewhere that
name what changed."""

from __future__ import annotations

from nsccn.indexing.resolve import Resolver, resolve_all, resolve_edges
from nsccn.indexing.resolve_partitions import bulk_children, resolve_in_children
from nsccn.store import EVERYTHING, Store

FULL_RESOLVE_SHARE = 0.3  # past this share of affected references, one full pass is cheaper


def resolve_everything(store: Store, children: int = 0) -> int:
    """Recompute every edge, in one transaction. `children` > 0: that many child processes
    resolve a partition each and this process only writes; the parse results must be
    committed: they read them."""
    if children > 0:
        return resolve_in_children(store, children)
    return resolve_all(store)


def resolve_affected(store: Store, paths: set[str], names: set[str], allow_children: bool = False) -> int:
    """Recompute the edges of refs in changed files and of refs elsewhere that name what changed
    (or an import alias of it). `allow_children`: when that is most of them and one full pass is
    cheaper, child processes may do it (as after a bulk: `bulk_children` decides how many).

    The edges end as a full pass would make them, whatever order the changes came in: when a
    class elsewhere now has other bases than before (its base's file came or went), what self.m()
    means in it and in its subclasses changed wherever they are: everything is resolved again."""
    if EVERYTHING in names:
        return _resolve_everything(store, allow_children)
    store.ref_indexes()
    refs = store.refs(paths, names)
    if not refs and not names:
        return 0
    full = FULL_RESOLVE_SHARE * store.ref_count()
    if len(refs) > full:
        return _resolve_everything(store, allow_children)
    resolver = Resolver(store)
    aliases = resolver.import_aliases(names) | resolver.aliases.bound_to(names)  # `s = attrs`: s means attrs
    if aliases:
        seen = {r[0] for r in refs}
        refs += [r for r in store.refs(None, aliases) if r[0] not in seen]
        if len(refs) > full:
            return _resolve_everything(store, allow_children)
    if not refs:
        return 0
    elsewhere = {r[0] for r in refs if r[3] == "INHERITS" and r[1] not in paths}
    before = resolver.stated_bases(elsewhere)
    edges = resolve_edges(store, refs, resolver)
    if resolver.stated_bases(elsewhere) != before:
        return _resolve_everything(store, allow_children)
    store.replace_edges([r[0] for r in refs], edges)
    return len(edges)


def _resolve_everything(store: Store, allow_children: bool) -> int:
    return resolve_everything(store, children=bulk_children(store) if allow_children else 0)
