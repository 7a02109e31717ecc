"""RemoteMemory: the library's conformance tests, run again over HTTP, plus parity checks.

The long-term suite is imported from test_longterm.py: its tests run here unchanged, with
`lt` bound to `RemoteMemory.long_term` talking to the service.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import OpenMemory
from fourfold import InvalidInput, NotFound, _wire, remote, remote_async
from fourfold.embeddings import HashEmbedder
from fourfold.remote import RemoteMemory, Unauthorized
from fourfold.remote_async import AsyncRemoteMemory
from fourfold.semantic.facts import UNKNOWN
from fourfold.service.app import create_app
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants
from fourfold.stores import InMemoryVectorStore
from fourfold.types import Remembered
from test_longterm import (  # noqa: F401  (collected here, against the remote `lt`)
    test_bad_input_is_refused_and_nothing_is_written,
    test_forget_scope_only_touches_that_scope,
    test_forget_unknown_id_is_not_found,
    test_hybrid_ranks_exact_identifier_match_first,
    test_ids_never_collide_after_a_delete,
    test_kinds_and_metadata_filters,
    test_remember_then_recall,
    test_same_text_same_scope_is_idempotent,
    test_scope_is_a_hard_filter_that_fails_closed,
    test_secrets_are_redacted_and_reported,
)

EMBEDDER = HashEmbedder()


class Served:
    def __init__(self, data_dir: Path, *, review_cases: bool = False) -> None:
        self.tenants = Tenants(data_dir, embedder=EMBEDDER,
                               vector_store=lambda _t: InMemoryVectorStore(embedder_identity=EMBEDDER.identity))
        self.keys = KeyStore(data_dir / "fourfold.sqlite3")
        self.client = TestClient(create_app(self.tenants, self.keys, mount_mcp=False, review_cases=review_cases))
        self.loops: list[asyncio.AbstractEventLoop] = []  # of the async clients, closed with the service

    def memory(self, tenant: str = "acme", key: str | None = None) -> RemoteMemory:
        client = TestClient(self.client.app)
        return RemoteMemory("http://testserver", api_key=key or self.keys.create(tenant, role="operator")[1],
                            client=client)

    def async_memory(self, tenant: str = "acme") -> Any:
        """An `AsyncRemoteMemory` on the app (in-process, over ASGI), seen through `Blocking`."""
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.client.app), base_url="http://testserver")
        loop = asyncio.new_event_loop()
        self.loops.append(loop)
        return Blocking(AsyncRemoteMemory("http://testserver", api_key=self.keys.create(tenant, role="operator")[1],
                                            client=client), loop)

    def close(self) -> None:
        for loop in self.loops:
            loop.close()
        self.tenants.close()
        self.keys.close()


class Blocking:
    """An async client seen through sync eyes: each awaited method runs to its end on `loop`, so
    the very tests written for the library and `RemoteMemory` run on `AsyncRemoteMemory` too."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target, self._loop = target, loop

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            return lambda *args, **kwargs: self._loop.run_until_complete(value(*args, **kwargs))
        if type(value).__module__ == remote_async.__name__:
            return Blocking(value, self._loop)
        return value

    def __len__(self) -> int:
        return int(self.count())




@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path / "served")
    yield s
    s.close()


@pytest.fixture(params=["remote", "async"])
def lt(request: pytest.FixtureRequest, served: Served) -> Any:
    """The long-term suite's `lt`: `RemoteMemory.long_term`, then `AsyncRemoteMemory.long_term`."""
    return served.memory().long_term if request.param == "remote" else served.async_memory().long_term


@pytest.fixture(params=["embedded", "remote", "async"])
def memory(request: pytest.FixtureRequest, open_memory: OpenMemory, served: Served) -> Iterator[Any]:
    """The same calls, against `Memory`, `RemoteMemory` and `AsyncRemoteMemory`."""
    if request.param == "remote":
        yield served.memory()
        return
    if request.param == "async":
        mem = served.async_memory()
        yield mem
        mem.close()
        return
    yield open_memory(embedder=EMBEDDER, vector_store=InMemoryVectorStore(embedder_identity=EMBEDDER.identity))


def test_remember_returns_a_memory_id_with_redactions(memory: Any) -> None:
    mid = memory.long_term.remember("card 4111 1111 1111 1111 is on file", scope="c")
    assert isinstance(mid, str) and mid.created and [r.kind for r in mid.redactions] == ["card_number"]
    assert "4111" not in memory.long_term.get(mid).text


def test_episodes_parity(memory: Any) -> None:
    ep = memory.episodes.record(goal="refund a damaged parcel", actions=["check photo", "refund"],
                                outcome="refunded", success=True, scope="c1", tags=("support",))
    assert memory.episodes.get(ep.id) == ep
    memory.episodes.record_many([{"goal": "g2", "actions": [], "outcome": "failed", "success": False}])
    (found,) = memory.episodes.similar_successes("damaged parcel refund", scope="c1")
    assert found.id == ep.id and ep.score is None
    assert isinstance(found.score, float) and 0.0 < found.score <= 1.0  # the relevance travels
    assert memory.episodes.similar_successes("damaged parcel refund", scope="c2") == []
    assert len(memory.episodes) == 2 and len(memory.episodes.episodes(success=False)) == 1
    with pytest.raises(NotFound):
        memory.episodes.get("nope")
    with pytest.raises(InvalidInput):
        memory.episodes.record(goal="", actions=[], outcome="o", success=True)
    with pytest.raises(InvalidInput):
        memory.episodes.similar_successes("x", k=0)


def test_episode_erasure_parity(memory: Any) -> None:
    gone = memory.episodes.record(goal="printer jam", actions=[], outcome="ok", success=True, scope="c1")
    memory.episodes.record(goal="scanner jam", actions=[], outcome="ok", success=True, scope="c1")
    memory.episodes.record(goal="planted", actions=[], outcome="ok", success=True)
    memory.episodes.forget(gone.id)
    with pytest.raises(NotFound):
        memory.episodes.forget(gone.id)
    assert memory.episodes.forget_scope("c1") == 1 and memory.episodes.forget_unscoped() == 1
    assert len(memory.episodes) == 0
    with pytest.raises(InvalidInput):
        memory.episodes.forget_scope(None)
    with pytest.raises(InvalidInput):
        memory.episodes.record(goal="g", actions=[], outcome="o", success=True, scope="shared:cases")


def test_facts_parity(memory: Any) -> None:
    fact = memory.facts.set("refund.window_days", 30, description="days")
    assert memory.facts.get("refund.window_days") == fact
    memory.facts.set("refund.window_days", {"card": 30, "cash": [7, None]})
    assert memory.facts.lookup("refund.window_days") == '{"card": 30, "cash": [7, null]}'
    assert [v for v, _ in memory.facts.history("refund.window_days")] == [30]
    assert memory.facts.keys() == ["refund.window_days"]
    assert memory.facts.tool_schema()["input_schema"]["properties"]["key"]["enum"] == ["refund.window_days"]
    for bad in ["nope", "bad key", 42, None, object()]:
        assert memory.facts.lookup(bad) == UNKNOWN
    for key in ["bad key", "", "a/b"]:
        with pytest.raises(InvalidInput):
            memory.facts.set(key, 1)
    with pytest.raises(InvalidInput):
        memory.facts.set("k", float("nan"))
    memory.facts.set("..", "dots are a valid key")
    assert memory.facts.get("..").value == "dots are a valid key"
    memory.facts.delete("refund.window_days")
    with pytest.raises(NotFound):
        memory.facts.get("refund.window_days")
    assert [v for v, _ in memory.facts.history("refund.window_days")][-1] == {"card": 30, "cash": [7, None]}
    memory.facts.delete("refund.window_days", purge=True)  # the history goes too
    assert memory.facts.history("refund.window_days") == []
    with pytest.raises(NotFound):
        memory.facts.delete("refund.window_days", purge=True)


def test_where_parity(memory: Any) -> None:
    memory.long_term.remember("Prefers email over phone", scope="c", metadata={"channel": "email", "priority": 3})
    memory.long_term.remember("Lives near the Lyon warehouse", scope="c", metadata={"priority": 1})
    memory.long_term.remember("Asked about the phone plan", scope="c", metadata={"channel": "phone"})
    assert [r.text for r in memory.long_term.all(scope="c", where={"priority": {"$gte": 2}})] == ["Prefers email over phone"]
    assert len(memory.long_term.all(scope="c", where={"channel": {"$ne": "email"}})) == 2
    both = {"$or": [{"channel": {"$in": ["phone"]}}, {"priority": {"$lt": 2}}]}
    assert {r.text for r in memory.long_term.recall("warehouse phone", scope="c", k=5, where=both)} == {
        "Lives near the Lyon warehouse", "Asked about the phone plan"}
    assert memory.long_term.all(scope="c", where={"created_at": {"$lt": "2000-01-01"}}) == []
    assert len(memory.long_term.all(scope="c", where={"created_at": {"$gte": "2000-01-01"}})) == 3
    for bad in [{"priority": {"$regex": "1"}}, {"$or": []}, {"created_at": {"$gt": "someday"}}]:
        with pytest.raises(InvalidInput):
            memory.long_term.all(scope="c", where=bad)
        with pytest.raises(InvalidInput):
            memory.long_term.recall("email", scope="c", where=bad)


def test_tool_description_parity(memory: Any) -> None:
    memory.facts.set("refund.window_days", 30)
    assert memory.facts.set_tool_description("Acme returns desk values.") == "Acme returns desk values."
    assert memory.facts.tool_description() == "Acme returns desk values."
    assert memory.facts.tool_schema()["description"] == "Acme returns desk values."
    with pytest.raises(InvalidInput):
        memory.facts.set_tool_description(" ")
    assert memory.facts.set_tool_description(None) == memory.facts.tool_schema()["description"] != "Acme returns desk values."


def test_docs_parity(memory: Any, tmp_path: Path) -> None:
    manual = tmp_path / "manual.md"
    manual.write_text("# Setup\n\nPlug the router in and wait for the green light.\n")
    ids = memory.docs.ingest(manual)
    assert memory.docs.ingest(manual) == ids
    (hit,) = memory.docs.search("green light router")
    assert (hit.source, hit.heading) == ("manual.md", "Setup")
    assert memory.docs.sources() == ["manual.md"]
    assert memory.docs.delete_source("manual.md") == 1
    with pytest.raises(NotFound):
        memory.docs.delete_source("manual.md")
    with pytest.raises(InvalidInput):
        memory.docs.ingest("text without a source\nsecond line")


def test_forget_scope_parity(memory: Any) -> None:
    memory.long_term.remember("A likes tea", scope="A")
    memory.episodes.record(goal="g", actions=[], outcome="o", success=True, scope="A")
    assert memory.forget_scope("A") == {"memories": 1, "episodes": 1, "cases": 0, "conversations": 0}
    with pytest.raises(InvalidInput):
        memory.forget_scope("")


def test_a_bad_key_raises_unauthorized(served: Served) -> None:
    remote = served.memory(key="ffk_000000000000_nope")
    with pytest.raises(Unauthorized):
        remote.long_term.recall("anything")


def test_connect_reads_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch, served: Served) -> None:
    key = served.keys.create("envtenant")[1]
    monkeypatch.setenv("FOURFOLD_API_KEY", key)
    remote = RemoteMemory("http://testserver", client=TestClient(served.client.app))
    assert remote.whoami() == "envtenant"


@pytest.mark.parametrize("make", [httpx.Client, httpx.AsyncClient])
def test_a_connection_owns_only_the_client_it_made(monkeypatch: pytest.MonkeyPatch, make: Any) -> None:
    """Both clients share one connection rule: the key (argument, else $FOURFOLD_API_KEY) goes on
    the client; a client made for the URL is the memory's to close, an injected one stays the caller's."""
    monkeypatch.setenv("FOURFOLD_API_KEY", "ffk_env")
    made = _wire.Connection(None, make, url="http://service:8765", api_key=None, timeout=5.0)
    assert made.owned and str(made.client.base_url) == "http://service:8765"
    assert made.client.headers["Authorization"] == "Bearer ffk_env" and made.client.timeout.read == 5.0
    given = make(base_url="http://other")
    injected = _wire.Connection(given, make, url="http://service:8765", api_key="ffk_arg", timeout=5.0)
    assert not injected.owned and injected.client is given and given.headers["Authorization"] == "Bearer ffk_arg"


def test_closing_a_memory_leaves_an_injected_client_open(served: Served) -> None:
    given = TestClient(served.client.app)
    RemoteMemory("http://testserver", client=given).close()
    assert not given.is_closed


TWINS = [
    (remote.RemoteMemory, remote_async.AsyncRemoteMemory),
    (remote.RemoteLongTermMemory, remote_async.AsyncRemoteLongTermMemory),
    (remote.RemoteEpisodeLog, remote_async.AsyncRemoteEpisodeLog),
    (remote.RemoteCaseBase, remote_async.AsyncRemoteCaseBase),
    (remote.RemoteFactStore, remote_async.AsyncRemoteFactStore),
    (remote.RemoteDocumentStore, remote_async.AsyncRemoteDocumentStore),
]


@pytest.mark.parametrize(("sync", "async_"), TWINS, ids=[a.__name__ for _, a in TWINS])
def test_the_async_client_is_the_sync_one_awaited(sync: type, async_: type) -> None:
    """Same public methods, same parameters and defaults, same results; every one awaited."""

    def methods(cls: type) -> dict[str, Any]:
        return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}

    assert methods(sync).keys() == methods(async_).keys()
    for name, method in methods(async_).items():
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(methods(sync)[name]), name


@pytest.mark.slow  # a real `fourfold serve` process
def test_the_async_client_on_a_real_service(tmp_path: Path) -> None:
    """Over a real socket, in an asyncio program, with its own client; errors are the same types."""
    from fourfold.remote_async import connect_async
    from fourfold.service.testing import LiveService

    async def main(url: str, key: str) -> None:
        async with connect_async(url, api_key=key) as mem:
            assert await mem.whoami() == "acme"
            made = await mem.long_term.remember("Prefers email over phone", scope="c", metadata={"n": 1})
            found = await asyncio.gather(*(mem.long_term.recall("email", scope="c") for _ in range(5)))
            assert all([r.id for r in hits] == [made] for hits in found)
            with pytest.raises(NotFound):
                await mem.long_term.get("mem_nope")
        async with connect_async(url, api_key="ffk_000000000000_nope") as bad:
            with pytest.raises(Unauthorized):
                await bad.whoami()

    with LiveService(tmp_path / "data", keys={"acme": 1}) as live:
        asyncio.run(main(live.url, live.keys["acme"][0]))


def test_every_write_returns_one_type_its_id(memory: Any) -> None:
    """remember, remember_many, update and add answer a `Remembered` over every client: the id
    itself (a `str`) with the write's outcome."""
    lt = memory.long_term
    first = lt.remember("Prefers email over phone calls", scope="c", key="contact")
    (batch,) = lt.remember_many([{"text": "Lives in Lyon", "scope": "c", "kind": "fact"}])
    changed = lt.update(first, "Prefers phone calls password=hunter2hunter2")
    (added,) = memory.add(["I prefer tea over coffee."], scope="c")
    for done in (first, batch, changed, added):
        assert type(done) is Remembered and done == done.id and lt.get(done).text == done.text
    assert changed.supersedes == (first,) and [r.kind for r in changed.redactions] == ["password"]
    assert "hunter2" not in changed.text and not lt.remember_many([{"text": "Lives in Lyon", "scope": "c",
                                                                     "kind": "fact"}])[0].created


def test_a_write_stands_for_its_id_in_metadata_and_filters(memory: Any) -> None:
    """A `Remembered` kept in metadata is stored as its id, as `json.dumps` writes it, on every client."""
    first = memory.long_term.remember("Prefers email over phone calls", scope="c")
    second = memory.long_term.remember("Asked for a callback", scope="c", metadata={"after": first, "all": [first]})
    stored = memory.long_term.get(second).metadata
    assert stored == {"after": str(first), "all": [str(first)]} and type(stored["after"]) is str
    assert [r.id for r in memory.long_term.recall("callback", scope="c", where={"after": first})] == [second]
    assert [r.id for r in memory.long_term.all(scope="c", where={"after": first})] == [second]


def test_what_json_cannot_encode_is_refused_alike(memory: Any) -> None:
    for bad in ({"at": object()}, {"n": float("nan")}):
        with pytest.raises(InvalidInput):
            memory.long_term.remember("Asked for a callback", scope="c", metadata=bad)
    assert memory.long_term.all(scope="c") == []


def test_a_misspelt_part_is_refused_when_the_client_is_made(served: Served) -> None:
    """A part is declared by an annotation naming its class; one naming nothing fails loudly
    instead of leaving the memory without that part."""
    def made(annotations: dict[str, str]) -> Any:
        cls = type("Declared", (RemoteMemory,), {"__module__": remote.__name__, "__annotations__": annotations})
        return cls("http://testserver", api_key=served.keys.create("acme")[1], client=TestClient(served.client.app))

    with pytest.raises(TypeError, match="'RemoteFactStor' names nothing"):
        made({"notes": "RemoteFactStor"})
    with pytest.raises(TypeError, match=r"'w\.Facts\.nothing' names nothing"):
        made({"notes": "w.Facts.nothing"})
    declared = made({"notes": "RemoteFactStore", "label": "str", "extra": "ClassVar[int]"})
    assert isinstance(declared.notes, remote.RemoteFactStore) and isinstance(declared.long_term, remote.RemoteLongTermMemory)


def test_a_users_subclass_may_annotate_names_it_imports_for_type_checking_only(served: Served) -> None:
    """Outside fourfold, an annotation naming what its module holds only under TYPE_CHECKING
    (as `from decimal import Decimal` there would) is no part and no error."""
    cls = type("Mine", (RemoteMemory,), {"__module__": __name__, "__annotations__": {"budget": "Decimal"}})
    mine = cls("http://testserver", api_key=served.keys.create("acme")[1], client=TestClient(served.client.app))
    assert isinstance(mine.long_term, remote.RemoteLongTermMemory) and not hasattr(mine, "budget")


def test_profile_parity(memory: Any) -> None:
    """A scope's profile: its current keyed memories, one per key, each dated when it was set;
    the same through the library, `RemoteMemory` and `AsyncRemoteMemory`."""
    lt = memory.long_term
    lt.remember("Prefers phone calls", scope="c", kind="preference", key="contact_channel", valid_from=1_000)
    lt.remember("Prefers Signal", scope="c", kind="preference", key="contact_channel", valid_from=2_000)
    lt.remember("Is on the annual plan", scope="c", kind="fact", key="plan", valid_from=1_500)
    lt.remember("Owns a label printer", scope="c")
    lt.remember("Likes the dark theme", scope="c", kind="preference", valid_from=500)  # a standing preference, no key
    lt.remember("Speaks Dutch", scope="other", key="language")
    profile = lt.profile("c")
    assert [(r.key, r.text, r.valid_from, r.valid_to) for r in profile] == [
        ("contact_channel", "Prefers Signal", 2_000, None), ("plan", "Is on the annual plan", 1_500, None),
        (None, "Likes the dark theme", 500, None)]
    # within the bound, the most recently set first
    assert [r.key for r in lt.profile("c", max_tokens=12)] == ["contact_channel"]
    with pytest.raises(InvalidInput):
        lt.profile("c", max_tokens=0)


def test_fact_search_parity(memory: Any) -> None:
    memory.facts.set("refund_window_days_annual", 60, description="Days to ask for a refund on an annual plan")
    memory.facts.set("support_hours", "9-17", description="When the desk answers")
    (found,) = memory.facts.search("Can I get my money back on the annual plan?")
    assert (found.key, found.value) == ("refund_window_days_annual", 60)
    assert memory.facts.search("my label printer is offline") == []
    assert [f.key for f in memory.facts.search("annual plan desk", k=2, min_score=0.0)] == [
        "refund_window_days_annual", "support_hours"]
