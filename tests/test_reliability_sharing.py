"""Processes sharing one store: the CLI beside a running service (both engines), and a
PostgreSQL restart under load. The workloads live in harness.sharing (the reliability
benchmark runs them longer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fourfold.testing.postgres import PostgresServer
from harness import reliability as rel
from harness import sharing

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_cli_and_a_service_write_one_store_and_each_sees_the_others_forgets(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = str(request.getfixturevalue("postgres_url")) if engine == "postgres" else None
    result = sharing.service_and_cli(tmp_path, store=store, writes=16, cli_writes=4)
    assert result.untyped == []
    assert result.lost == []
    assert result.forgotten == 7  # four service writes forgotten by the CLI, three CLI writes by the service
    assert result.served == []
    assert result.acked == 16 * 2 + 4 and result.present == result.acked - result.forgotten


@pytest.mark.postgres
def test_a_postgresql_restart_under_load_is_typed_errors_then_recovery(tmp_path: Path) -> None:
    with PostgresServer() as server:
        result = sharing.restart_under_load(tmp_path, server, seconds=4.5)
    assert result.untyped == []
    assert result.typed_errors  # the second without a server was seen by the clients
    assert set(result.typed_errors) <= {"StoreUnavailable", "HTTP 503 store_unavailable"}
    assert set(result.recovered) == {"library", "forget", "service"}
    assert result.lost == []
    assert result.served == []
    assert result.forgotten > 0 and result.present == result.acked - result.forgotten


@pytest.mark.postgres
def test_writers_sigkilled_on_postgresql_lose_nothing(tmp_path: Path, postgres_url: str) -> None:
    result = rel.crash_cycles(tmp_path / "data", cycles=8, seed=7, max_delay=0.3, store=postgres_url)
    assert result.open_errors == []
    assert (result.lost, result.dupes, result.partial) == ([], [], [])
    assert result.survived == result.cycles == 8
    assert result.acked > 8 and result.present == result.acked


@pytest.mark.postgres
def test_concurrent_writers_on_postgresql_lose_nothing(tmp_path: Path, postgres_url: str) -> None:
    result = rel.concurrency(tmp_path / "data", writers=3, per_writer=8, store=postgres_url)
    assert result.writer_exits == [0, 0, 0]
    assert result.acked == 3 * 8 * 3 and result.present == result.acked
    assert (result.lost, result.dupes, result.partial) == ([], [], [])
    assert result.reads > 0 and result.reader_errors == []
