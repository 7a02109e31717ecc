"""A scope's profile: its current keyed memories (contact channel, language, plan, any key an
operator set), each with when it was set, within a token bound.

What a key names is one value that holds until it changes, so it belongs in every prompt for
that scope, whatever the question: recall chooses by similarity, and "Prefers Signal" shares
nothing with "the label printer is offline". A superseded version never appears.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fourfold.errors import InvalidInput
from fourfold.longterm.slots import key_kind
from fourfold.types import Recalled

__all__ = ["PROFILE_TOKENS", "fit_profile"]

#: The default bound of a profile, in estimated tokens.
PROFILE_TOKENS = 400
#: The offline estimate of `fourfold.shortterm.EstimateCounter`: about 3.5 characters a token.
_CHARS_PER_TOKEN = 3.5
#: What a line adds to its text in a prompt: the date it was set ("[2026-05-01 09:30 UTC] ") and quoting.
_LINE_CHARS = 28


def fit_profile(current: Sequence[Recalled], max_tokens: int) -> list[Recalled]:
    """The keyed memories among `current` (current versions), one per kind of key (the most
    recently set: a data dir may hold an operator's key and a detected one for one thing, from
    before keys met in one namespace), the most recently set first while they fit in
    `max_tokens`, then ordered by key."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInput(f"max_tokens must be a positive integer, got {max_tokens!r}")
    keyed = sorted((r for r in current if r.key is not None and r.valid_to is None),
                   key=lambda r: (-r.valid_from, r.key or ""))
    kept: list[Recalled] = []
    kinds: set[str] = set()
    spent = 0
    for r in keyed:
        kind = key_kind(r.key or "")
        if kind in kinds:
            continue
        kinds.add(kind)
        cost = math.ceil((len(r.text) + _LINE_CHARS) / _CHARS_PER_TOKEN)
        if spent + cost > max_tokens:
            continue  # a shorter, older one may still fit
        kept.append(r)
        spent += cost
    return sorted(kept, key=lambda r: r.key or "")
