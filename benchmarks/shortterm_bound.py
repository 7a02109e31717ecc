"""Which of the outside short-term probe's violations any output could avoid.

The probe (`../shared/checks/shortterm_probe.py`, not part of this repository) flags, for a
`TokenBudget`, raising when the task alone fits, dropping the newest turn, and going over budget,
and accepts only outputs whose tool calls are verbatim and whose texts are whole or a prefix plus
the marker. This runs the probe unchanged and, for every case it flags, computes the smallest
output its own rules accept (system, the task cut to its marker, every message from the last
assistant message on cut to markers, tool calls verbatim). Last line:
`shortterm-bound: violations=N unsatisfiable=N avoidable=N`; avoidable cases are our defects.

    python benchmarks/shortterm_bound.py [PATH_TO_PROBE]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "checks" / "shortterm_probe.py"


def main(probe_path: Path) -> int:
    spec = importlib.util.spec_from_file_location("shortterm_probe", probe_path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {probe_path}")
    probe: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    unsatisfiable, avoidable = 0, []
    run_one = probe.apply

    def apply(tag: str, strat: Any, inp: list[dict[str, Any]], summ: Any = None, s: Any = None, **kw: Any) -> Any:
        nonlocal unsatisfiable
        before = sum(probe.NBAD.values())
        out = run_one(tag, strat, inp, summ, s, **kw)
        if sum(probe.NBAD.values()) > before:
            tb = kw.get("tb")
            system, task, rest = probe.split(inp)
            starts = [i for i, m in enumerate(rest) if m["role"] == "assistant"] or [len(rest) - 1]
            lean = [*system, probe.minimize(task), *(probe.minimize(m) for m in rest[starts[-1]:])]
            if tb is not None and tb.counter.count(lean, system=tb.system) > tb.max_tokens:
                unsatisfiable += 1
            else:
                avoidable.append(tag)
        return out

    probe.apply = apply
    probe.main()
    for tag in avoidable[:10]:
        print(f"avoidable: {tag}")
    total = sum(probe.NBAD.values())
    print(f"shortterm-bound: violations={total} unsatisfiable={unsatisfiable} avoidable={len(avoidable)}")
    return 1 if avoidable else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
