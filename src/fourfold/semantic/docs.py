"""Documents (manuals, wikis) chunked into the vector store, kept apart from memories by kind."""

from __future__ import annotations

import os
from pathlib import Path

from fourfold._validate import check_k, check_scope, check_text
from fourfold.errors import InvalidInput, NotFound
from fourfold.longterm.store import DOC_KIND, LongTermMemory, MemoryInput
from fourfold.semantic.chunking import chunk_text
from fourfold.types import DocHit, Recalled

__all__ = ["DocumentStore"]

_MAX_DOC_CHARS = 5_000_000


class DocumentStore:
    """ingest / search over document chunks; never mixed into `long_term.recall`."""

    def __init__(self, long_term: LongTermMemory, *, max_chars: int = 1200, overlap: int = 200) -> None:
        self._lt = long_term
        self.max_chars = max_chars
        self.overlap = overlap

    def ingest(self, text_or_path: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None) -> list[str]:
        """Chunk a text, or a file's contents, and store the chunks; returns their ids.

        A path is read when `text_or_path` is a `Path` or names an existing file; the
        source defaults to the file name. Re-ingesting the same content is idempotent.
        """
        text, source = _read(text_or_path, source)
        return self.ingest_text(text, source=source, scope=scope)

    def ingest_text(self, text: str, *, source: str, scope: str | None = None) -> list[str]:
        """Chunk and store a text; never reads a file (the safe call for network adapters)."""
        text = check_text(text, what="document", max_chars=_MAX_DOC_CHARS)
        if not isinstance(source, str) or not source.strip():
            raise InvalidInput("give a source name for text documents (source='refund-policy.md')")
        scope = check_scope(scope)
        chunks = chunk_text(text, max_chars=self.max_chars, overlap=self.overlap)
        items = [
            MemoryInput(
                chunk.text, scope, DOC_KIND,
                {"source": source, "position": chunk.position, "heading": chunk.heading,
                 "start": chunk.start, "end": chunk.end},
            )
            for chunk in chunks
        ]
        written = self._lt._write([self._lt._prepare(i, allow_doc=True) for i in items])
        return [w.id for w in written]

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        scope: str | None = None,
        source: str | None = None,
        min_score: float | None = None,
    ) -> list[DocHit]:
        """The k chunks most relevant to `query` (documents only), at least `min_score` relevant
        (in [0, 1], the scale of `LongTermMemory.recall`)."""
        where = {"source": source} if source else None
        hits = self._lt.recall(query, scope=scope, k=check_k(k), kinds=(DOC_KIND,), where=where, min_score=min_score)
        return [_hit(h) for h in hits]

    def sources(self, *, scope: str | None = None) -> list[str]:
        return sorted({str(r.metadata.get("source", "")) for r in self._lt.all(scope=scope, kinds=(DOC_KIND,))})

    def delete_source(self, source: str, *, scope: str | None = None) -> int:
        """Remove every chunk of one source; returns how many."""
        doomed = [r.id for r in self._lt.all(scope=scope, kinds=(DOC_KIND,)) if r.metadata.get("source") == source]
        if not doomed:
            raise NotFound(f"no document with source {source!r}")
        self._lt.forget_many(doomed)
        return len(doomed)


def _read(text_or_path: str | os.PathLike[str], source: str | None) -> tuple[str, str]:
    path: Path | None = None
    if isinstance(text_or_path, os.PathLike):
        path = Path(text_or_path)
    elif isinstance(text_or_path, str) and "\n" not in text_or_path and len(text_or_path) < 4096:
        candidate = Path(text_or_path)
        try:
            if candidate.is_file():
                path = candidate
        except OSError:
            path = None
    elif not isinstance(text_or_path, str):
        raise InvalidInput(f"ingest takes text or a path, not {type(text_or_path).__name__}")
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFound(f"no such file: {path}") from None
        except (UnicodeDecodeError, OSError) as exc:
            raise InvalidInput(f"cannot read {path} as UTF-8 text: {exc}") from None
        source = source or path.name
    else:
        text = str(text_or_path)
    if not source:
        raise InvalidInput("give a source name for text documents (source='refund-policy.md')")
    return check_text(text, what="document", max_chars=_MAX_DOC_CHARS), source


def _hit(r: Recalled) -> DocHit:
    return DocHit(
        id=r.id,
        text=r.text,
        source=str(r.metadata.get("source", "")),
        position=int(r.metadata.get("position", 0)),
        score=r.score,
        heading=str(r.metadata.get("heading", "")),
    )
