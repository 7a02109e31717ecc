"""Conversation threads (short-term memory) that survive the process: a returning customer continues."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fourfold._validate import check_scope
from fourfold.errors import InvalidInput, StoreCorrupt
from fourfold.stores.database import Database, Lock
from fourfold.text.redact import redact_json

__all__ = ["THREAD_FORMAT", "ConversationStore", "Thread", "thread_from_payload", "thread_payload"]

#: Format 2 keeps what an application adds to a thread (the support agent's open ticket) in
#: `extras`; format 1 had the ticket as top-level fields, read into `extras["ticket"]`.
THREAD_FORMAT = 2


@dataclass(frozen=True, slots=True)
class Thread:
    """A scope's message list, plus what the application keeps beside it (JSON, in `extras`)."""

    scope: str
    messages: tuple[Mapping[str, Any], ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)


class ConversationStore:
    """Threads in the `threads` table of the data dir's database, one row per scope.

    A turn holds the scope's lock (`Database.lock`: a lock file beside a SQLite database, an
    advisory lock on PostgreSQL) from load to save, so two processes, on one machine or on
    several, never interleave one customer's thread.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    def lock(self, scope: str) -> Lock:
        """The lock a turn holds so two processes never interleave one customer's thread."""
        return self.db.lock(f"thread/{_checked(scope)}")

    def load(self, scope: str) -> Thread:
        with self.db.read() as conn:
            row = conn.execute("SELECT payload FROM threads WHERE scope = ?", (_checked(scope),)).fetchone()
        if row is None:
            return Thread(scope)
        try:
            raw = json.loads(row[0])
        except ValueError as exc:
            raise StoreCorrupt(f"the conversation thread of {scope!r} in {self.db.where} is damaged ({exc}); "
                               "delete it to start a new thread") from None
        if raw.get("format", 0) > THREAD_FORMAT:
            raise StoreCorrupt(f"the thread of {scope!r} was written by a newer fourfold: upgrade fourfold")
        return thread_from_payload(raw)

    def save(self, thread: Thread) -> None:
        payload = json.dumps(thread_payload(thread), ensure_ascii=False)
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO threads (scope, payload, updated_at) VALUES (?, ?, ?) ON CONFLICT (scope)"
                " DO UPDATE SET payload = excluded.payload, updated_at = excluded.updated_at",
                (_checked(thread.scope), payload, time.time()),
            )

    def delete(self, scope: str) -> bool:
        """Erase a scope's thread; True if there was one."""
        with self.db.write() as conn:
            removed = conn.execute("DELETE FROM threads WHERE scope = ?", (_checked(scope),)).rowcount
        if removed:
            self.db.erased()
        return bool(removed)

    def scopes(self) -> Sequence[str]:
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT scope FROM threads ORDER BY scope")]


def thread_payload(thread: Thread) -> dict[str, Any]:
    """A thread as JSON (its messages redacted): what is stored, and what an export holds."""
    return {
        "format": THREAD_FORMAT,
        "scope": thread.scope,
        "messages": [_redacted(m) for m in thread.messages],
        "extras": redact_json(dict(thread.extras))[0],
    }


def thread_from_payload(raw: Mapping[str, Any]) -> Thread:
    """The thread a stored row or an export line holds, in any format this version can read."""
    extras = dict(raw.get("extras") or {})
    if raw.get("ticket_goal") or raw.get("ticket_actions"):  # format 1
        extras.setdefault("ticket", {"goal": raw.get("ticket_goal") or "",
                                     "actions": list(raw.get("ticket_actions") or ())})
    return Thread(scope=raw["scope"], messages=tuple(raw.get("messages", ())), extras=extras)


def _checked(scope: str) -> str:
    if check_scope(scope) is None:
        raise InvalidInput("a conversation thread needs a scope")
    return scope


def _redacted(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message with secrets redacted from every string in it (text, text blocks, tool
    calls' inputs and results), object keys included, at any depth."""
    cleaned: dict[str, Any] = redact_json(dict(message))[0]
    return cleaned
