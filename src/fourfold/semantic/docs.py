"""Documents (manuals, wikis) chunked into the vector store, kept apart from memories by kind."""

from __future__ import annotations

import builtins
import glob
import itertools
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from fourfold._hints import did_you_mean, source_stem
from fourfold._validate import check_k, check_scope, check_text
from fourfold.errors import InvalidInput, NotFound, TooLarge
from fourfold.longterm.store import DOC_KIND, LongTermMemory, MemoryInput
from fourfold.semantic.chunking import chunk_text
from fourfold.text import redact
from fourfold.types import DocHit, DocSource, Ingested, Recalled

__all__ = [
    "MAX_DOC_CHARS",
    "MAX_DOC_CHUNKS",
    "MAX_FILES",
    "TEXT_NEEDS_SOURCE",
    "TEXT_SUFFIXES",
    "DocSource",
    "DocumentStore",
    "Ingested",
    "Progress",
    "check_document",
    "find_documents",
    "read_document",
]

#: Most files one ingest reads (a folder given by mistake, such as /, is refused).
MAX_FILES = 1000
#: Files a folder contributes: text and Markdown.
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".rst"})
#: Chunks embedded per write: progress moves on after each batch.
_BATCH = 16
#: Called as chunks are stored: (source, chunks done, chunks in the document).
Progress = Callable[[str, int, int], None]


#: A string given to `ingest` is text: without a source name, say how to read a file instead.
TEXT_NEEDS_SOURCE = ("a string is the document's text, never a file name: give it a source name "
                     "(source='refund-policy.md'), or read a file with ingest_file(path)")

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
            raise InvalidInput(TEXT_NEEDS_SOURCE)
        return self.ingest_text(text, source=source, scope=scope)

    def ingest_file(self, path: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None) -> list[str]:
        """Read a UTF-8 file and store it; the source defaults to the file's name."""
        text, name = read_document(path)
        return self.ingest_text(text, source=source or name, scope=scope)

    def ingest_text(
        self, text: str, *, source: str, scope: str | None = None, on_progress: Progress | None = None
    ) -> list[str]:
        """Chunk and store a text; never reads a file (the safe call for network adapters).

        A source holds one version: re-ingesting it with changed text replaces its chunks
        (the new ones are written before the old ones go), and unchanged text is not
        embedded again. Secrets are removed from the whole text before it is cut: a key
        split across two chunks would otherwise leave its second half in clear.
        """
        return self._ingest(text, source=source, scope=scope, on_progress=on_progress)[0]

    def ingest_paths(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        scope: str | None = None,
        on_progress: Progress | None = None,
    ) -> list[Ingested]:
        """Ingest files, folders (their text files, recursively) and glob patterns.

        A file's source is its name; a file found in a folder is named by its path inside
        that folder (`policies/refunds.md`), so ingesting the folder again finds it again.
        """
        found = find_documents(paths)
        results = []
        for path, source in found:
            text, _ = read_document(path)
            results.append(self._ingest(text, source=source, scope=scope, on_progress=on_progress)[1])
        return results

    def _ingest(
        self, text: str, *, source: str, scope: str | None, on_progress: Progress | None
    ) -> tuple[list[str], Ingested]:
        text = check_document(text)
        if not isinstance(source, str) or not source.strip():
            raise InvalidInput("give a source name for text documents (source='refund-policy.md')")
        if not source.isprintable() or source != source.strip():
            raise InvalidInput("a document's source name is printable, without control characters or "
                               "surrounding spaces (it names the document in every listing)")
        scope = check_scope(scope)
        chunks = chunk_text(redact(text)[0], max_chars=self.max_chars, overlap=self.overlap)
        if len(chunks) > MAX_DOC_CHUNKS:
            raise TooLarge(f"the document makes {len(chunks):,} chunks; the limit is {MAX_DOC_CHUNKS:,} (split it into several sources)")
        prepared = self._lt.prepare_documents(
            MemoryInput(
                chunk.text, scope, DOC_KIND,
                {"source": source, "position": chunk.position, "heading": chunk.heading,
                 "start": chunk.start, "end": chunk.end},
            )
            for chunk in chunks
        )
        ids = [p.id for p in prepared]
        # A chunk's id derives from its source, position and text: equal id sets, equal document.
        old = {r.id for r in self._lt.all(scope=scope, kinds=(DOC_KIND,)) if r.metadata.get("source") == source}
        if old == set(ids):
            if on_progress is not None:
                on_progress(source, len(ids), len(ids))
            return ids, Ingested(source, "unchanged", len(ids))
        for start in range(0, len(prepared), _BATCH):
            self._lt.write_documents(prepared[start : start + _BATCH])
            if on_progress is not None:
                on_progress(source, min(start + _BATCH, len(prepared)), len(prepared))
        stale = sorted(old - set(ids))
        if stale:
            self._lt.forget_many(stale)
        return ids, Ingested(source, "replaced" if old else "added", len(ids), removed=len(stale))

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
        return [d.source for d in self.list(scope=scope)]

    def list(self, *, scope: str | None = None) -> builtins.list[DocSource]:
        """Every document of a scope: its source, how many chunks, when last written."""
        by_source: dict[str, builtins.list[Recalled]] = {}
        for r in self._lt.all(scope=scope, kinds=(DOC_KIND,)):
            by_source.setdefault(str(r.metadata.get("source", "")), []).append(r)
        return [
            DocSource(name, len(chunks), max(c.created_at for c in chunks))
            for name, chunks in sorted(by_source.items())
        ]

    def delete_source(self, source: str, *, scope: str | None = None) -> int:
        """Remove every chunk of one source; returns how many."""
        chunks = self._lt.all(scope=scope, kinds=(DOC_KIND,))
        doomed = [r.id for r in chunks if r.metadata.get("source") == source]
        if not doomed:
            known = sorted({str(r.metadata.get("source", "")) for r in chunks})
            raise NotFound(f"no document with source {source!r}{did_you_mean(source, known, short=source_stem)}")
        self._lt.forget_many(doomed)
        return len(doomed)


def find_documents(paths: Iterable[str | os.PathLike[str]]) -> builtins.list[tuple[Path, str]]:
    """(file, source name) of every document that paths name: files, folders and globs.

    Folders give their files with a text suffix (hidden ones skipped), named by their path
    inside the folder; a glob's matches are named by their path inside the folder the pattern
    starts from (`kb/**/*.md` names them as `kb` does); a pattern that
    matches no file, or a path that does not exist, is NotFound: a typo must not pass silently.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: dict[Path, str] = {}
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = _folder_documents(path, limit=MAX_FILES - len(found))
            if not files:
                raise NotFound(f"no text or Markdown files ({', '.join(sorted(TEXT_SUFFIXES))}) in {path}")
            found.update((f, f.relative_to(path).as_posix()) for f in files)
        elif path.exists():
            found[path] = path.name
        elif glob.has_magic(str(given)):
            base = _glob_base(str(given))
            matches = sorted(Path(m) for m in glob.glob(str(given), recursive=True)
                             if Path(m).is_file() and Path(m).resolve().is_relative_to(base.resolve()))
            if not matches:
                raise NotFound(f"no file matches {str(given)!r}")
            found.update((m, m.relative_to(base).as_posix()) for m in matches)
        else:
            raise NotFound(f"no such file or folder: {path}")
    _refuse_shared_names(found)
    return list(found.items())


def _glob_base(pattern: str) -> Path:
    """The folder a pattern searches (its parts before the first wildcard): a match is named by
    its path inside it, as a folder's files are, so `kb/**/*.md` and `kb` store the same names."""
    parts = Path(pattern).parts
    plain = list(itertools.takewhile(lambda part: not glob.has_magic(part), parts))
    return Path(*plain) if plain else Path()


def _refuse_shared_names(found: dict[Path, str]) -> None:
    """Two files under one source name would replace each other: refuse before storing any."""
    by_source: dict[str, builtins.list[Path]] = {}
    for path, source in found.items():
        by_source.setdefault(source, []).append(path)
    for source, paths in sorted(by_source.items()):
        if len(paths) > 1:
            named = ", ".join(str(p) for p in sorted(paths)[:3])
            raise InvalidInput(f"{len(paths)} files would be stored as the same document {source!r} ({named}), "
                               "each replacing the other: ingest their folder instead, which names each "
                               "file by its path inside it")


def _folder_documents(folder: Path, *, limit: int) -> builtins.list[Path]:
    """The text files under a folder, hidden ones skipped, and links that lead out of the
    folder too (a link to /etc/passwd is not the folder's document); TooLarge past `limit` (a
    wrong folder)."""
    found: builtins.list[Path] = []
    inside = folder.resolve()
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if (not name.startswith(".") and Path(name).suffix.lower() in TEXT_SUFFIXES
                    and (Path(root) / name).resolve().is_relative_to(inside)):
                found.append(Path(root) / name)
                if len(found) > limit:
                    raise TooLarge(f"{folder} holds more than {MAX_FILES:,} documents: ingest its subfolders one by one")
    return found


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
