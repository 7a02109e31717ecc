"""Shrinking messages in place of dropping them: long strings cut, with a visible marker.

What may be cut: a string content, a text block, a tool_result's content (a string or its
text blocks). Never a system message, a role, a block type, or anything in a tool call
(tool_use blocks, OpenAI tool_calls): a call's input is the record of what the model did, and
a cut one reads as an action it never took. So a cut message keeps its shape and a tool call
still pairs with its result. A summary message keeps its SUMMARY_PREFIX label, so
`is_summary` still recognises it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fourfold.models.base import Message
from fourfold.shortterm.messages import SUMMARY_PREFIX, is_summary, is_system

__all__ = ["TRUNCATION_MARKER", "cut_text", "shortest", "shrink_to_fit", "text_paths"]

#: Appended where `TokenBudget` cut a text; `{n}` is the number of characters removed. Short on
#: purpose (about 5 tokens): every cut string pays for it, and under a tight budget a longer marker
#: is what decides whether the newest turn still fits or `BudgetExceeded` is raised.
TRUNCATION_MARKER = "…[{n} chars cut]"

#: Keys and list indices from a message down to one string in it.
Path = tuple[Any, ...]

Fits = Callable[[Sequence[Message]], bool]


def text_paths(message: Message) -> list[Path]:
    """Every string in a message that may be cut (see the module doc), in document order."""
    content = message.get("content")
    if isinstance(content, str):
        return [("content",)]
    if not isinstance(content, Sequence):
        return []
    paths: list[Path] = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            paths.append(("content", i, "text"))
        elif kind == "tool_result":
            paths += _result_paths(block.get("content"), ("content", i, "content"))
    return paths


def _result_paths(inner: Any, at: Path) -> list[Path]:
    if isinstance(inner, str):
        return [at]
    if not isinstance(inner, Sequence):
        return []
    return [
        (*at, j, "text")
        for j, b in enumerate(inner)
        if isinstance(b, Mapping) and b.get("type") == "text"
    ]


def _get(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def _replace(value: Any, path: Path, new: Any) -> Any:
    """A copy of `value` with the item at `path` replaced; only the path is copied."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        return {**value, key: _replace(value[key], rest, new)}
    items = list(value)
    items[key] = _replace(items[key], rest, new)
    return items


def cut_text(text: str, keep: int) -> str:
    """The first `keep` characters of `text` followed by the truncation marker."""
    return text[:keep] + TRUNCATION_MARKER.format(n=len(text) - keep)


def _keep_range(message: Message, path: Path, text: str) -> tuple[int, int]:
    """(fewest, most) characters a cut may keep: it keeps a summary's label and saves space."""
    label = is_summary(message) and path in (("content",), ("content", 0, "text"))
    fewest = len(SUMMARY_PREFIX) if label else 0
    most = len(text) - len(TRUNCATION_MARKER.format(n=len(text))) - 1
    return fewest, most


Slot = tuple[int, Path]  # (message index, path in it)


def shrink_to_fit(messages: Sequence[Message], fits: Fits) -> list[Message]:
    """Cut texts and tool results to one common length, the largest that `fits`.

    Every string longer than the common length is cut to it, so the longest lose the most
    and short ones stay whole (no single text, a long task say, is emptied while another
    keeps thousands of characters). Returns the best it could do, every cuttable string
    reduced to its marker at worst (`shortest`), which may still not fit: the caller decides
    what then. System messages and tool calls are never cut; nothing is mutated.
    """
    originals = list(messages)
    texts = _cuttable(originals)
    if not texts or fits(originals):
        return originals
    found = _largest_fitting(originals, texts, fits)
    return found if found is not None else _capped(originals, texts, 0)


def shortest(messages: Sequence[Message]) -> list[Message]:
    """`messages` with every cuttable string cut down to its marker: the least they can count."""
    originals = list(messages)
    return _capped(originals, _cuttable(originals), 0)


def _cuttable(originals: list[Message]) -> dict[Slot, str]:
    return {
        (i, p): str(_get(m, p))
        for i, m in enumerate(originals)
        if not is_system(m)
        for p in text_paths(m)
    }


def _largest_fitting(
    originals: list[Message], texts: dict[Slot, str], fits: Fits
) -> list[Message] | None:
    """The messages with `texts` cut to the largest common length that fits, or None."""
    lo, hi = 0, max((len(t) for t in texts.values()), default=0)
    if not fits(_capped(originals, texts, lo)):
        return None
    while lo < hi:  # the largest length that fits; counts grow with it
        mid = (lo + hi + 1) // 2
        if fits(_capped(originals, texts, mid)):
            lo = mid
        else:
            hi = mid - 1
    return _capped(originals, texts, lo)


def _capped(originals: list[Message], texts: dict[Slot, str], length: int) -> list[Message]:
    """The messages with each string cut to `length` characters where that saves space."""
    out = list(originals)
    for (i, path), text in texts.items():
        fewest, most = _keep_range(originals[i], path, text)
        keep = max(fewest, length)
        if keep <= most:
            out[i] = _replace(out[i], path, cut_text(text, keep))
    return out
