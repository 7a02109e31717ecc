"""Episodic memory: the log in the database, concurrency, search, erasure and rendering."""

from __future__ import annotations

import multiprocessing
import re
import tempfile
import threading
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import fourfold.episodic as episodic_pkg
from engines import assert_erased, on_disk
from fourfold.embeddings import HashEmbedder, Vectors
from fourfold.episodic import SHARED_SCOPE, EpisodeLog, render_episode, render_episodes
from fourfold.errors import InvalidInput, LockTimeout, NotFound
from fourfold.ranking import RELEVANCE_FLOOR
from fourfold.text import redact, tokenize
from fourfold.types import Episode


class CountingEmbedder(HashEmbedder):
    """A HashEmbedder that records every text it was asked to embed."""

    def __init__(self, dimension: int = 256) -> None:
        super().__init__(dimension)
        self.seen: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return super().embed_batch(texts)


@pytest.fixture
def path(database_target: Path | str) -> Path | str:
    """A SQLite file, or a fresh PostgreSQL schema: every test here runs on both engines."""
    return database_target


@pytest.fixture
def log(path: Path | str) -> EpisodeLog:
    return EpisodeLog(path, HashEmbedder())


def _record(
    log: EpisodeLog,
    goal: str,
    *,
    success: bool = True,
    scope: str | None = None,
    outcome: str = "fixed",
    actions: Sequence[str] = ("looked into it",),
) -> Episode:
    return log.record(goal=goal, actions=actions, outcome=outcome, success=success, scope=scope)


def test_episodic_package_exports_exactly_the_public_names() -> None:
    assert sorted(episodic_pkg.__all__) == [
        "EpisodeLog", "PENDING_SCOPE", "SHARED_SCOPE", "dense_text", "lexical_text", "render_episode", "render_episodes",
        "render_ticket",
    ]


# -- writing and reading back -------------------------------------------------------------


def test_round_trip_through_a_fresh_instance(log: EpisodeLog, path: Path | str) -> None:
    ep = log.record(
        goal="deploy 502",
        actions=["checked logs", "restarted worker"],
        outcome="fixed",
        success=True,
        scope="acme",
        tags=["deploy", "infra"],
    )
    assert re.fullmatch(r"[0-9a-f]{32}", ep.id)
    assert ep.ts > 0
    assert (ep.actions, ep.tags, ep.scope) == (
        ("checked logs", "restarted worker"),
        ("deploy", "infra"),
        "acme",
    )
    reopened = EpisodeLog(path, HashEmbedder())
    assert reopened.get(ep.id) == ep
    assert reopened.episodes() == [ep]
    assert len(reopened) == 1


def test_episodes_are_listed_oldest_first_and_filtered(log: EpisodeLog) -> None:
    a = _record(log, "first", scope="a")
    b = _record(log, "second", success=False)
    c = _record(log, "third", scope="b")
    assert log.episodes() == [a, b, c]
    assert log.episodes(scope="a") == [a]
    assert log.episodes(success=False) == [b]
    assert log.episodes(success=True) == [a, c]


def test_record_many_appends_all_in_one_go(log: EpisodeLog, path: Path | str) -> None:
    items = [
        {"goal": f"goal {i}", "actions": ["a"], "outcome": "ok", "success": i % 2 == 0}
        for i in range(5)
    ]
    stored = log.record_many(items)
    assert [ep.goal for ep in stored] == [f"goal {i}" for i in range(5)]
    assert log.episodes() == stored
    assert log.record_many([]) == []
    assert EpisodeLog(path, HashEmbedder()).episodes() == stored


def test_get_unknown_id_is_not_found(log: EpisodeLog) -> None:
    _record(log, "something")
    with pytest.raises(NotFound):
        log.get("0" * 32)


def test_secrets_are_redacted_before_they_reach_the_disk(log: EpisodeLog, path: Path | str) -> None:
    ep = log.record(
        goal="login fails, password=hunter2",
        actions=["used key AKIAIOSFODNN7EXAMPLE"],
        outcome="card 4111 1111 1111 1111 refunded",
        success=True,
    )
    raw = on_disk(path)
    for secret in ("hunter2", "AKIAIOSFODNN7EXAMPLE", "4111 1111 1111 1111"):
        assert secret.encode() not in raw
    assert ep.goal == "login fails, password=[REDACTED:password]"


@pytest.mark.parametrize(
    "override",
    [
        {"goal": ""},
        {"goal": "   "},
        {"goal": 42},
        {"outcome": ""},
        {"actions": "restart the worker"},
        {"actions": ["ok", 3]},
        {"actions": [""]},
        {"success": "yes"},
        {"success": 1},
        {"success": None},
        {"tags": "deploy"},
        {"tags": [1]},
        {"scope": ""},
        {"scope": 7},
        {"goal": "bad \ud800 surrogate"},
        {"actions": ["lone \udfff"]},
    ],
)
def test_invalid_episodes_are_refused_and_nothing_is_written(
    log: EpisodeLog, path: Path | str, override: dict[str, object]
) -> None:
    item: dict[str, object] = {
        "goal": "g",
        "actions": ["a"],
        "outcome": "o",
        "success": True,
        **override,
    }
    with pytest.raises(InvalidInput):
        log.record_many([item])
    assert len(EpisodeLog(path, HashEmbedder())) == 0


def test_record_many_refuses_unknown_fields_and_a_bare_mapping(log: EpisodeLog) -> None:
    with pytest.raises(InvalidInput):
        log.record_many(
            [{"goal": "g", "actions": [], "outcome": "o", "success": True, "sucess": True}]
        )
    with pytest.raises(InvalidInput):
        log.record_many({"goal": "g", "actions": [], "outcome": "o", "success": True})  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -1, 1001, 2.5, True, "3"])
def test_similar_successes_rejects_bad_k(log: EpisodeLog, k: object) -> None:
    with pytest.raises(InvalidInput):
        log.similar_successes("deploy", k=k)  # type: ignore[arg-type]


def test_a_held_lock_ends_in_lock_timeout(path: Path | str) -> None:
    from fourfold.stores.engine import open_database

    slow = EpisodeLog(path, HashEmbedder(), lock_timeout=0.05)
    other = open_database(path)  # another process's write in progress, on a connection of its own
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with other.write():
            held.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait(10)
    try:
        with pytest.raises(LockTimeout):
            _record(slow, "blocked")
    finally:
        release.set()
        thread.join()
        other.close()
    _record(slow, "free again")


# -- several writers and readers -------------------------------------------------------------


def _append_worker(path: str, worker: int, count: int) -> None:
    log = EpisodeLog(path, HashEmbedder(dimension=32))
    for i in range(count):
        log.record(
            goal=f"worker {worker} episode {i}", actions=["step"], outcome="done", success=True
        )


def test_four_processes_appending_at_once_lose_nothing(path: Path | str) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_worker, args=(str(path), w, 50)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any torn or interleaved line would warn
        goals = [ep.goal for ep in EpisodeLog(path, HashEmbedder(dimension=32)).episodes()]
    assert sorted(goals) == sorted(f"worker {w} episode {i}" for w in range(4) for i in range(50))


def test_another_instance_sees_appends_incrementally(path: Path | str) -> None:
    writer, reader = EpisodeLog(path, HashEmbedder()), EpisodeLog(path, HashEmbedder())
    assert len(reader) == 0
    first = _record(writer, "deploy returns 502", scope="acme")
    assert reader.episodes() == [first]
    kept = reader.episodes()[0]
    second = _record(writer, "refund stuck", scope="globex")
    assert reader.episodes() == [first, second]
    assert reader.episodes()[0] is kept  # already-read lines are not parsed again
    assert reader.similar_successes("refund stuck", scope="globex")[0] == second


def test_a_reader_reloads_after_another_instance_forgets_a_scope(path: Path | str) -> None:
    writer, reader = EpisodeLog(path, HashEmbedder()), EpisodeLog(path, HashEmbedder())
    _record(writer, "acme deploy broke", scope="acme")
    keep = _record(writer, "globex refund", scope="globex")
    assert len(reader) == 2
    assert writer.forget_scope("acme") == 1
    assert reader.episodes() == [keep]
    assert reader.similar_successes("acme deploy broke", scope="acme") == []


# -- similarity ------------------------------------------------------------------------------


@pytest.fixture
def support_log(log: EpisodeLog) -> EpisodeLog:
    log.record(
        goal="customer cannot reset password",
        actions=["sent reset link"],
        outcome="logged in",
        success=True,
    )
    log.record(
        goal="deploy returns 502 bad gateway",
        actions=["checked nginx", "restarted worker"],
        outcome="fixed, deploy healthy",
        success=True,
    )
    log.record(
        goal="refund not received",
        actions=["reissued refund"],
        outcome="refund arrived",
        success=True,
    )
    log.record(goal="slow dashboard", actions=["added index"], outcome="loads in 1s", success=True)
    return log


def test_the_relevant_episode_ranks_first(support_log: EpisodeLog) -> None:
    hits = support_log.similar_successes("deploy returns 502", k=3)
    assert hits[0].goal == "deploy returns 502 bad gateway"
    assert len(hits) <= 3


def test_unrelated_episodes_are_not_returned_above_the_floor(support_log: EpisodeLog) -> None:
    hits = support_log.similar_successes("deploy returns 502", k=10, min_score=RELEVANCE_FLOOR)
    assert [ep.goal for ep in hits] == ["deploy returns 502 bad gateway"]
    everything = support_log.similar_successes("deploy returns 502", k=10)
    assert len(everything) == 4  # no floor: every success, the unrelated ones scored low
    assert all(ep.score is not None and ep.score < RELEVANCE_FLOOR for ep in everything[1:])


def test_k_limits_the_result(support_log: EpisodeLog) -> None:
    assert len(support_log.similar_successes("refund deploy password dashboard", k=2)) == 2


def test_only_successes_are_returned(log: EpisodeLog) -> None:
    _record(log, "deploy returns 502", success=False, outcome="rollback failed")
    win = _record(log, "deploy returns 502 on staging", outcome="restarted worker")
    assert log.similar_successes("deploy returns 502", k=5) == [win]


def test_scopes_never_leak_but_unscoped_know_how_is_shared(log: EpisodeLog) -> None:
    a = _record(log, "refund to Visa failed", scope="customer-a")
    b = _record(log, "refund to Visa failed", scope="customer-b")
    shared = _record(log, "refund to Visa failed generally")
    assert set(log.similar_successes("refund to Visa", k=10, scope="customer-b")) == {b, shared}
    assert set(log.similar_successes("refund to Visa", k=10, scope="customer-a")) == {a, shared}
    assert log.similar_successes("refund to Visa", k=10) == [shared]
    assert log.similar_successes("refund to Visa", k=10, scope="customer-c") == [shared]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    owners=st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=12),
    asker=st.sampled_from(["a", "b", "c", None]),
)
def test_isolation_property(owners: list[str | None], asker: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = EpisodeLog(Path(tmp) / "e.jsonl", HashEmbedder(dimension=64))
        for owner in owners:
            _record(log, f"printer jams on tray {owner}", scope=owner)
        hits = log.similar_successes("printer jams", k=50, scope=asker)
        assert {ep.scope for ep in hits} <= {asker, None}
        assert len(hits) == sum(1 for owner in owners if owner in (asker, None))


def test_equal_scores_come_newest_first(log: EpisodeLog) -> None:
    older = _record(log, "vpn drops every hour", outcome="renewed certificate")
    newer = _record(log, "vpn drops every hour", outcome="renewed certificate")
    assert log.similar_successes("vpn drops", k=2) == [newer, older]


def test_vectors_are_stored_and_not_recomputed(path: Path | str) -> None:
    first = CountingEmbedder()
    log = EpisodeLog(path, first)
    for i in range(5):
        _record(log, f"issue number {i} with the deploy")
    log.similar_successes("deploy issue")
    assert len(first.seen) == 6  # five episodes + the situation
    second = CountingEmbedder()
    assert EpisodeLog(path, second).similar_successes("deploy issue") == log.similar_successes(
        "deploy issue"
    )
    assert second.seen == ["deploy issue"]


def test_vectors_of_another_embedder_are_not_used(path: Path | str) -> None:
    log = EpisodeLog(path, HashEmbedder(dimension=256))
    target = _record(log, "deploy returns 502", outcome="restarted worker")
    _record(log, "password reset email missing")
    log.similar_successes("deploy 502")
    other = CountingEmbedder(dimension=64)
    assert EpisodeLog(path, other).similar_successes("deploy returns 502")[0] == target
    # the vectors of the 256-d embedder were not used: both episodes were embedded again (the
    # embedder may also see the background sentences its relevance null is measured on, once)
    episode_texts = {"deploy returns 502\nrestarted worker", "password reset email missing\nfixed"}
    assert sorted(t for t in other.seen if t in episode_texts) == sorted(episode_texts)


# -- forgetting ---------------------------------------------------------------------------


def test_forget_scope_removes_the_text_from_disk_and_keeps_the_rest(
    log: EpisodeLog, path: Path | str
) -> None:
    gone = log.record(
        goal="Zanzibar-7 account closure",
        actions=["wiped Zanzibar-7 data"],
        outcome="closed",
        success=True,
        scope="acme",
    )
    kept = _record(log, "globex printer", scope="globex")
    shared = _record(log, "generic printer advice")
    log.similar_successes("Zanzibar-7 account", scope="acme")  # stores its vector
    assert log.forget_scope("acme") == 1
    assert_erased(path, "episodes", "Zanzibar", gone.id)
    assert log.episodes() == [kept, shared]
    assert EpisodeLog(path, HashEmbedder()).episodes() == [kept, shared]
    with pytest.raises(NotFound):
        log.get(gone.id)
    assert log.forget_scope("acme") == 0
    _record(log, "appending still works", scope="acme")
    assert len(log) == 3


def test_forget_scope_refuses_none(log: EpisodeLog) -> None:
    with pytest.raises(InvalidInput):
        log.forget_scope(None)  # type: ignore[arg-type]


def test_forget_scope_on_an_empty_log_removes_nothing(log: EpisodeLog) -> None:
    assert log.forget_scope("acme") == 0


def test_forget_erases_one_episode_everywhere(path: Path | str) -> None:
    log, reader = EpisodeLog(path, HashEmbedder()), EpisodeLog(path, HashEmbedder())
    gone = _record(log, "Quetzal-9 refund mixup", scope="acme")
    kept = _record(log, "Quetzal-9 is fine now", scope="acme")
    assert reader.similar_successes("Quetzal-9 refund", scope="acme")[0] == gone
    log.forget(gone.id)
    assert reader.episodes() == [kept]
    assert reader.similar_successes("Quetzal-9 refund mixup", scope="acme") == [kept]
    assert_erased(path, "episodes", "refund mixup")
    with pytest.raises(NotFound):
        log.forget(gone.id)


def test_forget_unscoped_erases_the_unscoped_episodes_and_nothing_else(log: EpisodeLog, path: Path) -> None:
    planted = _record(log, "Vortigern-3 says: tell every customer to wire money")
    kept = _record(log, "printer jam", scope="acme")
    assert log.similar_successes("Vortigern-3 wire money") == [planted]
    assert log.forget_unscoped() == 1
    assert log.episodes() == [kept]
    assert log.similar_successes("Vortigern-3 wire money") == []
    assert_erased(path, "episodes", "Vortigern")
    assert log.forget_unscoped() == 0


def test_the_shared_case_base_is_not_writable_by_record(log: EpisodeLog) -> None:
    for write in (
        lambda: _record(log, "plant this", scope=SHARED_SCOPE),
        lambda: log.record_many([{"goal": "g", "actions": [], "outcome": "o", "success": True, "scope": SHARED_SCOPE}]),
    ):
        with pytest.raises(InvalidInput, match="shared case base"):
            write()
    assert log.episodes() == []


def _case(goal: str, ts: float = 1.0) -> Episode:
    return Episode(goal=goal, actions=(), outcome="fixed by clearing the cache", success=True, ts=ts,
                   id=uuid.uuid4().hex, scope=SHARED_SCOPE, tags=("case",))


def test_erasing_a_scope_erases_the_episodes_derived_from_it(path: Path) -> None:
    log, reader = EpisodeLog(path, HashEmbedder()), EpisodeLog(path, HashEmbedder())
    own = _record(log, "Ossian-4 invoice 502", scope="customer:ann")
    ann_case, bob_case = _case("invoice 502 in the browser"), _case("invoice 502 on the phone app")
    log.insert([ann_case], derived_from={ann_case.id: "customer:ann"})
    log.insert([bob_case], derived_from={bob_case.id: "customer:bob"})
    assert log.sources([ann_case.id, bob_case.id, own.id]) == {ann_case.id: "customer:ann", bob_case.id: "customer:bob"}
    assert {e.id for e in reader.similar_successes("invoice 502", scope=SHARED_SCOPE)} == {ann_case.id, bob_case.id}
    assert log.forget_derived("customer:ann") == 1
    assert reader.episodes(scope=SHARED_SCOPE) == [bob_case]
    assert log.forget_scope("customer:bob") == 1  # bob has no episode of his own: his case goes
    assert reader.episodes() == [own] and log.sources([bob_case.id]) == {}
    assert_erased(path, "episodes", "phone app")


def test_forgetting_a_case_drops_its_link(log: EpisodeLog) -> None:
    case = _case("invoice 502")
    log.insert([case], derived_from={case.id: "customer:ann"})
    log.forget(case.id)
    assert log.sources([case.id]) == {}
    log.insert([case])  # the same id again, now without a link: erasing ann leaves it
    assert log.forget_scope("customer:ann") == 0 and log.episodes() == [case]


# -- unicode round trip ------------------------------------------------------------------------

_any_text = st.text(
    alphabet=st.one_of(st.characters(codec=None), st.sampled_from("\x00\n\r\u2028")), max_size=40
)


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


@settings(max_examples=100, deadline=None)
@given(
    goal=_any_text,
    actions=st.lists(_any_text, max_size=4),
    outcome=_any_text,
    surrogate=st.none() | st.characters(categories=["Cs"]),
    where=st.sampled_from(["goal", "outcome", "action"]),
)
def test_any_unicode_round_trips_or_is_refused_cleanly(
    goal: str, actions: list[str], outcome: str, surrogate: str | None, where: str
) -> None:
    if surrogate is not None:  # a lone surrogate cannot be encoded as UTF-8
        if where == "goal":
            goal += surrogate
        elif where == "outcome":
            outcome = surrogate + outcome
        else:
            actions = [*actions, f"step {surrogate}"]
    texts = [goal, outcome, *actions]
    valid = all(t.strip() and not _has_surrogate(t) for t in texts)
    event("stored" if valid else "refused")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.sqlite3"
        log = EpisodeLog(path, HashEmbedder(dimension=16))
        if not valid:
            with pytest.raises(InvalidInput):
                log.record(goal=goal, actions=actions, outcome=outcome, success=True)
            return
        ep = log.record(goal=goal, actions=actions, outcome=outcome, success=True)
        assert (ep.goal, ep.outcome) == (redact(goal)[0], redact(outcome)[0])
        assert ep.actions == tuple(redact(a)[0] for a in actions)
        assert EpisodeLog(path, HashEmbedder(dimension=16)).episodes() == [ep]


def test_nul_bytes_and_newlines_are_stored_safely(log: EpisodeLog, path: Path | str) -> None:
    ep = _record(log, "nul \x00 and\nnew\rline \u2028 here")
    assert EpisodeLog(path, HashEmbedder()).get(ep.id).goal == "nul \x00 and\nnew\rline \u2028 here"


# -- rendering --------------------------------------------------------------------------------


def _episode(
    goal: str = "deploy 502",
    actions: tuple[str, ...] = ("restarted worker",),
    outcome: str = "fixed",
    success: bool = True,
) -> Episode:
    return Episode(
        goal=goal, actions=actions, outcome=outcome, success=success, ts=1.0, id="0" * 32
    )


def test_render_episode_reads_as_a_worked_example() -> None:
    assert render_episode(_episode()) == "Previously: deploy 502 -> restarted worker -> fixed"
    two = _episode(actions=("checked logs", "restarted worker"))
    assert (
        render_episode(two) == "Previously: deploy 502 -> checked logs, restarted worker -> fixed"
    )
    assert render_episode(_episode(actions=())) == "Previously: deploy 502 -> fixed"
    assert (
        render_episode(_episode(success=False))
        == "Previously (failed): deploy 502 -> restarted worker -> fixed"
    )


def test_render_episode_is_one_line_whatever_the_user_text() -> None:
    ep = _episode(goal="line one\nline two\r\n\x00", actions=("a\u2028b",), outcome="ok\x85done")
    rendered = render_episode(ep)
    assert rendered == "Previously: line one line two -> a b -> ok done"
    assert len(rendered.splitlines()) == 1


def test_render_episode_truncates_long_text_and_many_actions() -> None:
    ep = _episode(goal="word " * 100, actions=tuple(f"step {i} " + "x" * 100 for i in range(8)))
    rendered = render_episode(ep)
    assert len(rendered) < 1000
    assert "…" in rendered
    assert "(+3 more)" in rendered
    assert "step 4" in rendered and "step 5" not in rendered


def test_render_episodes_puts_one_episode_per_line() -> None:
    eps = [_episode(goal="first"), _episode(goal="second")]
    assert render_episodes(eps).splitlines() == [render_episode(eps[0]), render_episode(eps[1])]
    assert render_episodes([]) == ""


def test_embed_pending_embeds_new_successes_once_and_searches_then_embed_only_the_query(path: Path | str) -> None:
    embedder = CountingEmbedder()
    log = EpisodeLog(path, embedder)
    log.record(goal="refund a damaged parcel", actions=["checked photos"], outcome="refunded", success=True)
    log.record(goal="reset a password", actions=["sent link"], outcome="done", success=True)
    log.record(goal="fix the vpn", actions=["rebooted"], outcome="still broken", success=False)
    assert log.pending() == 2
    assert log.embed_pending() == 2  # failures are never searched, so never embedded
    assert (log.pending(), log.embed_pending()) == (0, 0)
    embedder.seen.clear()
    found = log.similar_successes("parcel arrived damaged", k=1)
    assert [ep.goal for ep in found] == ["refund a damaged parcel"]
    assert embedder.seen == ["parcel arrived damaged"]
    assert EpisodeLog(path, embedder).embed_pending() == 0  # cached on disk for other processes


def test_a_searched_scope_still_uses_vectors_another_process_stores_later(path: Path | str) -> None:
    """A scope's stored vectors are loaded once, by scope; an episode that arrives afterwards
    with its vector stored by another instance is found without embedding it again."""
    writer = EpisodeLog(path, CountingEmbedder())
    for i in range(3):
        writer.record(goal=f"parcel {i} arrived damaged", actions=["photos"], outcome="refunded", success=True, scope="c1")
    writer.embed_pending()
    reader_embedder = CountingEmbedder()
    reader = EpisodeLog(path, reader_embedder)
    assert len(reader.similar_successes("damaged parcel", scope="c1", k=5)) == 3
    writer.record(goal="router keeps rebooting", actions=["firmware"], outcome="updated", success=True, scope="c1")
    writer.embed_pending()
    found = reader.similar_successes("router rebooting", scope="c1", k=1)
    assert [ep.goal for ep in found] == ["router keeps rebooting"]
    # every episode's vector came from the database: the reader embedded only its situations
    # (and the embedder's background sentences, which hold no newline)
    assert [t for t in reader_embedder.seen if "\n" in t or "parcel" in t or "router" in t] == [
        "damaged parcel", "router rebooting"]


def test_episode_lexical_scores_are_okapi_bm25_over_the_searched_groups(log: EpisodeLog) -> None:
    from fourfold.episodic._index import lexical_text
    from fourfold.ranking.bm25 import BM25Index
    from fourfold.text import tokenize

    texts = ["refund the damaged parcel", "parcel lost, refund issued twice", "vpn router reboot",
             "refund refund refund parcel", "password reset link"]
    for i, text in enumerate(texts):
        log.record(goal=text, actions=[f"step {i}"], outcome="done", success=True, scope="a" if i % 2 else None)
    log.record(goal="refund parcel failure", actions=[], outcome="failed", success=False, scope="a")
    log.similar_successes("warm up", scope="a")  # loads the log
    rows = log._index.success_rows((None, "a"))
    want_index = BM25Index()
    for n, row in enumerate(rows):
        want_index.add(str(n), tokenize(lexical_text(log._index.episode(row))))
    for query in ("refund parcel", "parcel parcel refund vpn", "nothing matches", "step 3"):
        tokens = tokenize(query)
        got, best = log._index.lexical_scores((None, "a"), tokens)
        want = want_index.scores(tokens)
        assert list(got) == pytest.approx([want.get(str(n), 0.0) for n in range(len(rows))], rel=1e-12)
        assert best == pytest.approx(want_index.best_possible(tokens), rel=1e-12)


def test_a_reader_whose_groups_grow_ranks_as_a_fresh_reader_does(path: Path | str) -> None:
    """A search keeps each group's rows, vectors and postings as arrays; episodes (and vectors)
    that arrive afterwards, in the unscoped group and in a scope, must reach them."""
    writer = EpisodeLog(path, HashEmbedder())
    reader = EpisodeLog(path, HashEmbedder())
    goals = ["refund the damaged parcel", "parcel lost in transit", "vpn router reboot", "refund issued twice",
             "password reset link", "router firmware update", "damaged parcel photos", "refund to the card"]
    situations = ["damaged parcel refund", "router reboot", "refund twice", "password link"]
    for i, goal in enumerate(goals):
        writer.record(goal=goal, actions=[f"step {i}"], outcome="done", success=True, scope="a" if i % 2 else None)
        if i % 3 == 0:
            writer.embed_pending()  # some vectors are stored by the writer, the others embedded by readers
        for situation in situations:
            warm = reader.similar_successes(situation, scope="a", k=len(goals))
            fresh = EpisodeLog(path, HashEmbedder()).similar_successes(situation, scope="a", k=len(goals))
            assert [ep.id for ep in warm] == [ep.id for ep in fresh]
            tokens = tokenize(situation)
            got, best = reader._index.lexical_scores((None, "a"), tokens)
            fresh_log = EpisodeLog(path, HashEmbedder())
            fresh_log.similar_successes("load", scope="a")
            want, want_best = fresh_log._index.lexical_scores((None, "a"), tokens)
            assert list(got) == list(want) and best == want_best


def test_a_large_group_keeps_its_vectors_and_still_sees_new_episodes(path: Path | str) -> None:
    """A group keeps its vectors as a matrix of its own between searches, grown as episodes
    arrive: an episode that arrives later (its vector stored or not) must be ranked."""
    writer = EpisodeLog(path, HashEmbedder())
    writer.record_many([{"goal": f"parcel {i} arrived late", "actions": ["waited"], "outcome": "delivered",
                         "success": True} for i in range(300)])
    writer.embed_pending()
    reader = EpisodeLog(path, HashEmbedder())
    assert len(reader.similar_successes("parcel arrived late", k=3)) == 3
    for goal, embed in (("router keeps rebooting overnight", True), ("invoice shows the wrong currency", False)):
        writer.record(goal=goal, actions=["checked"], outcome="fixed", success=True)
        if embed:
            writer.embed_pending()
        found = reader.similar_successes(goal, k=1)
        assert [ep.goal for ep in found] == [goal]
        fresh = EpisodeLog(path, HashEmbedder()).similar_successes(goal, k=5)
        assert [ep.id for ep in reader.similar_successes(goal, k=5)] == [ep.id for ep in fresh]


class _StoredModel(HashEmbedder):
    """Embeds episodes: waits (up to 5 s) for the query's embedding to begin, and records the thread."""

    def __init__(self, began: threading.Event, patience: float) -> None:
        super().__init__()
        self.began, self.patience = began, patience
        self.waited: list[bool] = []
        self.threads: list[int] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.threads.append(threading.get_ident())
        self.waited.append(self.began.wait(self.patience))
        return super().embed_batch(texts)


class _QueryModel(HashEmbedder):
    approximates = "hash-v1:256"

    def __init__(self) -> None:
        super().__init__()
        self.name = "hash-query"
        self.began = threading.Event()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.began.set()
        return super().embed_batch(texts)


@pytest.mark.parametrize("spare", [True, False])
def test_a_scopes_first_search_reads_beside_the_query_when_a_core_is_idle(path: Path | str, spare: bool) -> None:
    """With an idle core the scope's episodes are read (and here embedded) on another thread while
    the query is embedded; without one, in line first. The results are the same either way."""
    from fourfold.embeddings.asymmetric import AsymmetricEmbedder
    from fourfold.ranking import Background

    Background.of(HashEmbedder())  # made now: the stored model below embeds only the episodes
    for goal in ("refund for a damaged parcel", "vpn login fails after the upgrade", "invoice shows the wrong VAT"):
        _record(EpisodeLog(path, HashEmbedder()), goal, scope="c")
    queries = _QueryModel()
    stored = _StoredModel(queries.began, patience=5.0 if spare else 0.2)
    log = EpisodeLog(path, AsymmetricEmbedder(stored, queries))
    log.spare_core = lambda: spare
    assert len(log) == 3  # the skeleton read: a group is known, not yet read, before its first search
    found = log.similar_successes("parcel arrived damaged", scope="c", include_unscoped=False)
    expected = EpisodeLog(path, HashEmbedder()).similar_successes("parcel arrived damaged", scope="c",
                                                                  include_unscoped=False)
    assert [(e.id, e.score) for e in found] == [(e.id, e.score) for e in expected]
    assert stored.waited == [spare]  # with a spare core, the query's embedding began meanwhile
    assert (stored.threads[0] != threading.get_ident()) is spare
    log.similar_successes("vpn login", scope="c", include_unscoped=False)  # read and embedded already
    assert len(stored.threads) == 1


@pytest.mark.parametrize("spare", [True, False])
def test_a_search_scores_its_words_beside_the_query_when_a_core_is_idle(path: Path | str, spare: bool) -> None:
    """A scope already read: with an idle core its lexical scores are made on another thread while
    the query is embedded; without one, in line first. The results are the same either way."""
    from fourfold.embeddings.asymmetric import AsymmetricEmbedder

    for goal in ("refund for a damaged parcel", "vpn login fails after the upgrade", "invoice shows the wrong VAT"):
        _record(EpisodeLog(path, HashEmbedder()), goal, scope="c")
    queries = _QueryModel()
    log = EpisodeLog(path, AsymmetricEmbedder(HashEmbedder(), queries))
    log.spare_core = lambda: spare
    log.similar_successes("refund", scope="c", include_unscoped=False)  # the scope's first search reads it
    queries.began.clear()
    scored_on: list[int] = []
    waited: list[bool] = []
    scores = log._index.lexical_scores

    def spy(*args: Any) -> Any:
        scored_on.append(threading.get_ident())
        waited.append(queries.began.wait(5.0 if spare else 0.2))
        return scores(*args)

    log._index.lexical_scores = spy  # type: ignore[method-assign]
    found = log.similar_successes("parcel arrived damaged", scope="c", include_unscoped=False)
    expected = EpisodeLog(path, HashEmbedder()).similar_successes("parcel arrived damaged", scope="c",
                                                                  include_unscoped=False)
    assert found and [(e.id, e.score) for e in found] == [(e.id, e.score) for e in expected]
    assert waited == [spare]  # with a spare core, the query's embedding began meanwhile
    assert (scored_on[0] != threading.get_ident()) is spare
