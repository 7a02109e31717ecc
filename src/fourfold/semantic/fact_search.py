"""Finding a policy by what it is about: the facts whose key name and description are nearest a question.

A customer asks "can I get my money back on the annual plan?", never for
`refund_window_days_annual`: the question is matched against each key's words
("refund window days annual") and the description the operator wrote, by the embedder's cosine
when there is one and by the share of the question's content words the fact holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fourfold.embeddings.base import Vectors
from fourfold.text.tokenize import tokenize
from fourfold.types import Fact

__all__ = ["SEARCH_FLOOR", "fact_text", "nearest_facts"]

#: The least relevance a fact found for a question has: the embedder's cosine or the share of
#: the question's content words it holds, whichever is higher. For the bundled MiniLM,
#: "money back on the annual plan" is 0.63 from the annual refund window and unrelated
#: questions ("my label printer is offline") stay below 0.2 from every policy.
SEARCH_FLOOR = 0.3


def fact_text(fact: Fact) -> str:
    """What a fact is searched by: its key's words and its description."""
    words = fact.key.replace("_", " ").replace("-", " ").replace(".", " ")
    return f"{words}: {fact.description}" if fact.description.strip() else words


def nearest_facts(
    query: str, facts: Sequence[Fact], *, k: int, embed: Callable[[list[str]], Vectors] | None = None,
    min_score: float = SEARCH_FLOOR,
) -> list[tuple[Fact, float]]:
    """The (at most k) facts at least `min_score` relevant to `query`, best first, with their relevance."""
    if not facts:
        return []
    asked = set(tokenize(query))
    lexical = np.array([len(asked & set(tokenize(fact_text(f)))) / len(asked) if asked else 0.0 for f in facts])
    scores = lexical
    if embed is not None:
        vectors = embed([query, *(fact_text(f) for f in facts)])
        scores = np.maximum(lexical, vectors[1:] @ vectors[0])
    order = sorted(range(len(facts)), key=lambda i: (-scores[i], facts[i].key))
    return [(facts[i], float(scores[i])) for i in order[:k] if scores[i] >= min_score]
