"""The calibration benchmarks' shared rules (`benchmarks/_calibrate.py`): the floor's cut loses at
most its share of on-topic hit@3 and no higher cut would, and the logistic fit finds a known curve."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

# benchmarks/ is a folder of scripts, not a package: import its modules the way the script does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _calibrate import cut_keeping, fit_logistic


@pytest.mark.parametrize(("on_topic", "lost"), [(200, 2), (250, 2), (99, 0), (150, 1)])
def test_the_cut_loses_at_most_one_percent_and_no_higher_cut_would(on_topic: int, lost: int) -> None:
    hits = [i / 10 for i in range(150)]  # the queries (of on_topic) with a relevant result in their top 3
    cut = cut_keeping(reversed(hits), on_topic)  # in any order
    assert sum(h < cut for h in hits) == lost  # 1% of the on-topic queries, rounded down
    assert hits[lost] - 1e-6 < cut <= hits[lost]  # just below the lowest hit kept: a higher cut loses one more


def test_the_logistic_fit_finds_the_curve_the_labels_were_drawn_from() -> None:
    rng = np.random.default_rng(18)
    x = rng.uniform(-2, 2, 20_000)
    y = (rng.uniform(size=x.size) < 1 / (1 + np.exp(-(3.0 * x - 1.0)))).astype(np.float64)
    slope, intercept = fit_logistic(x, y)
    assert slope == pytest.approx(3.0, abs=0.15) and intercept == pytest.approx(-1.0, abs=0.1)
    both = fit_logistic(np.column_stack([x, rng.uniform(size=x.size)]), y)  # a column that says nothing
    assert both[0] == pytest.approx(slope, abs=0.05) and abs(both[1]) < 0.2 and len(both) == 3
