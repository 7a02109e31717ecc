"""The one hybrid ranker: candidates' dense and lexical evidence in, relevance in [0, 1] out.

Long-term memory, episodes and documents all rank through `rank`; a store that finds its own
candidates (a database with a vector index) feeds them here rather than ranking on its own.

Both signals are absolute, so a score means the same in any query, scope or store size:

- dense: the cosine of query and candidate;
- lexical: the candidate's BM25 score as a share of the most the query could score (every
  query word matched, saturated), in [0, 1). A query whose only matches are words common in
  the scope earns little; one that names a rare word of the candidate earns much.

They are added (`Fusion.lexical` weighs the lexical share), plus `Fusion.boost` for candidates
with a bonus (a memory whose speaker the query names), minus `Fusion.typical` times the
candidate's *typicality* where the caller knows it: how much closer the candidate is to its
scope's other members than the scope's average member is (`typicality`). A memory that is
mostly the desk's framing ("Noted on the account: ...") is close to every query about the
account and to every other memory; taking its typicality off lets the memory that is actually
about the query win (hubness reduction). It is centred on the scope, so it moves candidates
against each other but not the scope's average score. That sum orders the candidates.

Its relevance in [0, 1] also weighs the query's *null*: how close the query comes to
`Background` texts, everyday prose and everyday questions unrelated to any store. Some queries are close to much of
any text; a memory that a query matches no better than it matches random prose is not
evidence of anything. The sum minus `Calibration.null` times the null is mapped by a logistic curve
fitted on labelled sets (`Calibration.slope`, `Calibration.offset`), so `min_score` and the agent's
prompt floor read the same scale everywhere. The null is one number per query, so it never
changes the order within a query, only how far the best result stands above chance. It also
holds a part for chat (`Background.CHATTER_FROM`): a message as close to greetings, thanks and
commands to other apps as "hi there!" needs more evidence, a desk question almost never does.
Memories and documents share one calibration (`MEMORIES`); episodes have their own (`EPISODES`)
on the same fusion.

Measured (benchmarks/results/locomo-dev.md, paraphrase.md): the weights were chosen by
cross-validation on the LoCoMo dev split (leave one conversation out) together with the
paraphrase set (leave attribute types out). Unlike per-query z-scores, an absolute lexical share
cannot let a few ordinary words in a customer's other memories outvote a clear dense match.
The null took held-out off-topic questions left empty at the floor from 0.56 to 0.71
(benchmarks/results/recall-cv.md); everyday questions in the background (queries are questions)
took the paraphrase test half's unrelated questions left empty at the default floor from 0.693
to 0.725 at less on-topic loss (0.0025, was 0.005), slope, offset and floor refitted on the dev
half only (`benchmarks/recall_cv.py --calibration-only`). Typicality's weight 0.2 was chosen by cross-validation on
the dev sets (benchmarks/typicality_cv.py): on the paraphrase test half, never
tuned on, it took all on-topic hit@3 from 0.938 to 0.946 (dense alone 0.935).
The chat part of the null, chosen on the dev halves of the paraphrase and episode desks
(benchmarks/relevance_gate.py), took the episode desk's test-half chatter and unrelated messages
left empty at the floor from 0.53 to 0.68 for past tickets and from 0.55 to 0.69 for articles
(benchmarks/episodes_relevance.py), and the hand-written chatter from 0.22 to 0.26, at no change
on the paraphrase set; the episodes' own calibration took the tickets' to 0.87.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from importlib import resources

import numpy as np
import numpy.typing as npt

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import InvalidInput

__all__ = ["EPISODES", "MEMORIES", "RELEVANCE_FLOOR", "Background", "Calibration", "Fusion", "Parts", "evidence_of", "lexical_share", "rank", "relevance", "typicality"]

Floats = npt.NDArray[np.float64]

#: The default floor of relevance for what an agent puts in its prompt: chosen on the
#: paraphrase set's dev half (benchmarks/recall_cv.py --calibration-only) as the highest floor
#: that keeps on-topic hit@3 within 0.01 of no floor (benchmarks/results/paraphrase.md).
RELEVANCE_FLOOR = 0.06


@dataclass(frozen=True, slots=True)
class Fusion:
    """How dense and lexical evidence add up to a candidate's evidence, which orders a query's
    candidates."""

    #: Weight of the lexical share (BM25 as a share of the query's best possible score).
    lexical: float = 1.75
    #: Added for a candidate with a bonus (a memory whose speaker the query names).
    boost: float = 0.15
    #: Weight of the candidate's typicality, taken off (hubness reduction).
    typical: float = 0.2

    def __post_init__(self) -> None:
        _check_finite(self)


@dataclass(frozen=True, slots=True)
class Calibration:
    """How evidence becomes a relevance in [0, 1]:
    relevance = logistic(slope × (evidence − null × the query's null) + offset)."""

    #: Steepness of the logistic curve from evidence to relevance (> 0).
    slope: float = 5.66
    #: Shift of that curve.
    offset: float = -1.99
    #: Weight of the query's null (its closeness to unrelated background text), taken off.
    null: float = 0.75

    def __post_init__(self) -> None:
        _check_finite(self)
        if self.slope <= 0:
            raise InvalidInput("Calibration.slope must be > 0: relevance must grow with the evidence")


def _check_finite(value: Fusion | Calibration) -> None:
    for field in fields(value):
        number = getattr(value, field.name)
        if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
            raise InvalidInput(f"{type(value).__name__}.{field.name} must be a finite number, got {number!r}")


#: How a memory's or a document's evidence becomes its relevance (`LongTermMemory.recall`).
MEMORIES = Calibration()

#: How an episode's evidence becomes its relevance (`EpisodeLog.similar_successes`). An episode's
#: vector is of its goal and outcome together, whose cosines to a situation run higher than a
#: memory's to a question, so its own slope, offset and null weight put the default floor where
#: it costs as little of on-topic hit@3 as a memory's: fitted on the episode desk's dev half
#: (benchmarks/episodes_relevance.py --fit). Its evidence is fused with the default `Fusion`.
EPISODES = Calibration(slope=6.63, offset=-2.85, null=0.5)


def lexical_share(scores: Floats, best_possible: float) -> Floats:
    """BM25 scores as shares of the most the query could score (0 when it could score nothing)."""
    if best_possible <= 0:
        return np.zeros_like(scores)
    out: Floats = np.clip(scores / best_possible, 0.0, 1.0)
    return out


def typicality(matrix: Vectors, *, total: Vectors | None = None, size: int | None = None) -> Floats:
    """Each unit row's mean cosine to the other members of its scope, minus the scope's mean of
    that, so the scope's members average 0.

    `matrix` holds the rows to score. By default they are the whole scope; an index holding
    only some of a scope's rows (a large scope's candidates) passes the scope's `total` (the sum
    of all its unit rows) and `size`. A scope of fewer than two rows has no typicality (zeros).
    """
    rows = np.asarray(matrix)
    n = len(rows) if size is None else size
    if n < 2 or not len(rows):
        return np.zeros(len(rows), dtype=np.float64)
    sums = rows.sum(axis=0, dtype=np.float64) if total is None else np.asarray(total, dtype=np.float64)
    # sum over the others of cos(i, j) = row_i . total - |row_i|^2 (= 1 for unit rows); the
    # product in the rows' own precision, so a large float32 scope is never copied to float64
    own = ((rows @ sums.astype(rows.dtype)).astype(np.float64) - 1.0) / (n - 1)
    mean = (float(sums @ sums) - n) / (n * (n - 1))
    out: Floats = own - mean
    return out


def relevance(evidence: Floats, calibration: Calibration, *, null: float = 0.0) -> Floats:
    """The calibrated relevance in [0, 1] of fused evidence (`evidence_of`) for a query whose
    background similarity is `null` (`Background.null`)."""
    c = calibration
    out: Floats = 1.0 / (1.0 + np.exp(-(c.slope * (evidence - c.null * null) + c.offset)))
    return out


@dataclass(frozen=True, slots=True)
class Parts:
    """What one ranked result's relevance is made of, for an inspector or a curious user.

    `dense` is the cosine the ranker used (with neighbours' context where the caller blends it
    in), `own` the cosine of the item alone, so `dense - own` is what its context added;
    `lexical` the lexical share (0-1), of which `date` came from the words of its date;
    `boost` the 0/1 bonus (a named speaker); `null` the query's background similarity;
    `evidence` the ranking sum and `relevance` its calibrated score; `typical` the item's
    typicality in its scope (`typicality`), of which `Fusion.typical` times was taken off.
    """

    dense: float
    own: float
    lexical: float
    date: float
    boost: float
    null: float
    evidence: float
    relevance: float
    typical: float = 0.0

    @property
    def context(self) -> float:
        """What neighbouring memories added to the dense similarity."""
        return self.dense - self.own


def rank(
    dense: Floats,
    lexical: Floats,
    *,
    k: int,
    fusion: Fusion,
    calibration: Calibration,
    boost: Floats | None = None,
    newer: Floats | Callable[[npt.NDArray[np.intp]], Floats] | None = None,
    null: float = 0.0,
    typical: Floats | None = None,
) -> list[tuple[int, float]]:
    """The k best candidates as (position, relevance), best first.

    `fusion` adds the evidence up, `calibration` makes it a relevance; `dense` holds cosines, `lexical` lexical shares (`lexical_share`), `boost` 0/1 flags, `null`
    the query's `Background.null`, `typical` the candidates' `typicality` (none: not taken
    off); among equal scores the candidate with the larger `newer` (default: the later
    position) wins. `newer` may be a function of candidate positions giving their tie-break
    values, for a caller whose tie-break is costly over many candidates (a sort of a large
    log's timestamps): it is asked only about the few that can reach the top k.
    """
    evidence = evidence_of(dense, lexical, fusion, boost=boost, typical=typical)
    top = _top_k(evidence, k, tiebreak=newer if callable(newer) else partial(_at, newer))
    scores = relevance(evidence[top], calibration, null=null)
    return [(i, float(s)) for i, s in zip(top, scores, strict=True)]


def evidence_of(
    dense: Floats, lexical: Floats, fusion: Fusion, *, boost: Floats | None = None, typical: Floats | None = None
) -> Floats:
    """The ranking sum: dense + weighted lexical + weighted boost - weighted typicality."""
    evidence = dense + fusion.lexical * lexical
    if boost is not None:
        evidence = evidence + fusion.boost * boost
    if typical is not None:
        evidence = evidence - fusion.typical * typical
    return evidence


class Background:
    """Unit vectors of the background texts (`fourfold._background`) for one embedder.

    `null(query)` is how similar the query is to text that has nothing to do with any store:
    the mean cosine of its `NEAREST` closest background prose and everyday questions, plus, for
    a message that is chatter (greetings, thanks, small talk, commands to other apps), how far its
    closeness to the chatter texts (mean of the `NEAREST`) passes `CHATTER_FROM`, times
    `CHATTER_WEIGHT`. A desk question is rarely that close to chatter, so the chatter part is zero
    for almost every question a store can answer; "hi there!" or "set a timer" needs far more
    evidence for the same relevance. MiniLM's vectors ship with the package; any other
    embedder's are embedded once per process, on first use.
    """

    NEAREST = 3
    #: Chosen on the dev halves of the paraphrase and episode desks (benchmarks/relevance_gate.py).
    CHATTER_FROM = 0.4
    CHATTER_WEIGHT = 2.0

    def __init__(self, vectors: Vectors, chatter: Vectors | None = None) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.chatter = np.ascontiguousarray(np.zeros((0, self.vectors.shape[1])) if chatter is None else chatter, dtype=np.float32)

    def null(self, query: Vectors) -> float:
        q = np.asarray(query, dtype=np.float32)
        prose = _nearest_mean(self.vectors, q, self.NEAREST)
        if not len(self.chatter):
            return prose
        return prose + self.CHATTER_WEIGHT * max(0.0, _nearest_mean(self.chatter, q, self.NEAREST) - self.CHATTER_FROM)

    @classmethod
    def of(cls, embedder: Embedder) -> Background:
        """The background for this embedder's vectors, made once per identity and process."""
        identity = embedder.identity
        with _backgrounds_lock:
            cached = _backgrounds.get(identity)
        if cached is not None:
            return cached
        from fourfold._background import CHATTER, TEXTS

        shipped = _SHIPPED.get(identity)
        if shipped is not None:  # prose and questions, then chatter, in one file
            vectors = np.load(resources.files("fourfold").joinpath(shipped).open("rb")).astype(np.float32)
        else:
            vectors = embedder.embed_many([*TEXTS, *CHATTER])
        out = cls(vectors[: len(TEXTS)], vectors[len(TEXTS) :])
        with _backgrounds_lock:
            return _backgrounds.setdefault(identity, out)


def _nearest_mean(vectors: Vectors, query: Vectors, n: int) -> float:
    """The mean cosine of the query's n closest rows (unit rows and query)."""
    # einsum, not BLAS: a product of microseconds must not wake BLAS worker threads.
    cosines = np.einsum("ij,j->i", vectors, query)
    n = min(n, cosines.size)
    return float(np.partition(cosines, -n)[-n:].mean()) if n else 0.0


#: Background vectors shipped with the package, by embedder identity (float16, unit length).
_SHIPPED = {"all-MiniLM-L6-v2:384": "_background-minilm.npy"}
_backgrounds: dict[str, Background] = {}
_backgrounds_lock = threading.Lock()


def _at(values: Floats | None, part: npt.NDArray[np.intp]) -> Floats:
    """`values` at the positions `part`; without values, the positions themselves."""
    return part.astype(np.float64) if values is None else values[part]


def _top_k(scores: Floats, k: int, *, tiebreak: Callable[[npt.NDArray[np.intp]], Floats]) -> list[int]:
    """Indices of the k highest scores; among equal scores the largest `tiebreak(part)` first
    (asked only about `part`: the candidates that can reach the top k)."""
    if scores.size > k * 4:
        part = np.argpartition(-scores, k - 1)[:k]
        # keep everything tied with the k-th score so the tie-break is fair
        part = np.nonzero(scores >= scores[part].min())[0]
    else:
        part = np.arange(scores.size)
    order = np.lexsort((-tiebreak(part), -scores[part]))
    return [int(i) for i in part[order][:k]]
