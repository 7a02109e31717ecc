"""Bad input: every call with bad input ends in a typed FourfoldError (or a clean result),
the CLI in a non-zero exit with one line on stderr, and the store is intact afterwards."""

from __future__ import annotations

import io
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourfold import FourfoldError, Memory
from fourfold.cli import main
from harness import reliability as rel

_THREADS = "shortterm/threads.py ConversationStore.load/_path"
_LONGTERM = "longterm/store.py LongTermMemory"
KNOWN_DEFECTS: dict[str, str] = {}  # name -> "defect: ..." marks a case xfail(strict) until fixed
#: Bad-looking input that is valid and must be stored exactly (not refused).
ACCEPTED = {"remember text=nul", "remember text=binary", "recall query=nul", "recall query=binary",
            "episodes.record goal=nul", "episodes.record goal=binary", "episodes.record action=nul",
            "episodes.record action=binary", "similar_successes situation=nul", "similar_successes situation=binary",
            "facts.set value=empty", "facts.set value=blank", "facts.set value=nul", "facts.set value=binary",
            "facts.set value=none", "facts.set value=int", "facts.set value=list", "facts.set value=dict",
            "docs.ingest text=nul", "docs.ingest text=binary", "remember scope=none", "forget_scope scope=nul",
            "forget_scope scope=binary", "remember metadata=nested", "remember metadata=none-value",
            "recall where=nested", "recall where=none-value", "recall kinds=unknown", "recall scope=unknown",
            "conversations.load scope=nul", "conversations.load scope=binary"}

CASES = rel.bad_input_cases()


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rel.open_memory(tmp_path_factory.mktemp("fuzz")) as memory:
            rel.plant_sentinel(memory)
            yield memory
            assert rel.store_intact(memory), "bad input damaged the store"


def _marks(name: str) -> list[Any]:
    return [pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[name])] if name in KNOWN_DEFECTS else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n), id=n) for n, _ in CASES])
def test_bad_input_ends_in_a_typed_error(mem: Memory, name: str) -> None:
    fn = dict(CASES)[name]
    outcome = rel.run_call(mem, name, fn)
    assert not outcome.crashed, outcome.ended
    if name not in ACCEPTED:
        assert outcome.ended.startswith("typed:"), f"{name} was accepted: {outcome.ended}"


def test_the_catalogue_covers_the_issue(mem: Memory) -> None:
    names = " ".join(n for n, _ in CASES)
    for needle in ("empty", "huge", "binary", "surrogate", "nul", "none-value", "deep", "k=0", "k=-1", "k=1e6",
                   "kinds=unknown", "scope=unknown", "int"):
        assert needle in names
    assert len(CASES) >= 150
    assert rel.store_intact(mem)


anything = st.one_of(
    st.text(max_size=50), st.text(st.characters(categories=["Cs", "Cc", "Zl", "Cf"]), max_size=10), st.binary(max_size=20),
    st.none(), st.booleans(), st.integers(), st.floats(), st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.none() | st.integers() | st.text(max_size=5), max_size=3),
    st.just(rel.HUGE), st.just(rel._deep(3000)),
)
TARGETS = {
    "remember": lambda m, a, b: m.long_term.remember(a, scope=b),
    "remember kind/metadata": lambda m, a, b: m.long_term.remember("Order 99 shipped late", kind=a, metadata=b),
    "recall": lambda m, a, b: m.long_term.recall(a, k=b),
    "recall scope/where": lambda m, a, b: m.long_term.recall("order shipped", scope=a, where=b),
    "episodes.record": lambda m, a, b: m.episodes.record(goal=a, actions=b, outcome="resent", success=True),
    "episodes.record scope/tags": lambda m, a, b: m.episodes.record(goal="g", actions=[], outcome="o", success=True,
                                                                    scope=a, tags=b),
    "similar_successes": lambda m, a, b: m.episodes.similar_successes(a, k=b, scope=None),
    "facts.set": lambda m, a, b: m.facts.set("fuzz.any", a, description=b),
    "facts.lookup": lambda m, a, b: m.facts.lookup(a),
    "docs.search": lambda m, a, b: m.docs.search(a, k=b),
    "forget_scope": lambda m, a, b: m.forget_scope(a),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(a=anything, b=anything)
def test_public_api_never_raises_an_untyped_error(mem: Memory, target: str, a: Any, b: Any) -> None:
    if target in ("recall", "recall scope/where") and isinstance(b, dict) and not b:
        b = None
    try:
        TARGETS[target](mem, a, b)
    except FourfoldError:
        pass


CLI_ACCEPTED = {"remember --meta malformed JSON value"}  # stored as a plain string (facts refuse broken JSON)


@pytest.mark.parametrize("name,argv,stdin", rel.cli_cases(Path("DATA")), ids=[c[0] for c in rel.cli_cases(Path("DATA"))])
def test_cli_bad_input_is_one_line_and_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch, name: str, argv: list[str],
                                                stdin: bytes | None) -> None:
    argv = [str(tmp_path / "d") if a == "DATA" else a for a in argv]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8",
                                                       errors="surrogateescape"))
    code = main(argv)
    err = capsys.readouterr().err
    if name in CLI_ACCEPTED:
        assert code == 0
        return
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    if "--json" in argv:  # under --json the one line is JSON
        assert json.loads(err)["error"]["exit_code"] == code
    else:
        assert err.startswith("error: "), err


def test_cli_usage_errors_are_one_line_in_a_real_process(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path), "recall", "x", "-k", "abc"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
