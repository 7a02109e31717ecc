"""What the calibration benchmarks share: one candidate's relevance, a logistic fit, and the one
rule for where a floor cuts (at most 0.01 of on-topic hit@3 lost where it is chosen).

Used by `episodes_relevance.py`, `recall_cv.py` and `relevance_gate.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from fourfold.ranking import Calibration, relevance

__all__ = ["LOST", "cut_keeping", "fit_logistic", "relevance_of"]

Arr = np.ndarray[Any, Any]

#: The share of on-topic hit@3 a floor may cost on the queries it is chosen on.
LOST = 0.01


def relevance_of(calibration: Calibration, evidence: float, null: float) -> float:
    """`fourfold.ranking.relevance` of one candidate."""
    return float(relevance(np.array([evidence]), calibration, null=null)[0])


def fit_logistic(x: Arr, y: Arr) -> Arr:
    """Weights of P(y | x) by Newton's method: one per column of x (a vector is one column),
    then the intercept; a tiny ridge keeps them finite."""
    a = np.column_stack([x, np.ones(len(x))])
    w = np.zeros(a.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-a @ w))
        hessian = (a * (p * (1 - p))[:, None]).T @ a + 1e-4 * np.eye(len(w))
        w -= np.linalg.solve(hessian, a.T @ (p - y) + 1e-4 * w)
    return w


def cut_keeping(hits: Iterable[float], on_topic: int, lost: float = LOST) -> float:
    """The highest cut that costs at most `lost` of on-topic hit@3; a score at or above it is kept.

    `hits` holds, for each on-topic query with a relevant result in its top 3, the best score of
    those results (a query without one is not in it: a floor cannot lose what was never found);
    `on_topic` counts every on-topic query. The cut sits just below the lowest hit it keeps.
    """
    ordered = sorted(hits)
    return float(ordered[int(lost * on_topic)]) - 1e-9
