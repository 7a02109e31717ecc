"""The reference application: a support agent that reads and writes all four kinds of memory."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fourfold._validate import check_identifier, check_min_score, check_text
from fourfold.agent.cases import CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.agent.distill import distill_offline, distill_with_model
from fourfold.agent.prompt import BASE_INSTRUCTIONS, PromptParts, assemble_system
from fourfold.errors import Forbidden, InvalidInput
from fourfold.longterm import MemoryInput
from fourfold.longterm.consolidate import Consolidator, ModelConsolidator, SimilarityConsolidator
from fourfold.longterm.profile import PROFILE_TOKENS
from fourfold.models.base import ChatModel, ChatResponse
from fourfold.protocols import CaseLog, Consolidating, MemoryLike, SharedCases
from fourfold.ranking import RELEVANCE_FLOOR
from fourfold.semantic.tools import PolicyTool
from fourfold.shortterm import (
    EstimateCounter,
    ExtractiveSummarizer,
    ModelSummarizer,
    Pipeline,
    Strategy,
    Summarize,
    TokenBudget,
)
from fourfold.shortterm.strategies import StrategyFn, run_strategy
from fourfold.shortterm.threads import ConversationStore, Thread
from fourfold.text import redact
from fourfold.text.problem import problem_sentence
from fourfold.types import DocHit, Episode, Recalled

__all__ = ["OpenTicket", "Reply", "Resolution", "SupportAgent", "ToolUse", "TurnReport", "customer_scope"]

#: The agent's short-term memory: a Strategy is told each request's system prompt.
ShortTerm = Strategy | StrategyFn


def customer_scope(customer_id: str) -> str:
    """The memory scope of one customer: a hard partition in every store."""
    if not isinstance(customer_id, str) or not customer_id.strip() or not customer_id.isprintable():
        raise InvalidInput(f"customer_id must be a non-empty printable string, got {customer_id!r:.60}")
    check_identifier(customer_id, what="customer id")
    return f"customer:{customer_id}"


@dataclass(frozen=True, slots=True)
class OpenTicket:
    """The ticket a customer's turns have opened: its goal (the first message), the tool actions,
    and what the customer said in it (`said`, every message: the problem may come after a greeting).

    The agent keeps it beside the customer's thread, in `Thread.extras["ticket"]`, so a turn in
    one process and the resolve in another see the same ticket.
    """

    goal: str = ""
    actions: tuple[str, ...] = ()
    said: tuple[str, ...] = ()

    @classmethod
    def of(cls, thread: Thread) -> OpenTicket:
        """The open ticket kept with this thread (an empty one if there is none)."""
        raw = thread.extras.get(_TICKET)
        if not isinstance(raw, Mapping):
            return cls()
        goal = str(raw.get("goal") or "")
        said = tuple(str(m) for m in raw.get("said") or ()) or ((goal,) if goal else ())  # one kept before `said`
        return cls(goal, tuple(str(a) for a in raw.get("actions") or ()), said)

    def kept_in(self, thread: Thread) -> Thread:
        """The thread with this ticket kept in its extras (removed when the ticket is empty)."""
        extras = {k: v for k, v in thread.extras.items() if k != _TICKET}
        if self.goal or self.actions:
            extras[_TICKET] = {"goal": self.goal, "actions": list(self.actions), "said": list(self.said)}
        return replace(thread, extras=extras)


_TICKET = "ticket"
#: The kind of the distiller's note of a resolved ticket ("Resolved: ... Fix: ...").
RESOLUTION = "resolution"


@dataclass(frozen=True, slots=True)
class ToolUse:
    name: str
    input: Mapping[str, Any]
    result: str


@dataclass(frozen=True, slots=True)
class TurnReport:
    """What a turn assembled and spent, so a user can see why the agent said what it said."""

    model: str
    memories: tuple[Recalled, ...]
    episodes: tuple[Episode, ...]
    docs: tuple[DocHit, ...]
    tool_uses: tuple[ToolUse, ...]
    input_tokens: int
    output_tokens: int
    messages_sent: int
    model_calls: int
    system_prompt: str = field(repr=False, default="")
    cases: tuple[Episode, ...] = ()  # de-identified cases from other customers' tickets
    #: The customer's profile (`LongTermMemory.profile`): the first of `memories`, whatever the question.
    profile: tuple[Recalled, ...] = ()
    dry_run: bool = False  # nothing of this turn was saved
    #: A dry run's first request as sent to the model (after the short-term strategy).
    sent: tuple[Mapping[str, Any], ...] = field(repr=False, default=())


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    report: TurnReport

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Resolution:
    episode: Episode
    remembered: tuple[str, ...]  # ids of the distilled memories
    case: Episode | None = None  # the de-identified case shared with every customer, if any


def _case_base(memory: MemoryLike, model: ChatModel, review: bool) -> SharedCases:
    """The memory's own case base (`CaseBase`), or the one the service keeps for a remote memory."""
    if isinstance(memory.episodes, CaseLog):
        return CaseBase(memory, model=model, review=review)
    served = getattr(memory, "cases", None)
    if isinstance(served, SharedCases):
        if review:
            raise InvalidInput("the service reviews the cases it is sent when it runs with --review-cases: "
                               "leave review_cases unset")
        return served
    raise InvalidInput(f"{memory!r} keeps no shared cases: pass share_cases=False")


class SupportAgent:
    """turn() assembles context from all four memories and runs the tool loop; resolve() writes back.

    A successful resolve also writes a de-identified case to the shared case base, and every
    turn reads the cases like the customer's message besides the customer's own episodes:
    what one customer's ticket taught helps the next customer. `share_cases=False` keeps
    every customer to their own memory (no case is written or read). `review_cases=True`
    holds each new case for an operator to approve or reject (`CaseBase.approve`) before any
    customer's turn can read it.

    `memory` is any `MemoryLike`: a `Memory`, or a `RemoteMemory` for `fourfold serve`. A
    remote memory keeps no conversation threads: pass `conversations` (the agent's own
    `ConversationStore`). Its cases are sent to the service (`RemoteCaseBase`), which
    de-identifies them within the tenant (with the service's model, or offline) and takes them
    only when it runs with `--review-cases`: each waits until an operator with another key
    approves it. A service without review refuses them: the resolve still completes, with
    `case` None and a RuntimeWarning.
    """

    def __init__(
        self,
        memory: MemoryLike,
        model: ChatModel,
        *,
        conversations: ConversationStore | None = None,
        short_term: ShortTerm | None = None,
        memory_k: int = 3,
        profile_tokens: int = PROFILE_TOKENS,
        episode_k: int = 3,
        doc_k: int = 2,
        case_k: int = 2,
        share_cases: bool = True,
        review_cases: bool = False,
        max_tool_rounds: int = 4,
        max_tokens: int = 1024,
        instructions: str = BASE_INSTRUCTIONS,
        min_relevance: float = RELEVANCE_FLOOR,
        policy: PolicyTool | None = None,
        consolidator: Consolidator | None = None,
    ) -> None:
        """`policy` is the facts tool offered to the model; pass `PolicyTool(facts, description=...)`
        to describe it in your own words. `consolidator` judges what a resolve remembers against
        the customer's similar memories (default: the model, with an LLM; else similarity)."""
        self.memory = memory
        self.model = model
        self.short_term = short_term or default_short_term(model)
        threads = conversations if conversations is not None else getattr(memory, "conversations", None)
        if not isinstance(threads, ConversationStore):
            raise InvalidInput(f"{memory!r} keeps no conversation threads: pass conversations=ConversationStore(...)")
        self.conversations: ConversationStore = threads
        self.policy = policy or PolicyTool(memory.facts)
        self.memory_k, self.episode_k, self.doc_k = memory_k, episode_k, doc_k
        #: The bound of the profile every prompt carries (0: none).
        self.profile_tokens = profile_tokens
        self.case_k = case_k
        #: The shared case base (None with share_cases=False): the memory's own, or the service's.
        self.cases: SharedCases | None = _case_base(memory, model, review_cases) if share_cases else None
        self.max_tool_rounds = max_tool_rounds
        self.max_tokens = max_tokens
        self.instructions = instructions
        #: The prompt floor: memories, episodes and documents less relevant than this stay out.
        self.min_relevance = check_min_score(min_relevance)
        consolidates = isinstance(memory.long_term, Consolidating)
        if consolidator is not None and not consolidates:
            raise InvalidInput(f"{memory!r} cannot consolidate on the client: leave consolidator unset")
        #: What a resolve's memories are judged by against the similar ones (None: not judged).
        self.consolidator = consolidator or (
            (ModelConsolidator(model) if model.is_llm else SimilarityConsolidator()) if consolidates else None
        )

    # -- one turn -------------------------------------------------------------------------

    def turn(self, customer_id: str, user_msg: str, *, dry_run: bool = False) -> Reply:
        """Answer one customer message, using and updating that customer's thread.

        `dry_run=True` runs the same turn (retrieval, prompt, short-term strategy, model and
        tool calls) but saves nothing: the thread, the ticket and every store stay as they
        were, and the report carries the messages that were sent. The model is still called.
        """
        scope = customer_scope(customer_id)
        # Secrets never reach the persisted thread, the ticket's episode or the model.
        user_msg = redact(check_text(user_msg, what="message", max_chars=50_000))[0]
        # A dry run saves nothing, so it need not wait for (or hold up) a live turn's lock.
        with contextlib.nullcontext() if dry_run else self.conversations.lock(scope).hold():
            thread = self.conversations.load(scope)
            parts = self.retrieve(scope, user_msg)
            system = assemble_system(parts, instructions=self.instructions)
            # The system prompt (instructions and what was retrieved) is part of the budget.
            messages = _append_user(list(thread.messages), user_msg)
            messages = run_strategy(self.short_term, messages, system=system)
            sent = tuple(messages)
            messages, responses, tool_uses = self._tool_loop(messages, system)
            actions = tuple(f"{t.name}({_args(t.input)}) -> {t.result}" for t in tool_uses)
            ticket = OpenTicket.of(thread)
            ticket = OpenTicket(ticket.goal or user_msg, ticket.actions + actions, (*ticket.said, user_msg))
            if not dry_run:
                self.conversations.save(ticket.kept_in(replace(thread, messages=tuple(messages))))
        report = TurnReport(
            model=self.model.name,
            memories=tuple(parts.memories),
            episodes=tuple(parts.episodes),
            cases=tuple(parts.cases),
            profile=tuple(parts.memories[:parts.profiled]),
            docs=tuple(parts.docs),
            tool_uses=tuple(tool_uses),
            input_tokens=sum(r.usage.input_tokens for r in responses),
            output_tokens=sum(r.usage.output_tokens for r in responses),
            messages_sent=len(messages),
            model_calls=len(responses),
            system_prompt=system,
            dry_run=dry_run,
            sent=sent if dry_run else (),
        )
        return Reply(responses[-1].text, report)

    def retrieve(self, scope: str, user_msg: str) -> PromptParts:
        """The customer's profile (their current keyed memories, whatever the message), then
        long-term memories and episodes of this customer only, the shared de-identified cases,
        and the documentation, each at least `min_relevance` relevant to the message.

        Unscoped episodes are not read: anyone with MCP or API access can write them unvetted;
        the shared cases are written only by a resolve, de-identified.
        """
        floor = self.min_relevance
        profile = self.memory.long_term.profile(scope, max_tokens=self.profile_tokens) if self.profile_tokens else []
        shown = {m.id for m in profile}
        # A resolved ticket is shown from its episode's problem and fix: not again from the
        # distiller's note of it, which a data dir of before wrote from the message as said.
        recalled = self.memory.long_term.recall(user_msg, scope=scope, k=self.memory_k + self.episode_k, min_score=floor)
        memories = [*profile, *[m for m in recalled if m.id not in shown and m.kind != RESOLUTION][:self.memory_k]]
        episodes = self.memory.episodes.similar_successes(
            user_msg, k=self.episode_k, scope=scope, include_unscoped=False, min_score=floor
        )
        cases = (self.cases.similar(user_msg, k=self.case_k, exclude_source=scope, min_score=floor)
                 if self.cases and self.case_k else [])
        docs = self.memory.docs.search(user_msg, k=self.doc_k, min_score=floor) if self.doc_k else []
        return PromptParts(memories, episodes, docs, cases, profiled=len(profile))

    def _tool_loop(
        self, messages: list[Mapping[str, Any]], system: str
    ) -> tuple[list[Mapping[str, Any]], list[ChatResponse], list[ToolUse]]:
        responses: list[ChatResponse] = []
        uses: list[ToolUse] = []
        tools = self.policy.schemas()
        for _ in range(self.max_tool_rounds + 1):
            response = self.model.chat(messages, system=system, tools=tools, max_tokens=self.max_tokens)
            responses.append(response)
            messages.append(response.as_message())
            if not response.tool_calls:
                return messages, responses, uses
            results = []
            for call in response.tool_calls:
                result = self._run_tool(call.name, call.input)
                uses.append(ToolUse(call.name, dict(call.input), result))
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": result})
            messages.append({"role": "user", "content": results})
        # Out of rounds: the tool results are answered by a note, so the thread stays valid.
        stop = ChatResponse(text=f"(stopped after {self.max_tool_rounds} tool rounds; escalating to a human)")
        responses.append(stop)
        messages.append(stop.as_message())
        return messages, responses, uses

    def _run_tool(self, name: str, tool_input: Mapping[str, Any]) -> str:
        if self.policy.handles(name):
            return self.policy.run(name, tool_input)
        return f"error: unknown tool {name!r}"

    # -- write-back -----------------------------------------------------------------------

    def resolve(self, customer_id: str, outcome: str, success: bool = True) -> Resolution:
        """Close the open ticket: record the episode and remember the distilled durable facts;
        a successful ticket also becomes a de-identified shared case (a failed one never does)."""
        scope = customer_scope(customer_id)
        # The operator's outcome goes to the distilling model too: its secrets go first.
        outcome = redact(check_text(outcome, what="outcome"))[0]
        with self.conversations.lock(scope).hold():
            thread = self.conversations.load(scope)
            ticket = OpenTicket.of(thread)
            if not ticket.goal:
                raise InvalidInput(f"customer {customer_id!r} has no open ticket to resolve")
            # A later prompt shows the problem and the fix, never the message as said: its greeting,
            # contact details and preferences (which may change) are not what the ticket was about.
            problem = problem_sentence("\n".join(ticket.said) or ticket.goal)
            episode = self.memory.episodes.record(
                goal=ticket.goal, actions=list(ticket.actions), outcome=outcome,
                success=success, scope=scope, tags=("support",), problem=problem, fix=outcome,
            )
            remembered = self._remember_distilled(scope, thread, problem, outcome) if success else ()
            case = self._share(scope, thread, episode) if success and self.cases else None
            self.conversations.save(OpenTicket().kept_in(thread))
        return Resolution(episode, remembered, case)

    def _share(self, scope: str, thread: Thread, episode: Episode) -> Episode | None:
        assert self.cases is not None
        ticket = Ticket(episode.goal, tuple(_user_texts(thread)), episode.actions, episode.outcome)
        try:
            return self.cases.add(ticket, source_scope=scope)
        except Forbidden as refused:
            # A service that does not review the cases it is sent refuses them; the ticket is
            # resolved all the same (its episode and memories are written), and the caller told.
            warnings.warn(f"the resolved ticket was not shared as a case: {refused}", RuntimeWarning, stacklevel=3)
            return None

    def _remember_distilled(self, scope: str, thread: Thread, problem: str, outcome: str) -> tuple[str, ...]:
        user_texts = _user_texts(thread)
        if self.model.is_llm:
            transcript = "\n".join(f"customer: {t}" for t in user_texts)
            distilled = distill_with_model(self.model, problem, outcome, transcript)
        else:
            distilled = distill_offline(problem, outcome, user_texts)
        items = [MemoryInput(text, scope, kind, key=key) for text, kind, key in distilled.keyed()]
        try:  # one write, so a consolidating model is asked once
            return self._write(items)
        except InvalidInput:  # an item is chatter or empty: keep the others
            pass
        ids: list[str] = []
        for item in items:
            try:
                ids.extend(self._write([item]))
            except InvalidInput:
                continue
        return tuple(ids)

    def _write(self, items: list[MemoryInput]) -> tuple[str, ...]:
        lt = self.memory.long_term
        if isinstance(lt, Consolidating):
            return tuple(r.id for r in lt.remember_many(items, consolidate=self.consolidator))
        return tuple(r.id for r in lt.remember_many(items))

    def history(self, customer_id: str) -> list[Mapping[str, Any]]:
        return list(self.conversations.load(customer_scope(customer_id)).messages)

    def open_ticket(self, customer_id: str) -> OpenTicket:
        """The customer's open ticket (empty when every ticket is resolved)."""
        return OpenTicket.of(self.conversations.load(customer_scope(customer_id)))

    def forget_customer(self, customer_id: str) -> dict[str, int]:
        """Erase a customer from every store, conversation thread and the shared cases made
        from their tickets included."""
        scope = customer_scope(customer_id)
        counts = self.memory.forget_scope(scope)
        if self.conversations is not getattr(self.memory, "conversations", None):  # the agent's own threads
            with self.conversations.lock(scope).hold():
                counts["conversations"] = int(self.conversations.delete(scope))
        return counts


def default_short_term(model: ChatModel) -> Pipeline:
    """Summarize past a high-water mark (with the model when it is an LLM), then a hard budget.

    Both count the whole request, the system prompt included: call the result with
    `system=`. The high-water mark is measured by the model's own counter (Claude's is
    Anthropic's count_tokens endpoint, cached per request); the hard budget's search uses
    the offline estimate, which needs no calls.
    """
    summarizer = ModelSummarizer(model) if model.is_llm else ExtractiveSummarizer()
    summarize = Summarize(summarizer, trigger_tokens=6000, keep_recent=6, counter=model.token_counter())
    return Pipeline(summarize, TokenBudget(12000, EstimateCounter()))


def _append_user(messages: list[Mapping[str, Any]], text: str) -> list[Mapping[str, Any]]:
    if messages and messages[-1].get("role") == "user":  # never two user turns in a row
        last = messages[-1]
        blocks = [*_blocks(last.get("content")), {"type": "text", "text": text}]
        return [*messages[:-1], {"role": "user", "content": blocks}]
    return [*messages, {"role": "user", "content": text}]


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [dict(b) for b in content or []]


def _user_texts(thread: Thread) -> list[str]:
    """The customer's own messages in the thread (text turns, not tool results)."""
    return [
        block["text"]
        for m in thread.messages if m.get("role") == "user"
        for block in _blocks(m.get("content"))
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _args(tool_input: Mapping[str, Any]) -> str:
    return ", ".join(f"{v}" if k == "key" else f"{k}={json.dumps(v)}" for k, v in tool_input.items())
