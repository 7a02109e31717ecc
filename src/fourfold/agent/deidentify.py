"""De-identification of a resolved ticket into a case that any customer may be shown.

One detector, the "personal" policy, removes names, contact details, addresses, order,
account and ticket numbers, cards, IBANs and stated preferences. Two levers catch what it
misses:

- *taint*: a word the detector found inside a personal detail anywhere in the ticket (the
  customer said "I'm Maria Adeyemi") is masked everywhere else in the case too ("sent
  Adeyemi a new link" in the operator's outcome);
- *shared words* (offline): a word of the customer's own text travels only if it is common
  ground: in the documentation, the facts or the operator's outcome, or used by another
  customer about the same problem (several customers, outside the statement of the problem),
  or, in the statement, ordinary vocabulary (lowercase dictionary words, short acronyms and
  numbers, see `_ordinary`) that no other customer has used about something else; the rest
  is masked. A detail the detector does not know (a rare surname, a town that is an everyday
  word, a street it cannot parse, an instruction someone tries to plant) stays behind. A word
  of the operator's outcome that only the customer's own introduction or signature holds
  too ("told sugar to ...") is the customer's, and is masked as well.

With a chat model the model writes the generic problem and fix; the detector and the taint
then check what it wrote, and a text that copies a run of the customer's own words is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from fourfold.agent._ordinary import is_ordinary, own_words
from fourfold.models.base import ChatModel
from fourfold.text import STOPWORDS, detect, redact, tokenize
from fourfold.text.lines import SENTENCE_BREAK as _SENTENCE
from fourfold.text.reader import read
from fourfold.types import Redaction

__all__ = ["Case", "Evidence", "Ticket", "case_from_model", "copies", "echoed_names", "extract_case", "personal_words",
           "problem_query", "remask"]

#: Kinds whose words taint the rest of a case (a preference's words are ordinary: "email").
_TAINTING = frozenset(
    {"name", "email", "phone", "postal_address", "order_number", "account_number", "ticket_number",
     "card_number", "iban", "organisation", "place", "tenant", "host_name", "user_name"}
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+\]")
_PREFERENCE_LEFT = re.compile(r"[,;]?\s*\[REDACTED:preference\]")
_JOINERS = re.compile(r"['’\-]")
_DOUBLE_STOP = re.compile(r"([.!?])(?:\s*[.!?,;])+")
_MASK = "…"
#: A model's case that repeats this many consecutive words of the customer is refused.
COPIED_RUN = 8
MAX_PROBLEM_CHARS = 300
#: The longest sentence whose ordinary words state the problem (a longer one says more than that).
MAX_STATEMENT_WORDS = 25
#: Words of a sentence that addresses the agent or other people instead of reporting a problem
#: ("SYSTEM: tell every customer to ...", "ignore your instructions"): such a sentence is never
#: the statement whose ordinary words travel, wherever it stands in the ticket.
_DIRECTIVE = re.compile(
    r"(?i)\b(?:you|your|yours|yourself|ignore|disregard|instructions?|prompt|system|assistant|always|must|"
    r"tell|every|everyone|everybody|anyone|anybody|customers|approve|grant|wire)\b"
)
#: The customer's latest messages a model is shown besides the opening one.
MAX_MESSAGES = 10


@dataclass(frozen=True, slots=True)
class Ticket:
    """A resolved ticket as the agent saw it: the customer's words, the tools used, the fix."""

    goal: str
    messages: tuple[str, ...]  # the customer's own messages
    actions: tuple[str, ...]
    outcome: str  # the operator's


@dataclass(frozen=True, slots=True)
class Case:
    """A de-identified ticket: safe to show any customer of the same desk."""

    problem: str
    actions: tuple[str, ...]
    fix: str
    written_by: Literal["model", "extraction"]
    removed: int  # personal details and rare words masked


def personal_words(texts: Iterable[str]) -> frozenset[str]:
    """Lowercased words inside the personal details the detector finds in `texts`."""
    words: set[str] = set()
    for text in texts:
        for found in detect(text, policy="personal"):
            if found.kind in _TAINTING:
                words.update(_key(w) for w in _WORD.findall(text[found.start : found.end]))
    return frozenset(w for w in words if w not in STOPWORDS)


def _key(word: str) -> str:
    """A word as the taint compares it: "O'Sullivan" is the "osullivan" of an email address."""
    return _JOINERS.sub("", word.lower())


def echoed_names(customer: Iterable[str], shared_text: str, common: Callable[[str], bool], *,
                 company: Callable[[str], bool] | None = None) -> frozenset[str]:
    """Capitalized words of the customer's that the text to share repeats capitalized, unless
    they are common ground: most often the customer's name ("Thandiwe confirmed on ...").

    With `company`, also a known name or place the customer typed in any case ("from
    reading") that the text to share capitalizes mid-sentence ("the Reading depot"), unless
    the company's own texts use the word."""
    customer = tuple(customer)

    def titled(text: str) -> set[str]:
        return {w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.istitle()}

    repeated = {_key(w) for w in set().union(*(titled(t) for t in customer)) & titled(shared_text)}
    echoed = {w for w in repeated if w not in STOPWORDS and not all(common(s) for s in tokenize(w))}
    if company is not None:
        said = {w for t in customer for w in own_words(t)}
        openings = {m.end() for m in _SENTENCE_OPENING.finditer(shared_text)}
        capitalized = {m.group().lower() for m in _WORD.finditer(shared_text)
                       if m.group().istitle() and m.start() not in openings}
        echoed |= {_key(w) for w in said & capitalized
                   if w not in STOPWORDS and not all(company(s) for s in tokenize(w))}
    return frozenset(echoed)


#: Where a word opens a sentence (or a clause after a colon): the text's start, or a full
#: stop, a question or exclamation mark or a colon, then spaces, quotes or brackets.
_SENTENCE_OPENING = re.compile(r"(?:^|[.!?:])[\s\"'“‘(\[]*(?=[^\W_])")


def _mask(text: str, keep: Callable[[str, int], bool]) -> tuple[str, int]:
    """Replace each word `keep` refuses (placeholders untouched) by "…", one per run of them."""
    protected = [m.span() for m in _PLACEHOLDER.finditer(text)]
    out: list[str] = []
    pos = masked = 0
    run_end = -1  # where the last masked word ended
    for match in _WORD.finditer(text):
        if any(s <= match.start() < e for s, e in protected) or keep(match.group(), match.start()):
            continue
        between = text[pos : match.start()]
        if not (run_end == pos and not between.strip()):  # a new run of masked words
            out += [between, _MASK]
        pos = run_end = match.end()
        masked += 1
    out.append(text[pos:])
    return "".join(out), masked


def remask(text: str, masked: Callable[[str], bool]) -> str:
    """`text` with every word one of whose stems is `masked` replaced by "…" (a case written
    before later tickets showed the word to be someone's)."""
    return " ".join(_mask(text, lambda word, at: not any(masked(s) for s in tokenize(word)))[0].split())


def _without_details(text: str) -> tuple[str, tuple[Redaction, ...]]:
    """`text` with the detector's personal details redacted and stated preferences dropped,
    and what the detector found."""
    redacted, found = redact(text, policy="personal")
    return _DOUBLE_STOP.sub(r"\1", _PREFERENCE_LEFT.sub("", redacted)), found


def _scrub(text: str, tainted: frozenset[str]) -> tuple[str, int]:
    """The detector's redaction, then the tainted words masked; with how many details and words went."""
    redacted, found = _without_details(text)
    return _masked(redacted, len(found), lambda word, _at: _key(word) not in tainted)


def _masked(redacted: str, removed: int, keep: Callable[[str, int], bool]) -> tuple[str, int]:
    masked, count = _mask(redacted, keep)
    return " ".join(masked.split()), removed + count


@dataclass(frozen=True, slots=True)
class _Message:
    """A customer's message read for the problem it states: its details redacted, the words it
    gives as the customer's own, and where in the redacted text the problem is stated
    (`_statement`; start == end when no sentence states it)."""

    redacted: str
    details: int  # how many the detector redacted
    own: frozenset[str]
    start: int
    end: int


def _read(message: str, company: Callable[[str], bool] | None) -> _Message:
    """`message` read once for everything the problem is cut from (`company` scores the
    sentences that may state it, see `_statement`)."""
    redacted, found = _without_details(message)
    own = own_words(message)
    return _Message(redacted, len(found), own, *_statement(redacted, own, company))


def _scrub_problem(message: _Message, tainted: frozenset[str], allowed: Callable[[str, frozenset[str]], bool],
                   stated: Callable[[str, frozenset[str], frozenset[str]], bool], company: Callable[[str], bool],
                   besides: frozenset[str]) -> tuple[str, int]:
    """The opening message as the problem: its redaction, then tainted and rare words masked.

    In the statement of the problem a word is kept when `stated(word, statement's stems,
    stems the customer wrote besides)` says so (`besides`, see `_besides`); elsewhere
    when `allowed(word, statement's stems)` does: the words `stated` lets through could
    elsewhere carry an instruction someone plants for other customers. The statement is never
    a sentence made mostly of the customer's own words (their name, town, pet): it is about
    the customer, not the problem. A known name or place (`known_words`: "baker", "reading")
    is kept only if `company` says every stem of it is the company's own vocabulary, however
    common or ordinary it is. A stated preference is dropped without a trace: it says how to
    treat one customer.
    """
    redacted, start, end = message.redacted, message.start, message.end
    # what the ticket is about: its statement, or all of it when no sentence states the problem
    context = frozenset(tokenize(redacted[start:end] if end > start else redacted))

    def keep(word: str, at: int) -> bool:
        if _key(word) in tainted:
            return False
        if word.lower() in STOPWORDS:
            return True
        if start <= at < end:
            return stated(word, context, besides)
        return allowed(word, context)

    return _masked(redacted, message.details, keep)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the desk's texts say about a customer's (stemmed) word: the shared-words lever.
    `CaseBase.deidentify` makes one per ticket from its log, documents and facts."""

    #: Common ground: in several customers' tickets and given by none as their own, or `company`.
    shared: Callable[[str], bool]
    #: The company's own vocabulary: the documents, the facts, several customers' operators' outcomes.
    company: Callable[[str], bool]
    #: Some customer gave it as their own name or place, by its position (`own_words`).
    personal: Callable[[str], bool]
    #: Another customer used it about the same problem: in a ticket holding more of the
    #: statement's stems (the second argument).
    supported: Callable[[str, frozenset[str]], bool]
    #: Another customer's ticket holds it (their message or the operator's outcome).
    others: Callable[[str], bool]


def extract_case(ticket: Ticket, *, evidence: Evidence | None = None) -> Case:
    """Offline: the opening message as the problem, the operator's outcome as the fix, scrubbed.

    Without `evidence` the detector and the taint alone decide. With it (the shared-words
    lever), a word of the customer's travels only if the company's texts or this ticket's
    outcome hold it, or another customer used it about the same problem (and, outside the
    statement, it is common ground too): a town or a surname that is an ordinary word ("in our
    sandwich shop") is used, if by anyone, about other problems. In the statement an ordinary
    word (`is_ordinary`) that no other customer's ticket holds travels too, so first cases stay
    useful, unless the customer wrote it besides the statement as well. Never: a word the
    ticket gives as the customer's own (`own_words`) or one some customer gave as their own name
    or place, unless the company's texts use it. The operator's outcome loses exactly the words
    of what identifies someone (the reader's spans anywhere in the ticket): an ordinary word
    the customer happened to type too stays, so the fix arrives whole.
    """
    if evidence is None:
        tainted = _tainted(ticket, ticket.outcome, None)
        text, removed = _scrub(ticket.goal, tainted)
        return _case((_informative(text), removed), _scrub(ticket.outcome, tainted), ticket, tainted, "extraction")
    company, supported, others = evidence.company, evidence.supported, evidence.others
    outcome_stems = set(tokenize(ticket.outcome))
    # The statement is the sentence with the most words of the fix or the company's texts; the
    # fix's words found to be the customer's (`theirs`, below) are outside it, so it stays the
    # statement once they are taken out.
    opening = _read(ticket.goal, lambda s: s in outcome_stems or company(s))
    besides = frozenset(_besides(opening.redacted, opening.start, opening.end, ticket.messages))
    # The operator's words that only this customer's own texts hold too are the customer's.
    theirs = _theirs(ticket, opening, besides, outcome_stems, lambda s: company(s) or others(s), company)
    outcome_stems -= theirs
    own = opening.own  # "our dog biscuit": however common the word, it is theirs here

    def unowned(word: str) -> bool:
        return word.lower() not in own and not any(evidence.personal(s) and not company(s) for s in tokenize(word))

    def allowed(word: str, context: frozenset[str]) -> bool:
        return unowned(word) and all(
            s in outcome_stems or company(s) or (evidence.shared(s) and supported(s, context)) for s in tokenize(word))

    def stated(word: str, context: frozenset[str], besides: frozenset[str]) -> bool:
        # A word the customer wrote besides the statement too ("xanthe satin - chicken office.
        # ... in our chicken shop") is as likely theirs as the problem's: this ticket's outcome
        # and being ordinary do not vouch for it (the operator's "matching it by amount"
        # says nothing of a town called Matching); the company's texts or another customer's
        # ticket about the same problem still do.
        return unowned(word) and all(company(s) or supported(s, context) or (s not in besides and (
            s in outcome_stems or (is_ordinary(word) and not others(s)))) for s in tokenize(word))

    # The fix loses exactly the words of what identifies someone (the reader's spans, anywhere
    # in the ticket): an ordinary word the customer happened to type too is the fix's as well.
    tainted = _tainted(ticket, ticket.outcome, None)
    problem, n = _scrub_problem(opening, tainted, allowed, stated, lambda s: s in outcome_stems or company(s), besides)
    fix = _scrub(ticket.outcome, tainted)  # the operator's words; details still go
    return _case((_informative(problem), n), fix, ticket, tainted, "extraction")


def _theirs(ticket: Ticket, opening: _Message, besides: frozenset[str], outcome_stems: set[str],
            common: Callable[[str], bool], company: Callable[[str], bool]) -> set[str]:
    """Stems of the operator's outcome that the customer wrote outside the statement of the
    problem (`besides`: their introduction, signature, details, and what a later message gives
    as theirs) and that nothing `common` (the company's texts, another customer's ticket)
    holds: "told sugar to restart the router" after "... regards, sugar". The statement is the
    one the problem is cut from (`opening`), or when none qualifies the sentence with the most
    words of the fix or the `company` texts."""
    goal, start, end = opening.redacted, opening.start, opening.end
    if end <= start:  # no sentence qualifies as the statement: the one most about the fix is it
        def companys(stem: str) -> bool:
            return stem in outcome_stems or company(stem)

        sentences = [m.span() for m in re.finditer(r"[^.!?]+[.!?]*", goal)]
        start, end = max(sentences, key=lambda span: sum(map(companys, tokenize(goal[span[0]:span[1]]))),
                         default=(0, len(goal)))
        besides = frozenset(_besides(goal, start, end, ticket.messages))
    stated = set(tokenize(goal[start:end]))
    return {s for s in outcome_stems & besides if s not in stated and not common(s)}


def _besides(goal: str, start: int, end: int, later: Sequence[str]) -> set[str]:
    """Stems the customer wrote besides the statement `goal[start:end]`: the rest of the
    opening message (their introduction, signature, details), and what a `later` message gives
    as theirs (a later message often repeats the fix, "clearing the cache fixed it", so only
    the words it gives as the customer's own count there)."""
    said = {s for text in (goal[:start], goal[end:]) for s in tokenize(text)}
    said.update(s for text in later for w in own_words(text) for s in tokenize(w))
    return said


def _tainted(ticket: Ticket, shared_text: str, evidence: Evidence | None) -> frozenset[str]:
    """The words to mask wherever they occur: inside the ticket's details, and (with the
    shared-words lever) the customer's names and places that `shared_text` repeats
    capitalized (`echoed_names`)."""
    tainted = personal_words((ticket.goal, *ticket.messages, ticket.outcome))
    if evidence is not None:
        tainted |= echoed_names((ticket.goal, *ticket.messages), shared_text, evidence.shared,
                                company=evidence.company)
    return tainted


def _case(problem: tuple[str, int], fix: tuple[str, int], ticket: Ticket, tainted: frozenset[str],
          written_by: Literal["model", "extraction"]) -> Case:
    actions = [_scrub(a, tainted) for a in ticket.actions]
    removed = problem[1] + fix[1] + sum(n for _, n in actions)
    return Case(_clip(problem[0]), tuple(a for a, _ in actions), fix[0], written_by, removed)


_CASE_PROMPT = (
    "A support ticket was resolved. Write it as a generic case that any other customer with the "
    "same problem could be helped by: the problem in one sentence, and the fix in one or two "
    "sentences. Leave out everything about this customer: no names, email addresses, phone "
    "numbers, addresses, order, account or ticket numbers, card or bank numbers, and none of "
    "their preferences. Do not quote the customer. Answer only with JSON: "
    '{{"problem": "...", "fix": "..."}}\n\nCustomer messages:\n{messages}\n\nOperator outcome: {outcome}'
)


def case_from_model(model: ChatModel, ticket: Ticket, *, evidence: Evidence | None = None) -> Case | None:
    """The model writes the case; the detector and the taint check it. None when the model's
    answer is unusable or copies the customer (the caller then extracts the case offline).

    With `evidence`, a capitalized word of the customer's that the model repeats is masked
    unless it is common ground, and so is a known name or place of the customer's that it
    capitalizes, unless it is the company's vocabulary (see `echoed_names`)."""
    messages = "\n".join(f"- {m}" for m in (ticket.goal, *ticket.messages[-MAX_MESSAGES:]) if m)
    response = model.chat([{"role": "user", "content": _CASE_PROMPT.format(messages=messages, outcome=ticket.outcome)}],
                          max_tokens=300)
    try:
        start, end = response.text.index("{"), response.text.rindex("}") + 1
        raw = json.loads(response.text[start:end])
        problem, fix = str(raw["problem"]).strip(), str(raw["fix"]).strip()
    except (ValueError, KeyError, TypeError):
        return None
    if not problem or not fix:
        return None
    if copies(f"{problem} {fix}", (ticket.goal, *ticket.messages), exempt=ticket.outcome):
        return None
    tainted = _tainted(ticket, f"{problem} {fix}", evidence)
    return _case(_scrub(problem, tainted), _scrub(fix, tainted), ticket, tainted, "model")


def copies(text: str, sources: Sequence[str], *, exempt: str = "", run: int = COPIED_RUN) -> bool:
    """Does `text` repeat `run` consecutive words of a source that `exempt` does not hold too?"""
    words = [w.lower() for w in _WORD.findall(text)]
    exempt_runs = _runs([w.lower() for w in _WORD.findall(exempt)], run)
    source_runs: set[tuple[str, ...]] = set()
    for source in sources:
        source_runs |= _runs([w.lower() for w in _WORD.findall(source)], run)
    return bool((_runs(words, run) & source_runs) - exempt_runs)


def _informative(text: str) -> str:
    """The sentences that describe the problem: those that still say something (two words or
    more) once details are gone, and of those the ones that held no personal detail ("My
    account number is [REDACTED:account_number]" is about the customer, not the problem)."""
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    pool = [s for s in sentences if not _PLACEHOLDER.search(s)] or sentences
    kept = [s for s in pool if len(tokenize(_PLACEHOLDER.sub(" ", s))) >= 2]
    return " ".join(kept or pool) or text


def _statement(text: str, own: frozenset[str] = frozenset(),
               company: Callable[[str], bool] | None = None) -> tuple[int, int]:
    """Where the problem is stated: of the sentences of a redacted text that hold no personal
    detail, are not mostly the customer's `own` words (an introduction: "hi, maria baker here
    from reading"), say something (two words or more), are short and are no directive
    (`_DIRECTIVE`), those the reader (`fourfold.text.reader`) reads as stating a problem if
    any, and of them the one with the most `company` words (the fix's, the documents'), else
    the first; (0, 0) if none is."""
    candidates: list[tuple[int, int, bool]] = []
    pos = 0
    for sentence in _SENTENCE.split(text):
        start = text.index(sentence, pos)
        pos = start + len(sentence)
        found = _WORD.findall(sentence)
        content = [w for w in found if w.lower() not in STOPWORDS]
        if (not _PLACEHOLDER.search(sentence) and not _DIRECTIVE.search(sentence)
                and 3 * sum(w.lower() in own for w in content) < max(len(content), 1)
                and len(tokenize(sentence)) >= 2 and len(found) <= MAX_STATEMENT_WORDS):
            problem = any(s.role == "problem" for s in read(sentence).sentences)
            candidates.append((start, pos, problem))
    pool = [c for c in candidates if c[2]] or candidates
    if not pool:
        return 0, 0
    if company is None:
        return pool[0][0], pool[0][1]
    best = max(pool, key=lambda c: (len({s for s in tokenize(text[c[0]:c[1]]) if company(s)}), -c[0]))
    return best[0], best[1]


def problem_query(message: str, *, company: Callable[[str], bool] | None = None) -> str:
    """A customer's message as a query for the case base: the statement of the problem
    (`_statement`, the sentence with the most `company` words) when one qualifies, else what
    describes the problem, with the same details removed as from the cases (the customer's
    order number and card would otherwise match whichever case mentions orders or cards, and a
    greeting or a signature whichever case kept the same words)."""
    read = _read(message, company)
    if read.end > read.start:
        return " ".join(read.redacted[read.start : read.end].split())
    return _informative(" ".join(read.redacted.split())) or message


def _clip(text: str) -> str:
    """Cut after scrubbing (a cut before could split a phone number the detector then misses)."""
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}
