"""Documents (manuals, wikis) chunked into the vector store, kept apart from memories by kind."""

from __future__ import annotations

import os
from pathlib import Path

from fourfold._validate import check_k, check_scope, check_text
from fourfold.errors import InvalidInput, NotFound, TooLarge
from fourfold.longterm.store import DOC_KIND, LongTermMemory, MemoryInput
from fourfold.semantic.chunking import chunk_text
from fourfold.text import redact
from fourfold.types import DocHit, Recalled

__all__ = ["MAX_DOC_CHARS", "MAX_DOC_CHUNKS", "DocumentStore", "check_document", "read_document"]

#: Limits of one document: a request that would embed thousands of chunks is refused.
MAX_DOC_CHARS = 500_000
MAX_DOC_CHUNKS = 600


class DocumentStore:
    """ingest / search over document chunks; never mixed into `long_term.recall`."""

    def __init__(self, long_term: LongTermMemory, *, max_chars: int = 1200, overlap: int = 200) -> None:
        self._lt = long_term
        self.max_chars = max_chars
        self.overlap = overlap

    def ingest(
        self, text: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None
    ) -> list[str]:
        """Chunk and store a document; returns the chunk ids (re-ingesting is idempotent).

        A string is always the document's text, never a file name: a caller passing on
        untrusted text must not be made to upload a local file. A `Path` is read, as
        `ingest_file` does.
        """
        if isinstance(text, os.PathLike):
            return self.ingest_file(text, source=source, scope=scope)
        if not isinstance(source, str):
            raise InvalidInput("give a source name for text documents (source='refund-policy.md')")
        return self.ingest_text(text, source=source, scope=scope)

    def ingest_file(self, path: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None) -> list[str]:
        """Read a UTF-8 file and store it; the source defaults to the file's name."""
        text, name = read_document(path)
        return self.ingest_text(text, source=source or name, scope=scope)

    def ingest_text(self, text: str, *, source: str, scope: str | None = None) -> list[str]:
        """Chunk and store a text; never reads a file (the safe call for network adapters).

        Secrets are removed from the whole text before it is cut: a key split across two
        chunks would otherwise leave its second half in clear.
        """
        text = check_document(text)
        if not isinstance(source, str) or not source.strip():
            raise InvalidInput("give a source name for text documents (source='refund-policy.md')")
        scope = check_scope(scope)
        chunks = chunk_text(redact(text)[0], max_chars=self.max_chars, overlap=self.overlap)
        if len(chunks) > MAX_DOC_CHUNKS:
            raise TooLarge(f"the document makes {len(chunks):,} chunks; the limit is {MAX_DOC_CHUNKS:,} (split it into several sources)")
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


def check_document(text: object) -> str:
    """A document's text within the size limit (TooLarge, answered 413 by the service)."""
    if isinstance(text, str) and len(text) > MAX_DOC_CHARS:
        raise TooLarge(f"the document is {len(text):,} characters; the limit is {MAX_DOC_CHARS:,} (split it into several sources)")
    return check_text(text, what="document", max_chars=MAX_DOC_CHARS)


def read_document(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(text, file name) of a UTF-8 file, checked like any document."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"ingest_file takes a path, not {type(path).__name__}")
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"no such file: {file}") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise InvalidInput(f"cannot read {file} as UTF-8 text: {exc}") from None
    return check_document(text), file.name


def _hit(r: Recalled) -> DocHit:
    return DocHit(
        id=r.id,
        text=r.text,
        source=str(r.metadata.get("source", "")),
        position=int(r.metadata.get("position", 0)),
        score=r.score,
        heading=str(r.metadata.get("heading", "")),
    )
