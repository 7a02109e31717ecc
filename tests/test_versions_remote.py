"""Memory versions over HTTP: the library's version tests run again against `RemoteMemory`,
then the routes driven from outside, against a real `fourfold serve` process."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from fourfold.remote import connect
from fourfold.service.testing import LiveService
from test_remote import lt, served  # noqa: F401  (the remote `lt` the tests below take)
from test_versions import (  # noqa: F401  (collected here, against the remote `lt`)
    test_a_backdated_write_takes_its_place_and_supersedes_nothing_newer,
    test_a_batch_applies_in_order,
    test_as_of_reads_what_was_current_then,
    test_bad_version_input_is_refused,
    test_forget_erases_every_version_and_leaves_other_memories,
    test_identical_text_applies_new_kind_and_metadata,
    test_keys_are_per_scope_and_unkeyed_memories_are_independent,
    test_occurred_at_metadata_is_the_default_valid_from,
    test_rewriting_a_superseded_text_makes_a_new_current_version,
    test_the_issue_api,
    test_update_and_history_of_a_plain_memory,
)


@pytest.mark.slow  # a real `fourfold serve` process
def test_versions_through_a_real_service(tmp_path: Path) -> None:
    with LiveService(tmp_path, keys={"acme": 1}) as live:
        http = httpx.Client(base_url=f"{live.url}/v1", headers=live.headers("acme"))
        a = http.post("/memories", json={"text": "Prefers email", "scope": "c1", "kind": "preference",
                                         "key": "contact_channel", "valid_from": "2024-01-05T00:00:00Z"})
        assert a.status_code == 201 and a.json()["supersedes"] == []
        b = http.post("/memories", json={"text": "Prefers text messages", "scope": "c1", "kind": "preference",
                                         "key": "contact_channel"}).json()
        assert b["supersedes"] == [a.json()["id"]]
        c = http.post(f"/memories/{b['id']}/versions", json={"text": "Prefers WhatsApp"})
        assert c.status_code == 201 and c.json()["supersedes"] == [b["id"]] and c.json()["text"] == "Prefers WhatsApp"
        history = http.get(f"/memories/{a.json()['id']}/versions").json()["results"]
        assert [h["text"] for h in history] == ["Prefers email", "Prefers text messages", "Prefers WhatsApp"]
        assert history[0]["valid_from"] == 1704412800.0 and history[0]["valid_to"] == history[1]["valid_from"]
        assert history[2]["valid_to"] is None and {h["key"] for h in history} == {"contact_channel"}
        search = {"query": "email text or WhatsApp", "scope": "c1", "k": 5}
        assert [h["text"] for h in http.post("/memories/search", json=search).json()["results"]] == ["Prefers WhatsApp"]
        then = http.post("/memories/search", json={**search, "as_of": "2024-02-01T00:00:00Z"}).json()["results"]
        assert [h["text"] for h in then] == ["Prefers email"]
        every = http.post("/memories/search", json={**search, "include_superseded": True}).json()["results"]
        assert len(every) == 3
        listed = http.get("/memories", params={"scope": "c1", "include_superseded": "true"}).json()["results"]
        assert len(listed) == 3
        assert [h["text"] for h in http.get("/memories", params={"scope": "c1", "as_of": 1706745600}).json()["results"]] \
            == ["Prefers email"]
        assert http.post("/memories/nope/versions", json={"text": "x y z"}).status_code == 404
        assert http.post("/memories/search", json={**search, "as_of": "soon"}).status_code == 422
        with connect(live.url, api_key=live.keys["acme"][0]) as memory:
            assert [h.text for h in memory.long_term.history(c.json()["id"])][-1] == "Prefers WhatsApp"
            memory.long_term.forget(a.json()["id"])  # every version goes
        assert http.get(f"/memories/{c.json()['id']}").status_code == 404
        assert http.get("/memories", params={"scope": "c1", "include_superseded": "true"}).json()["results"] == []
        http.close()
