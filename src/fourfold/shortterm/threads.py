"""Conversation threads (short-term memory) that survive the process: a returning customer continues."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fourfold._locks import FileLock
from fourfold._validate import check_scope
from fourfold.errors import InvalidInput, StoreCorrupt
from fourfold.text import redact

__all__ = ["ConversationStore", "Thread"]

_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Thread:
    """A customer's message list plus the open ticket's goal and actions so far."""

    scope: str
    messages: tuple[Mapping[str, Any], ...] = ()
    ticket_goal: str = ""
    ticket_actions: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)


class ConversationStore:
    """One JSON file per scope, replaced atomically (temp file, fsync, rename) on each save."""

    def __init__(self, directory: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> None:
        self.directory = Path(directory)
        self._lock_timeout = lock_timeout

    def _path(self, scope: str) -> Path:
        if check_scope(scope) is None:
            raise InvalidInput("a conversation thread needs a scope")
        digest = hashlib.blake2b(scope.encode("utf-8"), digest_size=16).hexdigest()
        return self.directory / f"{digest}.json"

    def lock(self, scope: str) -> FileLock:
        """The lock a turn holds so two processes never interleave one customer's thread."""
        return FileLock(self._path(scope).with_suffix(".lock"), timeout=self._lock_timeout)

    def load(self, scope: str) -> Thread:
        path = self._path(scope)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Thread(scope)
        except (ValueError, UnicodeDecodeError) as exc:
            raise StoreCorrupt(f"conversation file {path} is damaged ({exc}); move it aside to start a new thread") from None
        if raw.get("format", 0) > _FORMAT:
            raise StoreCorrupt(f"{path} was written by a newer fourfold: upgrade fourfold")
        return Thread(
            scope=raw["scope"],
            messages=tuple(raw.get("messages", ())),
            ticket_goal=raw.get("ticket_goal", ""),
            ticket_actions=tuple(raw.get("ticket_actions", ())),
            extras=raw.get("extras", {}),
        )

    def save(self, thread: Thread) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(thread.scope)
        payload = {
            "format": _FORMAT,
            "scope": thread.scope,
            "messages": [_redacted(m) for m in thread.messages],
            "ticket_goal": thread.ticket_goal,
            "ticket_actions": list(thread.ticket_actions),
            "extras": dict(thread.extras),
        }
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(payload, f, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def delete(self, scope: str) -> bool:
        """Remove a scope's thread from disk, with any half-written save; True if there was one."""
        path = self._path(scope)
        path.with_suffix(".tmp").unlink(missing_ok=True)  # a crashed save holds the text too
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def scopes(self) -> Sequence[str]:
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append(json.loads(path.read_text(encoding="utf-8"))["scope"])
            except (ValueError, KeyError, UnicodeDecodeError):
                continue
        return found


def _redacted(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message with secrets redacted from its text (strings, text blocks, tool results)."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": redact(content)[0]}
    if isinstance(content, list):
        blocks = []
        for block in content:
            if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                block = {**block, "text": redact(block["text"])[0]}
            elif isinstance(block, Mapping) and isinstance(block.get("content"), str):
                block = {**block, "content": redact(block["content"])[0]}
            blocks.append(block)
        return {**message, "content": blocks}
    return dict(message)
