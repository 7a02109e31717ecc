"""What only the PostgreSQL engine has: URLs and schemas, its errors, a server that goes away,
tenants as schemas, and a service replica per process on one database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from conftest import OpenMemory
from fourfold import StoreCorrupt, StoreUnavailable
from fourfold.embeddings import HashEmbedder
from fourfold.errors import InvalidInput
from fourfold.stores.postgres import (
    SCHEMA_VERSION,
    PostgresDatabase,
    redact_url,
    split_schema,
    with_schema,
)
from fourfold.testing.postgres import PostgresServer

pytestmark = pytest.mark.postgres


def test_urls_keep_the_password_out_and_name_a_schema() -> None:
    url = "postgresql://app:s3cret@db.example:5432/mem?sslmode=require&schema=agent2"
    assert redact_url(url) == "postgresql://app:***@db.example:5432/mem?sslmode=require&schema=agent2"
    assert split_schema(url) == ("postgresql://app:s3cret@db.example:5432/mem?sslmode=require", "agent2")
    assert split_schema(with_schema(url, "fourfold_t_acme"))[1] == "fourfold_t_acme"
    with pytest.raises(InvalidInput):
        with_schema(url, 'x"; DROP TABLE memories; --')


def test_a_wrong_password_is_store_unavailable_without_the_password(postgres_server: PostgresServer) -> None:
    wrong = postgres_server.url.replace(postgres_server.password, "Wr0ngPassw0rd-zq")
    with pytest.raises(StoreUnavailable) as info:
        PostgresDatabase(wrong)
    assert "Wr0ngPassw0rd-zq" not in str(info.value) and postgres_server.password not in str(info.value)
    assert "***" in str(info.value)


def test_no_server_is_store_unavailable_at_once(open_memory: OpenMemory) -> None:
    from fourfold.testing.chroma_server import free_port

    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="cannot reach PostgreSQL") as info:
        open_memory(f"postgresql://app:Sekr1t-pw@127.0.0.1:{free_port()}/mem")
    assert "Sekr1t-pw" not in str(info.value)
    assert time.monotonic() - started < 10  # refused, not waited out


def test_a_schema_of_a_newer_fourfold_or_of_another_program_is_refused(postgres_url: str) -> None:
    PostgresDatabase(postgres_url).close()
    conninfo, schema = split_schema(postgres_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".meta SET value = %s WHERE name = %s', ("99", "schema_version"))
        conn.execute('CREATE SCHEMA "someone_else"')
        conn.execute('CREATE TABLE IF NOT EXISTS "someone_else".invoices (id INT)')
    with pytest.raises(StoreCorrupt, match="newer fourfold"):
        PostgresDatabase(postgres_url)
    with pytest.raises(StoreCorrupt, match="not fourfold's"):
        PostgresDatabase(with_schema(postgres_url, "someone_else"))


def test_a_schema_of_version_1_gains_the_tokens_column_and_its_rows_read_as_before(open_memory: OpenMemory, postgres_url: str) -> None:
    from fourfold.stores.sqlite import SQLiteVectorStore
    from fourfold.stores.vector import record_tokens

    with open_memory(postgres_url) as mem:
        mem.long_term.remember_many([{"text": f"Zoë's order number {i} arrived late", "scope": "c"} for i in range(5)])
    conninfo, schema = split_schema(postgres_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:  # the memories table as schema version 1 had it
        conn.execute(f'ALTER TABLE "{schema}".memories DROP COLUMN tokens')
        conn.execute(f'UPDATE "{schema}".meta SET value = %s WHERE name = %s', ("1", "schema_version"))
    with open_memory(postgres_url) as mem:
        assert len(mem.long_term.recall("late order", scope="c", k=10)) == 5
        mem.long_term.remember("Zoë's refund is on its way", scope="c")
        store = SQLiteVectorStore(mem.database, embedder_identity=HashEmbedder().identity, dimension=256)
        records, _, tokens, _ = store.scan_tokens("c")
        assert tokens == record_tokens(records) and len(records) == 6
    with psycopg.connect(conninfo, autocommit=True) as conn:
        kept = [r[0] for r in conn.execute(f'SELECT tokens FROM "{schema}".memories ORDER BY created_at, seq')]
        version = conn.execute(f'SELECT value FROM "{schema}".meta WHERE name = %s', ("schema_version",)).fetchone()
    assert kept[:5] == [None] * 5 and kept[5] is not None and version == (str(SCHEMA_VERSION),)


def test_memories_hold_any_text_and_forgetting_is_vacuumed(open_memory: OpenMemory, postgres_url: str) -> None:
    from engines import assert_erased

    with open_memory(postgres_url) as mem:
        odd = "nul \x00 inside, and the escape \ufdd0 itself, \ufdd00 too"
        mid = mem.long_term.remember(odd, scope="c1")
        assert mem.long_term.get(mid).text == odd
        mem.long_term.forget(mid)
        assert_erased(postgres_url, "memories")


def test_an_erasure_waits_for_an_older_transaction_before_its_vacuum_is_done(open_memory: OpenMemory,
                                                                            postgres_url: str) -> None:
    """A transaction begun before the delete (an autovacuum ANALYZE, a report) keeps VACUUM from
    removing the rows: CI once found 2 dead tuples left after `forget_scope`. The erasure runs
    its vacuum again until they are gone (here: the reader ends 0.3 s later)."""
    import threading

    from engines import _connect, assert_erased

    with open_memory(postgres_url) as mem:
        mem.long_term.remember("Zanzibar shipping address", scope="A")
        reader, schema = _connect(postgres_url)
        reader.autocommit = False
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        assert reader.execute(f'SELECT count(*) FROM "{schema}".memories').fetchone() == (1,)  # its snapshot
        done = threading.Timer(0.3, reader.commit)
        done.start()
        try:
            assert mem.forget_scope("A")["memories"] == 1
        finally:
            done.join()
            reader.close()
        assert_erased(postgres_url, "memories")


def test_a_restarted_server_is_an_error_then_recovers(open_memory: OpenMemory, tmp_path: Path) -> None:
    """Clients get a typed error while the server is down, and carry on once it is back."""
    with PostgresServer() as server, open_memory(server.url) as mem:
        mem.long_term.remember("before the outage", scope="c1")
        server.pause()
        with pytest.raises(StoreUnavailable):
            mem.long_term.remember("during the outage", scope="c1")
        with pytest.raises(StoreUnavailable):
            mem.facts.set("k", 1)
        server.resume()
        mem.long_term.remember("after the outage", scope="c1")
        assert {r.text for r in mem.long_term.all(scope="c1")} == {"before the outage", "after the outage"}
        server.restart()  # idle pooled connections all break at once
        assert mem.facts.lookup("k") == "UNKNOWN — escalate to a human"
        assert len(mem.long_term.recall("outage", scope="c1", k=5)) == 2


def test_a_cache_check_while_the_server_is_down_is_store_unavailable_every_time() -> None:
    """A scope's version is read on an idle pooled connection, which the stopped server broke;
    the fresh one is refused too. Each call must be a typed error (it once was a ValueError from
    the pool, an HTTP 500 in the service), and the pool must work again after the outage."""
    with PostgresServer() as server:
        db = PostgresDatabase(server.url)
        try:
            assert db.version("customer:1") == 0  # leaves one idle connection in the pool
            server.pause()
            for _ in range(3):
                with pytest.raises(StoreUnavailable):
                    db.version("customer:1")
            server.resume()
            assert [db.version("customer:1") for _ in range(3)] == [0, 0, 0]
            with db.write() as conn:
                db.bump(conn, ["customer:1"])
            assert db.version("customer:1") > 0
        finally:
            db.close()


def test_tenants_are_schemas_of_one_database(open_memory: OpenMemory, postgres_url: str) -> None:
    from fourfold.service.tenancy import Tenants

    base = split_schema(postgres_url)[1]
    tenants = Tenants(postgres_url, embedder=HashEmbedder())
    try:
        tenants.get("acme").long_term.remember("acme ships by sea", scope="c1")
        tenants.get("globex").facts.set("refund_window_days", 14)
        assert tenants.get("globex").long_term.recall("ships by sea", scope="c1") == []
        assert tenants.get("acme").facts.lookup("refund_window_days").startswith("UNKNOWN")
        assert tenants.get("default").database.schema == base  # type: ignore[attr-defined]
        assert tenants.get("acme").database.schema == f"{base}_t_acme"  # type: ignore[attr-defined]
        assert split_schema(postgres_url)[0].split("@")[0].split(":")[-1] not in tenants.where  # no password
    finally:
        tenants.close()
    with open_memory(with_schema(postgres_url, f"{base}_t_acme")) as acme:
        assert [r.text for r in acme.long_term.all(scope="c1")] == ["acme ships by sea"]


def _serve(url: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-m", "fourfold.cli", "--embedder", "hash", "serve", "--store", url, "--port", str(port),
         "--query-model", "exact"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def _call(port: int, method: str, path: str, body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "exited")
        try:
            _call(port, "GET", "/healthz")
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the service did not start")


def test_a_live_service_answering_many_503s_keeps_answering(tmp_path: Path) -> None:
    """The service logs every 5xx; `LiveService` once gave it a stderr pipe nobody read, so
    after ~64 KiB of those logs (about 80 answers while PostgreSQL was down) the service
    stopped answering and clients timed out (a flaky ReadTimeout in the restart test)."""
    import httpx

    from fourfold.service.testing import LiveService

    with PostgresServer() as server, LiveService(tmp_path / "svc", store=server.url, startup_timeout=120) as live:
        server.pause()
        with httpx.Client(base_url=live.url, timeout=20) as client:
            statuses = {client.post("/v1/memories/search", json={"query": "q", "scope": "c1"}).status_code
                        for _ in range(150)}
            server.resume()
            assert client.post("/v1/memories", json={"text": "prefers parcels", "scope": "c1"}).status_code == 201
        assert statuses == {503}
        assert "store_unavailable" in live.log()


@pytest.mark.slow
def test_two_service_replicas_on_one_database_read_each_others_writes(postgres_url: str) -> None:
    from fourfold.testing.chroma_server import free_port

    ports = [free_port(), free_port()]
    procs = [_serve(postgres_url, port) for port in ports]
    try:
        for port, proc in zip(ports, procs, strict=True):
            _wait(port, proc)
        written = _call(ports[0], "POST", "/v1/memories", {"text": "prefers parcels to Oslo", "scope": "c1"})
        mid = written["id"]  # type: ignore[index]
        hits = _call(ports[1], "POST", "/v1/memories/search", {"query": "parcels Oslo", "scope": "c1"})
        assert [h["id"] for h in hits["results"]] == [mid]  # type: ignore[index]
        _call(ports[1], "DELETE", f"/v1/memories/{mid}")
        hits = _call(ports[0], "POST", "/v1/memories/search", {"query": "parcels Oslo", "scope": "c1"})
        assert hits["results"] == []  # type: ignore[index]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)


def _topic_text(i: int) -> str:
    words = ["invoice", "parcel", "refund", "login", "printer", "router", "courier", "password", "warranty", "upgrade"]
    return f"customer {i} asked about the {words[i % 10]} and the {words[(i * 7) % 10]} on day {i % 31} of case {i}"


def test_a_large_scope_ranks_candidates_as_the_whole_scope_would(postgres_url: str) -> None:
    """Past `large_at` records a scope is searched through pgvector and full-text candidates;
    fourfold's ranking of them agrees with an exact search of the whole scope."""
    from fourfold.longterm import LongTermMemory
    from fourfold.longterm.retrieval import ScopeIndex
    from fourfold.stores.pgvector import PostgresVectorStore

    embedder = HashEmbedder()
    db = PostgresDatabase(postgres_url)
    try:
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=400)
        memory = LongTermMemory(store, embedder)
        memory.remember_many([{"text": _topic_text(i), "scope": "shared"} for i in range(600)])
        memory.remember_many([{"text": _topic_text(i), "scope": "small"} for i in range(50)])
        assert store.is_large("shared") and not store.is_large("small")
        late = memory.remember("customer 9999 asked about the zeppelin", scope="shared")  # after promotion
        exact = ScopeIndex(store.scan("shared"), embedder.dimension)
        queries = ["refund for the parcel", "login password reset", "printer warranty on day 3", "zeppelin"]
        overlap = 0
        for query in queries:
            got = [r.id for r in memory.recall(query, scope="shared", k=10)]
            want = [r.id for r, _ in exact.search(embedder.embed(query), query, k=10, keep=lambda r: True)]
            overlap += len(set(got) & set(want))
        assert overlap >= 0.9 * 10 * len(queries)
        assert memory.recall("zeppelin", scope="shared", k=1)[0].id == late
        memory.warm(["shared", "small"])  # a large scope is never read whole into the cache
        assert "shared" not in memory._indexes and "small" in memory._indexes
        memory.forget(late)
        assert all(r.id != late for r in memory.recall("zeppelin", scope="shared", k=10))
        assert memory.forget_scope("shared") == 600 and not store.is_large("shared")
    finally:
        db.close()


def test_a_narrow_where_on_a_large_scope_finds_every_match_in_exact_order(postgres_url: str) -> None:
    """A filter that few records of a large scope pass, none of them near the query, still
    returns them all (up to k), ranked as an exact search over the scope's matches ranks them."""
    from fourfold.longterm import LongTermMemory
    from fourfold.longterm.retrieval import ScopeIndex
    from fourfold.longterm.where import compile_where, fields_of
    from fourfold.ranking import Background
    from fourfold.stores.pgvector import PostgresVectorStore

    embedder = HashEmbedder()
    db = PostgresDatabase(postgres_url)
    try:
        # More records than the candidates (200 nearest, 200 by each word query), so candidates miss some.
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=1000)
        store.matching_batch = 300  # the matches are ranked across several batches
        memory = LongTermMemory(store, embedder)
        items: list[dict[str, object]] = [{"text": _topic_text(i), "scope": "shared"} for i in range(1300)]
        for j in range(8):
            items.insert(150 * j + 7, {"text": f"zeppelin hangar {j} logged a {['refund', 'valve', 'sensor'][j % 3]} fault",
                                       "scope": "shared", "metadata": {"product": "airship", "rank": j}})
        memory.remember_many(items)
        assert store.is_large("shared")
        exact = ScopeIndex(store.scan("shared"), embedder.dimension)  # typicality with the scope's kept vector sum
        query = "customer asked about the refund"
        vector = embedder.embed(query)
        null = Background.of(embedder).null(vector)
        for where, k in [({"product": "airship"}, 10), ({"product": "airship"}, 5), ({"rank": {"$in": [2, 5]}}, 3)]:
            match = compile_where(where)
            want = exact.search(vector, query, k=k, keep=lambda r, match=match: match(fields_of(r)), null=null)
            got = memory.recall(query, scope="shared", k=k, where=where)
            assert [r.id for r in got] == [r.id for r, _ in want]
            assert [r.score for r in got] == pytest.approx([s for _, s in want], abs=1e-5)
        assert len(memory.recall(query, scope="shared", k=10, where={"product": "airship"})) == 8
        assert memory.recall(query, scope="shared", k=3, where={"product": "bicycle"}) == []
    finally:
        db.close()


def test_records_holding_every_common_query_word_are_candidates(postgres_url: str) -> None:
    """When every query word is too common to rank its records (all exceed `lexical_rows`), the
    records whose own words hold all of them (and, when asked, all but one) are still offered by words,
    even with no nearest vectors asked for; a store promoted before those own words were kept
    gets them when it is opened."""
    from fourfold.longterm import LongTermMemory
    from fourfold.stores.pgvector import PostgresVectorStore

    embedder = HashEmbedder()
    db = PostgresDatabase(postgres_url)
    try:
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=300)
        memory = LongTermMemory(store, embedder)
        items: list[dict[str, object]] = [{"text": _topic_text(i), "scope": "shared"} for i in range(360)]
        needles = {3: "the courier lost the parcel and owes a refund", 150: "a refund for the parcel the courier broke",
                   300: "courier and parcel, no refund asked"}
        partial = "the courier brought the parcel"  # two of the query's three words
        for at, text in sorted({**needles, 200: partial}.items(), reverse=True):
            items.insert(at, {"text": text, "scope": "shared"})
        written = memory.remember_many(items)
        assert store.is_large("shared")
        wanted = {r.id for r in written if r.text in needles.values()}
        near = next(r.id for r in written if r.text == partial)
        store.lexical_rows = 10  # each of the query's words is held by more records than this
        query = "courier parcel refund"

        def offered(s: PostgresVectorStore) -> set[str]:
            return {r.id for r in s.candidates("shared", embedder.embed(query), query, dense=0, lexical=50)[0]}

        found = offered(store)
        assert wanted <= found and near not in found
        held = {r.id: sum(w in r.text for w in ("courier", "parcel", "refund")) for r in store.scan("shared")}
        assert all(held[i] == 3 for i in found)
        store.partial_rows = 100  # and those holding all but one
        assert wanted | {near} <= offered(store) and all(held[i] >= 2 for i in offered(store))
        store.partial_rows = 0
        with db.write() as conn:  # as a store promoted before own_terms existed
            conn.execute("DROP INDEX memories_own_terms")
            conn.execute("ALTER TABLE memories DROP COLUMN own_terms")
        reopened = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=300)
        reopened.lexical_rows = 10
        assert offered(reopened) == found
    finally:
        db.close()


def test_a_large_scopes_document_frequencies_follow_its_writes_and_forgets(postgres_url: str) -> None:
    """The per-scope term counts kept at write time equal a count over the stored features,
    after promotion, later writes and forgets; another process opening the store sees them.
    They are read as a query reads them, with its candidates."""
    from fourfold.longterm import LongTermMemory
    from fourfold.stores.pgvector import PostgresVectorStore
    from fourfold.text import tokenize

    embedder = HashEmbedder()
    db = PostgresDatabase(postgres_url)
    try:
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=300)
        memory = LongTermMemory(store, embedder)
        ids = memory.remember_many([{"text": _topic_text(i), "scope": "shared"} for i in range(320)])
        memory.remember_many([{"text": _topic_text(i), "scope": "small"} for i in range(20)])
        assert store.is_large("shared")
        memory.remember("customer 9999 asked about the zeppelin and the parcel", scope="shared")
        for gone in ids[100:110]:
            memory.forget(gone.id)
        query = "zeppelin xylophone customer parcel invoice 9999"
        terms = tokenize(query)

        def statistics(s: PostgresVectorStore, scope: str = "shared") -> tuple[dict[str, float], float, npt.NDArray[np.float32] | None]:
            """The query's words' document frequencies, the scope's mean length and vector sum."""
            found = s.candidates(scope, embedder.embed(query), query, dense=0, lexical=0)
            return found.df, found.mean_length, found.total

        def document_frequencies(s: PostgresVectorStore, scope: str = "shared") -> dict[str, float]:
            return statistics(s, scope)[0]

        def counted() -> dict[str, float]:
            with db.read() as conn:
                return {t: float(conn.execute(
                    "SELECT count(*) FROM memories WHERE scope = 'shared' AND jsonb_exists(context, CAST(? AS text))", (t,)
                ).fetchone()[0]) for t in terms}

        kept = document_frequencies(store)
        assert kept == counted()
        zeppelin, absent, customer = terms[:3]
        assert kept[zeppelin] > 0 and kept[absent] == 0 and kept[customer] > 200
        other = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=300)
        assert document_frequencies(other) == kept
        with db.read() as conn:  # BM25's mean length, kept at write time, is the mean over the rows
            mean = conn.execute("SELECT avg(length) FROM memories WHERE scope = 'shared'").fetchone()[0]
        assert statistics(other)[1] == pytest.approx(mean, rel=1e-9)
        # the sum of the blended vectors (typicality's), kept at write time, is the sum over the rows
        def summed_rows() -> npt.NDArray[np.float64]:
            with db.read() as conn:
                stored = [np.frombuffer(row[0], dtype=">f4", offset=4) for row in conn.execute(
                    "SELECT ann FROM memories WHERE scope = 'shared'")]
            return np.sum(stored, axis=0, dtype=np.float64)

        summed = summed_rows()
        assert statistics(other)[2] == pytest.approx(summed, rel=1e-6, abs=1e-5)
        with db.write() as conn:  # as a store promoted before its statistics were kept: counted when opened
            conn.execute("ALTER TABLE large_scopes DROP COLUMN total_ann")
            conn.execute("ALTER TABLE large_scopes DROP COLUMN total_length")
            conn.execute("DROP TABLE large_terms")
        reopened = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=300)
        assert statistics(reopened)[2] == pytest.approx(summed, abs=1e-4)
        assert statistics(reopened)[1] == pytest.approx(mean, rel=1e-9)
        assert document_frequencies(reopened) == kept
        with db.write() as conn:  # a promotion that did not finish: rows indexed, the scope not yet large
            conn.execute("DELETE FROM large_scopes WHERE scope = 'shared'")
        reopened.promote("shared")  # its totals are those of the rows, not of what this run changed
        assert statistics(reopened)[2] == pytest.approx(summed_rows(), rel=1e-6, abs=1e-5)
        with db.read() as conn:
            mean = conn.execute("SELECT avg(length) FROM memories WHERE scope = 'shared'").fetchone()[0]
        assert statistics(reopened)[1] == pytest.approx(mean, rel=1e-9)
        assert document_frequencies(reopened) == counted()
        assert document_frequencies(store, "small") == dict.fromkeys(terms, 0.0)  # small scopes keep none
        memory.forget_scope("shared")
        assert document_frequencies(store) == dict.fromkeys(terms, 0.0)
    finally:
        db.close()


def test_doctor_checks_a_postgresql_database(
    postgres_server: PostgresServer, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from fourfold.cli import main

    assert main(["--store", postgres_url, "doctor"]) == 0
    assert "healthy" in capsys.readouterr().out
    wrong = postgres_url.replace(postgres_server.password, "N0tThePassw0rd")
    assert main(["--store", wrong, "doctor"]) == 1
    out = capsys.readouterr().out
    assert "problem:" in out and "cannot reach PostgreSQL" in out and "N0tThePassw0rd" not in out


@pytest.mark.slow
def test_the_service_benchmark_on_two_replicas_reads_every_write_back_through_the_other() -> None:
    """`benchmarks/service.py --store postgres --replicas 2` starts its own PostgreSQL and two services."""
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "service.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, str(bench), "--duration", "2", "--clients", "4", "--embedder", "hash",
                          "--tenants", "2", "--seed", "20", "--rate", "20", "--open-s", "4",
                          "--store", "postgres", "--replicas", "2"],
                         capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stderr[-800:]
    assert "store PostgreSQL, 2 replica(s)" in out.stdout
    assert out.stdout.count("peak memory (VmHWM): service") == 2
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("service: rps=") and last.endswith("errors=0 lost=0 stale=0"), last


def test_a_reader_on_a_mistyped_schema_is_an_error_and_creates_nothing(
    open_memory: OpenMemory, postgres_server: PostgresServer, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from fourfold.cli import main

    typo = postgres_url + "x"
    assert main(["--store", typo, "list"]) == 1
    err = capsys.readouterr().err
    assert "no fourfold store at" in err and "?schema=" in err and postgres_server.password not in err
    schema = split_schema(typo)[1]
    with psycopg.connect(postgres_server.url) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)).fetchone()
    assert found is None
    with pytest.raises(StoreUnavailable):
        open_memory(typo, create=False)
    with open_memory(typo) as mem:  # a writer creates it
        mem.long_term.remember("Prefers email", scope="customer:1")
    with open_memory(typo, create=False) as mem:
        assert [r.text for r in mem.long_term.all(scope="customer:1")] == ["Prefers email"]


def test_a_large_scopes_term_weights_stay_uncompressed_in_the_row(postgres_url: str) -> None:
    """A query reads a few term weights from each candidate: they are kept in the row without
    compression (a compressed value was decompressed once per query word), also in a store
    made before, once it is opened again and its rows are written."""
    from fourfold.longterm import LongTermMemory
    from fourfold.stores.pgvector import PostgresVectorStore

    embedder = HashEmbedder()
    db = PostgresDatabase(postgres_url)

    def inline() -> list[tuple[int, bool]]:
        with db.read() as conn:
            return [(int(size), bool(same)) for size, same in conn.execute(
                "SELECT pg_column_size(context), pg_column_size(context) = pg_column_size(context || '{}'::jsonb)"
                " FROM memories WHERE scope = 'shared' AND context IS NOT NULL"
            )]

    try:
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=40)
        memory = LongTermMemory(store, embedder)
        # ~30 distinct words a memory, ~9 memories' words a row: weights of ~2.5 KB, past the 2 KB
        # from which PostgreSQL compresses a row's long values by default
        words = [f"w{i}x{j}" for i in range(60) for j in range(30)]
        memory.remember_many([{"text": " ".join(words[30 * i:30 * i + 30]), "scope": "shared"} for i in range(60)])
        assert store.is_large("shared")
        rows = inline()
        assert len(rows) == 60 and all(same for _, same in rows) and max(size for size, _ in rows) > 2100
        with db.write() as conn:  # as a store made before: compressed weights
            conn.execute("ALTER TABLE memories ALTER COLUMN context SET STORAGE EXTENDED")
            conn.execute("ALTER TABLE memories RESET (toast_tuple_target)")
            conn.execute("UPDATE memories SET context = context || '{}'::jsonb WHERE scope = 'shared'")
        assert not all(same for _, same in inline())
        PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=40)
        store.promote("shared")  # the rows written again
        assert all(same for _, same in inline())
    finally:
        db.close()
