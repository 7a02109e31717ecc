"""The HTTP API's JSON shapes (pydantic at the edge), and conversions from the library's types.

Strict types on the way in, so the service refuses what the library refuses (`"3"` is
not a k, `42` is not a text) instead of quietly coercing it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, StrictBool, StrictInt, StrictStr

from fourfold.semantic.fact_search import SEARCH_FLOOR
from fourfold.serialize import to_json
from fourfold.types import DocHit, Episode, Fact, Recalled, Redaction, Remembered

__all__ = [
    "MAX_BATCH",
    "WHERE_HELP",
    "Actions",
    "AddIn",
    "DeletedCount",
    "DeletedOut",
    "DocHitOut",
    "DocHitsOut",
    "DocIn",
    "DocName",
    "DocSearchIn",
    "DocText",
    "EpisodeIn",
    "EpisodeOut",
    "EpisodesIn",
    "EpisodesOut",
    "ErrorBody",
    "ErrorOut",
    "FactIn",
    "FactOut",
    "FactsOut",
    "Goal",
    "HistoryOut",
    "IngestOut",
    "Key",
    "Kind",
    "LookupIn",
    "LookupOut",
    "MemoriesIn",
    "MemoriesOut",
    "MemoryOut",
    "MemoryText",
    "NewText",
    "Outcome",
    "Query",
    "RememberIn",
    "RememberedManyOut",
    "RememberedOut",
    "RequestBody",
    "ResolveIn",
    "ResolveOut",
    "ScopeCounts",
    "SearchIn",
    "SimilarIn",
    "Situation",
    "SourcesOut",
    "Success",
    "ToolDescriptionIn",
    "ToolDescriptionOut",
    "TurnIn",
    "TurnOut",
    "UpdateIn",
    "Where",
    "WhoAmIOut",
    "doc_hit_out",
    "episode_out",
    "fact_out",
    "memory_out",
    "redactions_out",
    "remembered_out",
]

Scope = StrictStr | None
#: What a `where` filter is, for the OpenAPI page and the MCP tools.
WHERE_HELP = (
    "Filter on metadata and dates: {\"product\": \"web\"}, {\"priority\": {\"$gte\": 2}}, "
    "{\"tier\": {\"$in\": [\"gold\", \"silver\"]}}, {\"$or\": [...]}, "
    "{\"created_at\": {\"$gte\": \"2026-11-01\"}}. Operators: $eq $ne $in $nin $gt $gte $lt $lte $and $or."
)

#: Items in one batch request; a larger batch is refused with 422 (send several).
MAX_BATCH = 1000


class RequestBody(BaseModel):
    """A request's JSON body: a field it does not declare is refused (422), not ignored."""

    model_config = ConfigDict(extra="forbid")


# -- fields -------------------------------------------------------------------------------
# The fields the HTTP API and the MCP tools share, declared once: a field tells a developer
# (the OpenAPI page) and a model (the tool's schema) the same, and both refuse the same input.

MemoryText = Annotated[
    StrictStr, Field(description="The memory, one self-contained sentence; secrets are redacted before storage.")
]
NewText = Annotated[
    StrictStr, Field(description="The new version, one self-contained sentence; the current version ends now.")
]
Kind = Annotated[StrictStr, Field(description="preference, fact, resolution, lesson or note (any lowercase identifier).")]
Key = Annotated[StrictStr | None, Field(description=(
    "For a single-valued attribute (contact_channel, language...): the new memory replaces "
    "the scope's current one with this key, which stays in its history."
))]
Query = Annotated[StrictStr, Field(description="What you want to know, in plain words.")]
Where = Annotated[dict[str, Any] | None, Field(description=WHERE_HELP)]
Goal = Annotated[StrictStr, Field(description="What was being attempted.")]
Actions = Annotated[list[StrictStr], Field(description="The steps taken, in order.")]
Outcome = Annotated[StrictStr, Field(description="How it ended.")]
#: Lax, for the tools: MCP clients often send a boolean as "true" (the REST body takes it strict).
Success = Annotated[bool, Field(description="True if the goal was reached.")]
_PROBLEM = "The problem in one statement, as a prompt may show it (empty: not recorded)."
_FIX = "What solved it, as a prompt may show it (empty: not recorded)."
Situation = Annotated[StrictStr, Field(description="The task or problem at hand.")]
DocText = Annotated[
    StrictStr, Field(description="The document's full text (Markdown is fine); never a path: the service reads no files.")
]
DocName = Annotated[
    StrictStr, Field(description="Its name, e.g. 'refund-policy.md'; the same text under it again changes nothing.")
]


class ErrorBody(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. invalid_input, not_found.")
    message: str = Field(description="One line for a human; never a stack trace.")


class ErrorOut(BaseModel):
    error: ErrorBody


# -- long-term ---------------------------------------------------------------------------


class RememberIn(RequestBody):
    text: MemoryText
    scope: Scope = Field(None, description="Who it belongs to, e.g. customer:42; null is your unscoped space.")
    kind: Kind = "note"
    metadata: dict[str, Any] | None = None
    key: Key = None
    valid_from: datetime | None = Field(
        None, description="When it became true (ISO 8601 or unix seconds); default: metadata occurred_at, else now."
    )


class AddIn(RequestBody):
    messages: list[dict[str, Any] | StrictStr] = Field(
        max_length=MAX_BATCH,
        description='Chat messages ({"role": "user", "content": "..."}) or plain user texts; only the user\'s are read.',
    )
    scope: Scope = Field(None, description="Whose memory this is, e.g. customer:42.")


class UpdateIn(RequestBody):
    text: NewText
    kind: StrictStr | None = Field(None, description="Default: the memory's kind.")
    metadata: dict[str, Any] | None = Field(None, description="Default: the memory's metadata.")
    valid_from: datetime | None = Field(None, description="When it became true; default: now.")


class MemoriesIn(RequestBody):
    items: list[RememberIn] = Field(
        max_length=MAX_BATCH, description=f"Written all or nothing: one invalid item refuses the batch. At most {MAX_BATCH}."
    )


class RedactionOut(BaseModel):
    kind: str
    start: int
    end: int
    placeholder: str


class RememberedOut(BaseModel):
    id: str
    redacted: list[RedactionOut] = Field(description="Secrets removed before storage (never the secret).")
    created: bool = Field(description="False when the same memory already existed.")
    text: str = Field(description="The text as stored, after redaction.")
    supersedes: list[str] = Field([], description="The version this write replaced (a keyed memory, an update).")


class RememberedManyOut(BaseModel):
    results: list[RememberedOut]


class SearchIn(RequestBody):
    query: Query
    scope: Scope = None
    k: StrictInt = 3
    kinds: list[StrictStr] | None = Field(None, description="Only these kinds; documents only when 'doc' is named.")
    where: Where = None
    min_score: float | None = None
    as_of: datetime | None = Field(None, description="Search the versions current then (ISO 8601 or unix seconds).")
    include_superseded: StrictBool = Field(False, description="Search every version, not only current ones.")


class MemoryOut(BaseModel):
    id: str
    text: str
    kind: str
    scope: str | None
    score: float
    metadata: dict[str, Any]
    created_at: float
    key: str | None = Field(None, description="The key its versions share; null for an independent memory.")
    valid_from: float = Field(description="Unix seconds: when this version became true.")
    valid_to: float | None = Field(None, description="When a newer version replaced it; null while current.")


class MemoriesOut(BaseModel):
    results: list[MemoryOut]


class DeletedOut(BaseModel):
    deleted: str


class DeletedCount(BaseModel):
    deleted: int


class ScopeCounts(BaseModel):
    memories: int
    episodes: int
    cases: int = Field(0, description="Shared cases derived from the scope's tickets, erased with it.")
    conversations: int


# -- episodes ----------------------------------------------------------------------------


class EpisodeIn(RequestBody):
    goal: Goal
    actions: Actions
    outcome: Outcome
    success: Annotated[Success, Strict()]
    scope: Scope = None
    tags: list[StrictStr] = Field(default_factory=list)
    problem: StrictStr = Field("", description=_PROBLEM)
    fix: StrictStr = Field("", description=_FIX)


class EpisodesIn(RequestBody):
    items: list[EpisodeIn] = Field(max_length=MAX_BATCH, description=f"At most {MAX_BATCH} episodes.")


class SimilarIn(RequestBody):
    situation: Situation
    k: StrictInt = 3
    scope: Scope = Field(None, description="This scope's successes plus your unscoped, shared ones.")
    include_unscoped: StrictBool = Field(True, description="False keeps to the scope's own episodes.")
    min_score: float | None = None


class EpisodeOut(BaseModel):
    id: str
    goal: str
    actions: list[str]
    outcome: str
    success: bool
    ts: float
    scope: str | None
    tags: list[str]
    score: float | None = Field(None, description="Relevance in [0, 1] to the search's situation; null outside a search.")
    problem: str = Field("", description=_PROBLEM)
    fix: str = Field("", description=_FIX)


class EpisodesOut(BaseModel):
    results: list[EpisodeOut]


# -- facts -------------------------------------------------------------------------------


class FactIn(RequestBody):
    value: Any = Field(description="Any JSON value.")
    description: StrictStr | None = Field(None, description="null keeps the current description.")


class FactOut(BaseModel):
    key: str
    value: Any
    description: str
    updated_at: float


class FactsOut(BaseModel):
    facts: list[FactOut]


class ToolDescriptionIn(RequestBody):
    description: StrictStr | None = Field(description="What the lookup_policy tool is for; null restores the default.")


class ToolDescriptionOut(BaseModel):
    description: str


class HistoryEntry(BaseModel):
    value: Any
    replaced_at: float


class HistoryOut(BaseModel):
    history: list[HistoryEntry]


class FactSearchIn(RequestBody):
    query: Query
    k: StrictInt = 3
    min_score: float = Field(SEARCH_FLOOR, description="The least relevance a fact found has, in [0, 1].")


class LookupIn(RequestBody):
    key: Any = Field(description="Anything: an unknown or invalid key answers UNKNOWN, not an error.")


class LookupOut(BaseModel):
    text: str


# -- documents ---------------------------------------------------------------------------


class DocIn(RequestBody):
    text: DocText
    source: DocName
    scope: Scope = None


class IngestOut(BaseModel):
    ids: list[str]
    chunks: int


class DocSearchIn(RequestBody):
    query: Query
    k: StrictInt = 5
    scope: Scope = None
    source: StrictStr | None = None
    min_score: float | None = None


class DocHitOut(BaseModel):
    id: str
    text: str
    source: str
    position: int
    score: float
    heading: str


class DocHitsOut(BaseModel):
    results: list[DocHitOut]


class SourcesOut(BaseModel):
    sources: list[str]


# -- agent -------------------------------------------------------------------------------


class TurnIn(RequestBody):
    customer_id: StrictStr
    message: StrictStr


class ToolUseOut(BaseModel):
    name: str
    input: dict[str, Any]
    result: str


class ReportOut(BaseModel):
    model: str
    memories: list[MemoryOut]
    episodes: list[EpisodeOut]
    cases: list[EpisodeOut] = Field(default_factory=list, description="De-identified cases of other customers' tickets.")
    docs: list[DocHitOut]
    tool_uses: list[ToolUseOut]
    input_tokens: int
    output_tokens: int
    messages_sent: int
    model_calls: int


class TurnOut(BaseModel):
    text: str
    report: ReportOut


class ResolveIn(RequestBody):
    customer_id: StrictStr
    outcome: StrictStr
    success: StrictBool = True


class ResolveOut(BaseModel):
    episode: EpisodeOut
    remembered: list[str]
    case: EpisodeOut | None = Field(None, description="The de-identified case shared with every customer, if any.")


class WhoAmIOut(BaseModel):
    tenant: str
    auth: Literal["key", "anonymous"]


# -- conversions -------------------------------------------------------------------------


def redactions_out(redactions: tuple[Redaction, ...]) -> list[dict[str, Any]]:
    return list(to_json(redactions))


def remembered_out(r: Remembered) -> dict[str, Any]:
    return dict(to_json(r))


def memory_out(r: Recalled) -> dict[str, Any]:
    return {**to_json(r), "score": float(r.score)}  # a numpy score as a JSON number


def episode_out(ep: Episode) -> dict[str, Any]:
    return dict(to_json(ep))


def fact_out(f: Fact) -> dict[str, Any]:
    return dict(to_json(f))


def doc_hit_out(h: DocHit) -> dict[str, Any]:
    return dict(to_json(h))

