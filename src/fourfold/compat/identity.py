"""Mem0's and Zep's ids (`user_id`, `agent_id`, `run_id`) as fourfold scopes, one way everywhere.

A scope is one flat string and a hard partition; the ids name parts of it, always in the
order user, agent, run, each as `kind:value`, joined by `/`:

    user_id="alice"                               -> "user:alice"
    user_id="alice", agent_id="travel"            -> "user:alice/agent:travel"
    agent_id="travel", run_id="r1"                -> "agent:travel/run:r1"

A `/` or `%` inside an id is written `%2F` or `%25`, so every scope reads back as the ids it
was made from. Reading by ids matches every scope that holds at least those ids: a search over
`user_id="alice"` reads "user:alice" and "user:alice/agent:travel" alike, and never a scope of
another user. Scopes that are not made of ids ("customer:42") are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from urllib.parse import unquote

from fourfold._validate import check_scope
from fourfold.errors import InvalidInput

__all__ = ["Identity"]

_PREFIX: dict[str, str] = {"user_id": "user", "agent_id": "agent", "run_id": "run"}
_FIELD = {prefix: name for name, prefix in _PREFIX.items()}


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a memory belongs to: a user, an agent, a run, or any combination of them."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
                raise InvalidInput(f"{f.name} must be a non-empty string without spaces, got {value!r}")
        if self.is_empty():
            raise InvalidInput("at least one of user_id, agent_id or run_id is needed")

    @classmethod
    def of(cls, user_id: object = None, agent_id: object = None, run_id: object = None) -> Identity:
        """The identity of these ids, trimmed; an integer id is taken as its digits (as Mem0 does)."""
        def clean(value: object) -> str | None:
            if value is None:
                return None
            return (value if isinstance(value, str) else str(value)).strip()

        return cls(clean(user_id), clean(agent_id), clean(run_id))

    def is_empty(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.run_id is None

    @property
    def scope(self) -> str:
        """The scope these ids name."""
        parts = [f"{_PREFIX[f.name]}:{_escape(v)}" for f in fields(self) if (v := getattr(self, f.name)) is not None]
        checked = check_scope("/".join(parts))
        assert checked is not None  # an identity always names at least one id
        return checked

    @classmethod
    def from_scope(cls, scope: str | None) -> Identity | None:
        """The ids a scope was made of; None for a scope that is not made of ids."""
        if not scope:
            return None
        found: dict[str, str] = {}
        order = list(_PREFIX.values())
        last = -1
        for part in scope.split("/"):
            prefix, colon, value = part.partition(":")
            if not colon or prefix not in _FIELD or not value or order.index(prefix) <= last:
                return None
            last = order.index(prefix)
            found[_FIELD[prefix]] = _unescape(value)
        try:
            return cls(**found)
        except InvalidInput:
            return None

    def covers(self, other: Identity) -> bool:
        """Whether `other` holds every id this one names (it may name more)."""
        return all(
            getattr(self, f.name) is None or getattr(self, f.name) == getattr(other, f.name) for f in fields(self)
        )

    def scopes_in(self, scopes: Iterable[str | None]) -> list[str]:
        """The scopes among `scopes` whose ids include all of these, sorted."""
        found = []
        for scope in scopes:
            identity = Identity.from_scope(scope)
            if identity is not None and scope is not None and self.covers(identity):
                found.append(scope)
        return sorted(found)

    def as_dict(self) -> dict[str, str]:
        """The ids that are set, by name (how Mem0's results carry them)."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("/", "%2F")


def _unescape(value: str) -> str:
    return unquote(value)
