"""A scope's profile: its current keyed memories (contact channel, language, plan, any key an
operator set) and its standing preferences, each with when it was set, within a token bound.

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

#: The kind of a stated preference (what the distiller and `Memory.add` write).
PREFERENCE = "preference"
#: The default bound of a profile, in estimated tokens.
PROFILE_TOKENS = 400
#: The offline estimate of `fourfold.shortterm.EstimateCounter`: about 3.5 characters a token.
_CHARS_PER_TOKEN = 3.5
#: What a line adds to its text in a prompt: the date it was set ("[2026-05-01 09:30 UTC] ") and quoting.
_LINE_CHARS = 28


def fit_profile(current: Sequence[Recalled], max_tokens: int) -> list[Recalled]:
    """The keyed memories among `current` (current versions), one per kind of key (the most
    recently set: a data dir may hold an operator's key and a detected one for one thing, from
    before keys met in one namespace), and the preferences without a key (a kind no rule
    names), the most recently set first while they fit in `max_tokens`; keyed ones by key,
    then the others as they were set."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInput(f"max_tokens must be a positive integer, got {max_tokens!r}")
    standing = sorted((r for r in current if (r.key is not None or r.kind == PREFERENCE) and r.valid_to is None),
                      key=lambda r: (-r.valid_from, r.key or ""))
    kept: list[Recalled] = []
    kinds: set[str] = set()
    spent = 0
    for r in standing:
        if r.key is not None:
            kind = key_kind(r.key)
            if kind in kinds:
                continue
            kinds.add(kind)
        cost = math.ceil((len(r.text) + _LINE_CHARS) / _CHARS_PER_TOKEN)
        if spent + cost > max_tokens:
            continue  # a shorter, older one may still fit
        kept.append(r)
        spent += cost
    return sorted(kept, key=lambda r: (r.key is None, r.key or "", r.valid_from))
