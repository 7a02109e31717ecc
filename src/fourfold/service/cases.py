"""The shared case base over HTTP: a client's support agent shares cases through the service.

A case sent here is text that every customer's agent of the tenant may later read, so it is
held to three rules: it comes from a successfully resolved ticket (`success` is true), the
service de-identifies it (the tenant's `CaseBase` writes the case, with the desk's shared
words, with the link to its customer kept for erasure), and it waits for an operator's
review. The service takes cases only when it runs with `--review-cases`; otherwise the route
refuses (403). A waiting case names the key that sent it, and only another key may approve it
(`POST /v1/cases/{id}/review`). Cases never leave their tenant. The service's own agent
(`/v1/agent/resolve`) writes cases from its own resolves, not through this route.

This module has no `from __future__ import annotations`: FastAPI reads the routes' parameter
types, and the memory dependency is made where the routes are.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field, StrictBool, StrictInt, StrictStr

from fourfold.agent.cases import CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.errors import Forbidden, InvalidInput
from fourfold.memory import Memory
from fourfold.service import schemas as s

__all__ = ["CaseIn", "CaseOut", "CasesSimilarIn", "install_case_routes"]


class CaseIn(s.RequestBody):
    goal: StrictStr = Field(description="The ticket's problem, as the customer first put it.")
    messages: list[StrictStr] = Field(default_factory=list, description="The customer's own messages.")
    actions: list[StrictStr] = Field(default_factory=list, description="What was tried (tool calls).")
    outcome: StrictStr = Field(description="The operator's outcome: what fixed it.")
    success: StrictBool = Field(description="Whether the ticket was resolved; only a success becomes a case.")
    source_scope: StrictStr = Field(description="The customer's scope: erasing it erases the case too.")


class CaseOut(BaseModel):
    case: s.EpisodeOut | None = Field(description="The de-identified case; null when nothing generic was left.")


class CasesSimilarIn(s.RequestBody):
    situation: StrictStr
    k: StrictInt = 2
    exclude_source: StrictStr | None = Field(None, description="Leave out the cases made from this scope's tickets.")
    min_score: float | None = None


def install_case_routes(
    api: APIRouter, memory: Callable[..., Any], cases: Callable[[Memory], CaseBase], *,
    caller_id: Callable[..., str], review: bool,
) -> None:
    """POST /cases and POST /cases/similar on `api`, over the caller's tenant (`memory`, the
    routes' dependency: the router hands the route the tenant's `Memory`) and its case base
    (`cases`). `caller_id` names the sender (a dependency); `review`: whether the service
    reviews cases, without which POST /cases refuses."""
    mem_type = Annotated[Memory, Depends(memory)]
    who_type = Annotated[str, Depends(caller_id)]

    @api.post("/cases", status_code=201, tags=["episodes"], responses={403: {"description": "The service does not review cases."}})
    def add_case(body: CaseIn, mem: mem_type, who: who_type) -> CaseOut:  # type: ignore[valid-type]
        """Send a successfully resolved ticket for sharing: the service de-identifies it, and the
        case waits until an operator with another key approves it."""
        if not review:
            raise Forbidden("this service takes no cases through the API: run it with --review-cases, "
                            "so that each case waits for an operator's approval")
        if not body.success:
            raise InvalidInput("only a successfully resolved ticket becomes a case (success is false)")
        ticket = Ticket(body.goal, tuple(body.messages), tuple(body.actions), body.outcome)
        case = cases(mem).add(ticket, source_scope=body.source_scope, submitted_by=who)
        return CaseOut.model_validate({"case": s.episode_out(case) if case is not None else None})

    @api.post("/cases/similar", tags=["episodes"])
    def similar_cases(body: CasesSimilarIn, mem: mem_type) -> s.EpisodesOut:  # type: ignore[valid-type]
        """The shared cases most like a situation, without those made from `exclude_source`'s tickets."""
        found = cases(mem).similar(body.situation, k=body.k, exclude_source=body.exclude_source,
                                   min_score=body.min_score)
        return s.EpisodesOut.model_validate({"results": [s.episode_out(e) for e in found]})
