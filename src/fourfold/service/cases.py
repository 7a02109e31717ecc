"""The shared case base over HTTP: a client's support agent shares cases through the service.

The service de-identifies: a client sends the resolved ticket as it saw it, and the tenant's
`CaseBase` writes the case (with the desk's shared words, in the tenant's shared scope, with
the link to its customer kept for erasure), exactly as an in-process agent would. No client
can put text of its own into the shared scope. Cases never leave their tenant.

This module has no `from __future__ import annotations`: FastAPI reads the routes' parameter
types, and the memory dependency is made where the routes are.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field, StrictInt, StrictStr

from fourfold.agent.deidentify import Ticket
from fourfold.memory import Memory
from fourfold.protocols import SharedCases
from fourfold.service import schemas as s

__all__ = ["CaseIn", "CaseOut", "CasesSimilarIn", "install_case_routes"]


class CaseIn(s.RequestBody):
    goal: StrictStr = Field(description="The ticket's problem, as the customer first put it.")
    messages: list[StrictStr] = Field(default_factory=list, description="The customer's own messages.")
    actions: list[StrictStr] = Field(default_factory=list, description="What was tried (tool calls).")
    outcome: StrictStr = Field(description="The operator's outcome: what fixed it.")
    source_scope: StrictStr = Field(description="The customer's scope: erasing it erases the case too.")


class CaseOut(BaseModel):
    case: s.EpisodeOut | None = Field(description="The de-identified case; null when nothing generic was left.")


class CasesSimilarIn(s.RequestBody):
    situation: StrictStr
    k: StrictInt = 2
    exclude_source: StrictStr | None = Field(None, description="Leave out the cases made from this scope's tickets.")
    min_score: float | None = None


def install_case_routes(api: APIRouter, memory: Callable[..., Any], cases: Callable[[Memory], SharedCases]) -> None:
    """POST /cases and POST /cases/similar on `api`, over the caller's tenant (`memory`, the
    routes' dependency: the router hands the route the tenant's `Memory`) and its case base
    (`cases`)."""
    mem_type = Annotated[Memory, Depends(memory)]

    @api.post("/cases", status_code=201, tags=["episodes"])
    def add_case(body: CaseIn, mem: mem_type) -> CaseOut:  # type: ignore[valid-type]
        """Share a successfully resolved ticket as a de-identified case (the service de-identifies)."""
        ticket = Ticket(body.goal, tuple(body.messages), tuple(body.actions), body.outcome)
        case = cases(mem).add(ticket, source_scope=body.source_scope)
        return CaseOut.model_validate({"case": s.episode_out(case) if case is not None else None})

    @api.post("/cases/similar", tags=["episodes"])
    def similar_cases(body: CasesSimilarIn, mem: mem_type) -> s.EpisodesOut:  # type: ignore[valid-type]
        """The shared cases most like a situation, without those made from `exclude_source`'s tickets."""
        found = cases(mem).similar(body.situation, k=body.k, exclude_source=body.exclude_source,
                                   min_score=body.min_score)
        return s.EpisodesOut.model_validate({"results": [s.episode_out(e) for e in found]})
