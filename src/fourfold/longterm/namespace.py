"""One key namespace per scope: keys an operator set and keys fourfold detected meet.

A key names one value of a scope that holds until it changes. Two keys of one kind
(`fourfold.longterm.slots.key_kind`: an operator's "contact" and the distiller's
"contact_channel") would hold two current values of one thing, and a profile would show both
as current. So a keyed write whose key the scope does not hold adopts the scope's current key
of the same kind (its version joins that key's lineage), and a write that would still leave
another current value of its kind (a data dir written before this rule holds both) ends it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from fourfold.longterm.slots import key_kind
from fourfold.longterm.versions import Write, is_current, version_of
from fourfold.stores.vector import VectorRecord

__all__ = ["one_namespace"]


def one_namespace(writes: Sequence[Write], known: Mapping[str | None, Sequence[VectorRecord]]) -> list[Write]:
    """The writes with each key as the scope holds its kind (`known`: each scope's
    `VectorStore.versioned` records), and with the other current versions of that kind to end."""
    # scope -> (kind, key, its current record; None for a key the batch writes first), oldest first
    current: dict[str | None, list[tuple[str, str, VectorRecord | None]]] = {}
    for scope, records in known.items():
        keyed = [(version_of(r).valid_from, r) for r in records if is_current(r) and version_of(r).key is not None]
        current[scope] = [(key_kind(str(version_of(r).key)), str(version_of(r).key), r)
                          for _, r in sorted(keyed, key=lambda pair: pair[0])]
    out: list[Write] = []
    for w in writes:
        if w.key is None or w.lineage is not None or w.follows is not None:
            out.append(w)
            continue
        held = current.setdefault(w.scope, [])
        kind = key_kind(w.key)
        same = [(key, r) for k, key, r in held if k == kind]
        keys = {key for key, _ in same}
        # the key this write's version carries: its own when the scope holds it, else the
        # most recently set key of its kind
        key = w.key if w.key in keys or not same else same[-1][0]
        out.append(replace(w, key=key, ends=tuple(r.id for other, r in same if other != key and r is not None)))
        held[:] = [entry for entry in held if entry[0] != kind]
        held.append((kind, key, None))  # what the batch wrote is ended by nothing after it
    return out
