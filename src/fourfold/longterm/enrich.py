"""Write-time enrichment: an LLM reads the durable facts out of a memory before it is indexed.

Off by default (recall reaches its offline targets without it). With a model configured,
each memory is indexed together with the short facts the model extracted, which helps
recall when a question names a fact the original wording only implies.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Protocol

from fourfold.errors import ModelError
from fourfold.models.base import ChatModel

__all__ = ["Enricher", "ModelEnricher"]

log = logging.getLogger("fourfold.longterm")

_PROMPT = (
    "For each numbered memory below, list the durable facts it states or clearly implies "
    "(who, what, when, preferences, decisions), each as one short standalone sentence, at most "
    "{max_facts} per memory. Never include secrets or small talk. Answer only with JSON: "
    '{{"facts": [[...facts of memory 1...], [...facts of memory 2...], ...]}} with exactly '
    "{n} lists, in order.\n\n{numbered}"
)


class Enricher(Protocol):
    """Extracts extra index text for each memory of a write, in order."""

    def extract(self, texts: Sequence[str]) -> list[tuple[str, ...]]: ...


class ModelEnricher:
    """One chat-model call per batch of memories; a failed or malformed answer adds nothing."""

    def __init__(self, model: ChatModel, *, max_facts: int = 5, batch_size: int = 16, max_tokens: int = 1024) -> None:
        self.model = model
        self.max_facts = max_facts
        self.batch_size = batch_size
        self.max_tokens = max_tokens

    def extract(self, texts: Sequence[str]) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._batch(texts[start : start + self.batch_size]))
        return out

    def _batch(self, texts: Sequence[str]) -> list[tuple[str, ...]]:
        numbered = "\n".join(f"{i + 1}. {json.dumps(t, ensure_ascii=False)}" for i, t in enumerate(texts))
        prompt = _PROMPT.format(max_facts=self.max_facts, n=len(texts), numbered=numbered)
        try:
            reply = self.model.chat([{"role": "user", "content": prompt}], max_tokens=self.max_tokens).text
            start, end = reply.index("{"), reply.rindex("}") + 1
            lists = json.loads(reply[start:end])["facts"]
            if not isinstance(lists, list) or len(lists) != len(texts):
                raise ValueError(f"expected {len(texts)} lists of facts")
            return [
                tuple(str(f).strip() for f in facts[: self.max_facts] if str(f).strip()) if isinstance(facts, list) else ()
                for facts in lists
            ]
        except (ModelError, ValueError, KeyError, TypeError) as exc:
            # Enrichment only adds recall; the memories are stored without it.
            log.warning("write-time enrichment skipped for %d memories: %s", len(texts), exc)
            return [() for _ in texts]
