"""The shared case base: every successfully resolved ticket, de-identified, for every customer.

A case is an episode in `SHARED_SCOPE` of the desk's own memory (its data dir, or its tenant
in the service), so cases never cross tenants. Only a successful resolve writes one; the link
to the customer it came from is kept apart (`EpisodeLog.sources`) and used only to erase it
with that customer.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from fourfold._validate import check_scope, check_text
from fourfold.agent._ordinary import own_words
from fourfold.agent.deidentify import (
    Case,
    Evidence,
    Ticket,
    case_from_model,
    extract_case,
    problem_query,
    remask,
)
from fourfold.episodic import PENDING_SCOPE, SHARED_SCOPE
from fourfold.episodic.codec import build_episode
from fourfold.episodic.log import LogCursor
from fourfold.errors import Forbidden, InvalidInput, NotFound
from fourfold.longterm.store import DOC_KIND
from fourfold.models.base import ChatModel
from fourfold.protocols import CaseLog, MemoryLike
from fourfold.text import tokenize
from fourfold.types import Episode

__all__ = ["CUSTOMER_PREFIX", "CaseBase", "check_ticket"]

#: Scopes whose tickets count towards the shared words (see `customer_scope`).
CUSTOMER_PREFIX = "customer:"
#: Tags of a case episode: what it is, and who wrote it.
CASE_TAG = "case"
#: Tag of a case sent from outside, naming its sender (`CaseBase.add(submitted_by=...)`).
SUBMITTED_BY = "submitted-by:"
#: How many words of a statement another customer's ticket must share with it to be about
#: the same problem (`_Vocabulary.supported`).
SAME_PROBLEM = 2


class CaseBase:
    """Writes de-identified cases on resolve and finds the ones like a new ticket.

    `model` (an LLM) writes each case as a generic problem and fix; without one, or when its
    answer is unusable, the case is extracted. `min_customers` is the shared-words lever of
    extraction: a word of the customer's own text travels when the documentation, the facts or
    the operator's outcome hold it, or another customer used it about the same problem
    (`_Vocabulary.supported`; outside the statement of the problem, that many customers'
    tickets must hold it too), or, in the statement, when it is ordinary vocabulary that no
    other customer has used yet; a word that is a known name or place
    (`fourfold.text.gazetteer`), or one some customer gave as their own by its position, only
    when the company's own texts use it (`company_words`). A later ticket that shows a word to
    be nobody's problem vocabulary has it masked in the cases already written (`_remask`).
    None turns the lever off (the detector alone decides).
    """

    def __init__(
        self, memory: MemoryLike, *, model: ChatModel | None = None, min_customers: int | None = 3,
        review: bool = False,
    ) -> None:
        if not isinstance(memory.episodes, CaseLog):
            raise InvalidInput(f"{memory!r} keeps no shared cases (its episode log cannot link a case to its customer)")
        if min_customers is not None and (isinstance(min_customers, bool) or not isinstance(min_customers, int)
                                          or min_customers < 1):
            raise InvalidInput("min_customers must be a positive integer or None")
        self.memory = memory
        self._log: CaseLog = memory.episodes
        self.model = model if model is not None and model.is_llm else None
        self.min_customers = min_customers
        #: New cases wait in `PENDING_SCOPE` until an operator approves them (`approve`/`reject`).
        self.review = bool(review)
        self._vocabulary = _vocabulary(self._log, min_customers or 1)

    def deidentify(self, ticket: Ticket, *, source_scope: str | None = None) -> Case:
        """The case a ticket makes: the model's (checked), else the extracted one. The
        customer's own tickets (`source_scope`) never count as another customer's use of a word."""
        company = self.company_words() if self.min_customers is not None else None
        return self._deidentify(ticket, source_scope, company)

    def _deidentify(self, ticket: Ticket, source_scope: str | None, company: Callable[[str], bool] | None) -> Case:
        evidence = None if company is None else Evidence(
            shared=self._shared(company), company=company, personal=self._vocabulary.personal.__contains__,
            supported=partial(self._vocabulary.supported, scope=source_scope),
            others=partial(self._vocabulary.used_by_another, scope=source_scope))
        if self.model is not None:
            written = case_from_model(self.model, ticket, evidence=evidence)
            if written is not None:
                return written
        return extract_case(ticket, evidence=evidence)

    def add(self, ticket: Ticket, *, source_scope: str, submitted_by: str | None = None) -> Episode | None:
        """Write the case of a successfully resolved ticket; None when nothing generic is left.

        `submitted_by` names who sent the ticket from outside this process (the service passes
        the caller's key): such a case always waits for review, whatever `review` says, and
        `approve` refuses to let the same caller share it.
        """
        ticket, source_scope = check_ticket(ticket), _source(source_scope)
        submitter = None if submitted_by is None else _submitter_tag(submitted_by)
        # one read of the log, the documents and the facts serves the case and the rewrites
        company = self.company_words() if self.min_customers is not None else None
        case = self._deidentify(ticket, source_scope, company)
        if company is not None:
            self._remask(ticket, source_scope, company)
        if not tokenize(case.fix) or not tokenize(case.problem):
            return None
        item = {"goal": case.problem, "actions": list(case.actions), "outcome": case.fix, "success": True,
                "tags": [CASE_TAG, case.written_by, *([submitter] if submitter else [])]}
        waits = self.review or submitter is not None
        episode = replace(build_episode(item, ts=time.time()), scope=PENDING_SCOPE if waits else SHARED_SCOPE)
        self._log.insert([episode], derived_from={episode.id: source_scope})
        return episode

    def _remask(self, ticket: Ticket, source_scope: str, company: Callable[[str], bool]) -> int:
        """Mask, in the cases already written, the words this customer's ticket showed to be
        nobody's problem vocabulary; returns how many cases were rewritten.

        A word of a first ticket travels on its own merits (ordinary vocabulary no one else
        has used); when another customer then uses it about something else ("in our sandwich
        shop", about a parcel), or gives it as their own name or place, it is masked in the
        earlier cases too. A rewritten case is a new episode with the same link to its
        customer (so `forget_customer` still erases it), and the old one is erased.
        """
        # One rewrite at a time per log, in this process and in every other (service workers,
        # replicas): two at once would each find the old case, and the one that lost the race to
        # erase it would drop its masks instead of applying them to the other's copy.
        with self._vocabulary.rewriting, self._log.lock(REWRITE_LOCK).hold():
            return self._rewrite(ticket, source_scope, company)

    def _rewrite(self, ticket: Ticket, source_scope: str, company: Callable[[str], bool]) -> int:
        vocabulary = self._vocabulary
        # the cases as they are now: another rewrite, an erasure or an approval may have come
        # while this ticket's case was written (a model call), after `add` read the log
        vocabulary.update(self._log)
        touched = {s for s in tokenize(ticket.goal) if not company(s)}
        rewritten: list[tuple[str, Episode, str]] = []  # (old id, new case, its customer)
        holding = vocabulary.cases_holding(touched)
        sources = self._log.sources([e.id for e in holding]) if holding else {}
        for episode in holding:
            source = sources.get(episode.id)
            if source is None or source == source_scope:
                continue
            goal = remask(episode.goal, partial(self._nobodys, touched=touched, source=source,
                                                fix=frozenset(tokenize(episode.outcome)),
                                                context=frozenset(tokenize(episode.goal))))
            if goal != episode.goal:
                rewritten.append((episode.id, replace(episode, goal=goal, id=uuid.uuid4().hex), source))
        # The old case goes first, and its copy is written only if it was still there: when
        # another process erased it meanwhile (`forget_customer`) or rewrote it, the copy must
        # not bring it back. A crash in between loses a case, never keeps an erased one.
        kept: list[tuple[Episode, str]] = []
        for old, new, source in rewritten:
            try:
                self._log.forget(old)
            except NotFound:
                continue
            kept.append((new, source))
        if kept:
            self._log.insert([new for new, _ in kept], derived_from={new.id: source for new, source in kept})
        return len(kept)

    def _nobodys(self, stem: str, *, touched: set[str], source: str, fix: frozenset[str],
                 context: frozenset[str]) -> bool:
        """Is a word of a case (made from `source`'s ticket) now known to be nobody's problem
        vocabulary: given by some customer as their own, or used by another customer, and
        never about the same problem? A word some customer gave as their own name or place goes
        even when the case's fix holds it too (a town called "pinning", a fix "pinning the
        router"): only the fix keeps it, as the operator's word; other words of the fix stay."""
        vocabulary = self._vocabulary
        return stem in touched and (stem in vocabulary.personal or (stem not in fix and (
            vocabulary.used_by_another(stem, scope=source) and not vocabulary.supported(stem, context, scope=source))))

    def shared(self) -> list[Episode]:
        """The cases every customer's turn may read, oldest first."""
        return self.memory.episodes.episodes(scope=SHARED_SCOPE)

    def pending(self) -> list[Episode]:
        """The cases waiting for review, oldest first (none are read by a turn)."""
        return self.memory.episodes.episodes(scope=PENDING_SCOPE)

    def approve(self, case_id: str, *, reviewer: str | None = None) -> Episode:
        """Share a reviewed case; it keeps its link to its customer, for erasure.

        A case sent from outside (`add(submitted_by=...)`) is shared only by another
        `reviewer` than its sender (Forbidden otherwise); None is this process's own operator.
        """
        waiting = {e.id: e for e in self.pending()}
        if case_id not in waiting:
            raise NotFound(f"no case {case_id!r} waits for review")
        if reviewer is not None and _submitter_tag(reviewer) in waiting[case_id].tags:
            raise Forbidden("a case is approved by another key than the one that sent it: "
                            "ask an operator to review it")
        return self._log.move(case_id, from_scope=PENDING_SCOPE, to_scope=SHARED_SCOPE)

    def reject(self, case_id: str) -> None:
        """Erase a case waiting for review (NotFound when no such case waits)."""
        if case_id not in {e.id for e in self.pending()}:
            raise NotFound(f"no case {case_id!r} waits for review")
        self._log.forget(case_id)

    def similar(
        self, situation: str, *, k: int, exclude_source: str | None = None, min_score: float | None = None
    ) -> list[Episode]:
        """The k cases most like `situation` (at least `min_score` relevant), without those made
        from `exclude_source`'s tickets (that customer sees its own episodes) and without repeats."""
        vocabulary = self._vocabulary
        # Every process forms the same query: the cases and tickets other processes wrote count
        # here too (read incrementally). The documentation's and facts' words are as the last
        # case written here read them, or read once if none was.
        vocabulary.update(self._log)
        reference = vocabulary.reference[1] if vocabulary.reference[0] else self._reference_words()
        query = problem_query(situation, company=lambda stem: stem in vocabulary.operator or stem in reference)
        found = self.memory.episodes.similar_successes(
            query, k=2 * k, scope=SHARED_SCOPE, include_unscoped=False, min_score=min_score
        )
        own = self._log.sources([e.id for e in found]) if exclude_source else {}
        kept: list[Episode] = []
        seen: set[tuple[str, str]] = set()
        for episode in found:
            key = (episode.goal, episode.outcome)
            if (exclude_source is not None and own.get(episode.id) == exclude_source) or key in seen:
                continue
            seen.add(key)
            kept.append(episode)
        return kept[:k]

    def _shared(self, company: Callable[[str], bool]) -> Callable[[str], bool]:
        """Is a (stemmed) word common ground: in `min_customers` customers' tickets (their
        messages or the operators' outcomes) and given by no customer as their own name or
        place, or `company` vocabulary?"""
        common, personal = self._vocabulary.common, self._vocabulary.personal
        return lambda stem: (stem in common and stem not in personal) or company(stem)

    def company_words(self) -> Callable[[str], bool]:
        """Is a (stemmed) word the company's own vocabulary: in the documentation, the facts or
        the operators' outcomes of `min_customers` customers' tickets? Only such words let a
        customer's known name or place word travel ("reading" the town, or the verb)."""
        self._vocabulary.update(self._log)
        reference = self._reference_words()
        operator = self._vocabulary.operator
        return lambda stem: stem in operator or stem in reference

    def _reference_words(self) -> frozenset[str]:
        """Words of the desk's documentation and facts (recomputed when either changes)."""
        docs = self.memory.long_term.all(kinds=(DOC_KIND,))
        facts = self.memory.facts.list()
        fingerprint = (tuple(d.id for d in docs), tuple((f.key, f.updated_at) for f in facts))
        if fingerprint != self._vocabulary.reference[0]:
            texts = [d.text for d in docs] + [f"{f.key.replace('_', ' ')} {f.value} {f.description}" for f in facts]
            self._vocabulary.reference = (fingerprint, frozenset(w for t in texts for w in tokenize(t)))
        return self._vocabulary.reference[1]


#: The most customer messages and actions a ticket may carry.
MAX_TICKET_ITEMS = 500
#: The longest text of a ticket (a customer's message may be this long).
MAX_TICKET_CHARS = 50_000


def check_ticket(ticket: object) -> Ticket:
    """A ticket whose texts are texts (InvalidInput otherwise): it may come over HTTP."""
    if not isinstance(ticket, Ticket):
        raise InvalidInput(f"a case is made from a Ticket, not {type(ticket).__name__}")
    for what, items in (("messages", ticket.messages), ("actions", ticket.actions)):
        if not isinstance(items, tuple | list) or len(items) > MAX_TICKET_ITEMS:
            raise InvalidInput(f"a ticket's {what} must be a list of at most {MAX_TICKET_ITEMS} texts")
    def text(value: object, what: str) -> str:
        return check_text(value, what=what, max_chars=MAX_TICKET_CHARS)

    messages = tuple(text(m, "message") for m in ticket.messages if not (isinstance(m, str) and not m.strip()))
    return Ticket(text(ticket.goal, "goal"), messages, tuple(text(a, "action") for a in ticket.actions),
                  text(ticket.outcome, "outcome"))


def _source(scope: object) -> str:
    checked = check_scope(scope)
    if checked is None:
        raise InvalidInput("a case needs the scope of the customer it came from (source_scope), for erasure")
    return checked


#: The lock of `CaseBase._remask`, shared across processes through the log's database.
REWRITE_LOCK = "case-rewrite"


class _Vocabulary:
    """Words by the number of customers whose tickets hold them, kept up to date incrementally:
    each update reads only the episodes added since the last one (`EpisodeLog.since`), and
    starts over when the log was loaded afresh (an erasure)."""

    def __init__(self, min_customers: int) -> None:
        self.min_customers = min_customers
        self._lock = threading.Lock()  # the service's requests share one vocabulary per log
        #: Held while earlier cases are rewritten (`CaseBase._remask`).
        self.rewriting = threading.Lock()
        #: The words of the documentation and the facts, with what they were read from: kept
        #: here, not on a `CaseBase`, because the service makes a new one per request.
        self.reference: tuple[tuple[object, ...], frozenset[str]] = ((), frozenset())
        self._cursor: LogCursor | None = None
        self._clear()

    def _clear(self) -> None:
        #: Words of the customers' own messages (an episode's goal), and of the operators'
        #: outcomes, that `min_customers` customers' tickets hold.
        self.common: set[str] = set()
        self.operator: set[str] = set()
        #: Words that some customer's message gives as that customer's own by where they
        #: stand (a surname after "this is maria", a town after "greetings from": `own_words`):
        #: one customer's plain wording tells that a word is a name or a place for everyone.
        self.personal: set[str] = set()
        self._customers: dict[str, set[str]] = {}
        self._outcomes: dict[str, set[str]] = {}
        #: Each customer ticket's words (its scope, its goal's stems), and the tickets that
        #: hold each word: who else used a word, and about what (`supported`).
        self._tickets: list[tuple[str, frozenset[str]]] = []
        self._holding: dict[str, list[int]] = {}
        #: For each word of a customer's message or an operator's outcome, up to two of the
        #: customers whose tickets hold it: enough to tell whether anyone but X used it.
        self._users: dict[str, tuple[str, ...]] = {}
        #: The shared and pending cases, and the ids of those that hold each word
        #: (`CaseBase._remask` looks them up).
        self._cases: dict[str, Episode] = {}
        self._case_words: dict[str, set[str]] = {}

    def update(self, log: CaseLog) -> None:
        with self._lock:
            self._cursor, added, restarted = log.since(self._cursor)
            if restarted:
                self._clear()
            for episode in added:
                self._count(episode)

    def _count(self, episode: Episode) -> None:
        scope = episode.scope or ""
        if scope in (SHARED_SCOPE, PENDING_SCOPE):
            self._cases[episode.id] = episode
            for stem in tokenize(episode.goal):
                self._case_words.setdefault(stem, set()).add(episode.id)
        if scope.startswith(CUSTOMER_PREFIX):
            self._tally(episode.goal, scope, self.common, self._customers)
            stems = frozenset(tokenize(episode.goal))
            for stem in stems:
                self._holding.setdefault(stem, []).append(len(self._tickets))
            self._tickets.append((scope, stems))
            for stem in stems.union(tokenize(episode.outcome)):
                users = self._users.get(stem, ())
                if len(users) < 2 and scope not in users:
                    self._users[stem] = (*users, scope)
            self.personal.update(s for w in own_words(episode.goal) for s in tokenize(w))
            self._tally(episode.outcome, scope, self.operator, self._outcomes)

    def supported(self, stem: str, context: frozenset[str], scope: str | None) -> bool:
        """Did a customer other than `scope` use `stem` about the same problem: in a ticket that
        holds `SAME_PROBLEM` more of the `context` words (the statement it stands in)?

        A word of the problem ("thermostat", "offline") comes back in other customers'
        tickets about that problem; a town or a surname that happens to be an ordinary word
        ("sandwich") comes back, if at all, in tickets about anything else."""
        others = context - {stem}
        return any(owner != scope and len(others & stems) >= SAME_PROBLEM
                   for owner, stems in (self._tickets[i] for i in self._holding.get(stem, ())))

    def cases_holding(self, stems: set[str]) -> list[Episode]:
        """The cases whose problem holds one of `stems`, oldest first."""
        ids: set[str] = set().union(*(self._case_words.get(stem, ()) for stem in stems))
        return sorted((self._cases[i] for i in ids), key=lambda e: e.ts)

    def used_by_another(self, stem: str, scope: str | None) -> bool:
        """Does the ticket of a customer other than `scope` hold `stem` (their message or the
        operator's outcome)?"""
        return any(user != scope for user in self._users.get(stem, ()))

    def _tally(self, text: str, scope: str, common: set[str], owners_of: dict[str, set[str]]) -> None:
        for word in set(tokenize(text)) - common:
            owners = owners_of.setdefault(word, set())
            owners.add(scope)
            if len(owners) >= self.min_customers:
                common.add(word)
                del owners_of[word]


#: One vocabulary per episode log and threshold, shared by every CaseBase over that log (the
#: service makes an agent per request); gone with the log.
_VOCABULARIES: weakref.WeakKeyDictionary[CaseLog, dict[int, _Vocabulary]] = weakref.WeakKeyDictionary()
_VOCABULARIES_LOCK = threading.Lock()


def _vocabulary(log: CaseLog, min_customers: int) -> _Vocabulary:
    with _VOCABULARIES_LOCK:
        by_threshold = _VOCABULARIES.setdefault(log, {})
        return by_threshold.setdefault(min_customers, _Vocabulary(min_customers))


def _submitter_tag(who: str) -> str:
    """The tag naming a case's sender (a key id, "anonymous"); InvalidInput for an unusable name."""
    if not isinstance(who, str) or not who or len(who) > 64 or not who.isprintable() or " " in who:
        raise InvalidInput("a case's sender is a short name without spaces (a key id)")
    return SUBMITTED_BY + who
