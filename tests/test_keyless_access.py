"""A keyless service on loopback: `fourfold serve` lets loopback callers in; `fourfold ui` lets in
only the browser it gave this run's secret, so other local users and a proxy get 401."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from fourfold.service.testing import cli_command, free_port
from test_service import Service, error

SECRET = "this-runs-secret-0123456789"


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Service]:
    service = Service(tmp_path, allow_anonymous=True, run_secret=SECRET)
    service.client = TestClient(service.app, raise_server_exceptions=False, base_url="http://127.0.0.1")
    yield service
    service.close()


def test_with_a_run_secret_only_its_bearer_is_let_in(guarded: Service) -> None:
    client = guarded.client
    refused = client.get("/v1/whoami")  # another local user, or a proxy rewriting Host to 127.0.0.1
    assert error(refused) == (401, "unauthorized") and "printed" in refused.json()["error"]["message"]
    assert error(client.get("/v1/whoami", headers={"Authorization": "Bearer not-the-secret"}))[0] == 401
    assert error(client.get("/v1/whoami", headers={"Authorization": f"Basic {SECRET}"}))[0] == 401
    assert error(client.post("/v1/memories", json={"text": "x"}))[0] == 401
    opened = client.get("/v1/whoami", headers={"Authorization": f"Bearer {SECRET}"})
    assert opened.json() == {"tenant": "default", "auth": "anonymous"}
    assert client.get("/ui").status_code == 200  # the page itself is public; it reads nothing


def test_once_keys_exist_the_run_secret_opens_nothing(guarded: Service) -> None:
    key = guarded.key("acme")
    assert error(guarded.client.get("/v1/whoami", headers={"Authorization": f"Bearer {SECRET}"}))[0] == 401
    assert guarded.client.get("/v1/whoami", headers={"Authorization": f"Bearer {key}"}).json()["tenant"] == "acme"


def test_without_a_run_secret_loopback_callers_are_let_in(tmp_path: Path) -> None:
    service = Service(tmp_path, allow_anonymous=True)
    try:
        client = TestClient(service.app, base_url="http://127.0.0.1")
        assert client.get("/v1/whoami").json() == {"tenant": "default", "auth": "anonymous"}
        assert error(client.get("/v1/whoami", headers={"Authorization": "Basic abc"}))[0] == 401
    finally:
        service.close()


@pytest.mark.slow  # a real `fourfold ui` process, and Chromium
def test_fourfold_ui_prints_an_address_that_carries_this_runs_secret(tmp_path: Path, browser: Any) -> None:
    data = tmp_path / "data"
    subprocess.run(cli_command("--data-dir", str(data), "--embedder", "hash", "remember", "Prefers email",
                               "--scope", "customer:ann"), check=True, capture_output=True, timeout=120)
    port = free_port()
    log = tmp_path / "ui.log"
    with log.open("wb") as out:
        process = subprocess.Popen(cli_command("--data-dir", str(data), "--embedder", "hash", "ui", "--no-browser",
                                               "--port", str(port)), stdout=subprocess.DEVNULL, stderr=out)
    try:
        found = None
        deadline = time.monotonic() + 90
        while found is None and time.monotonic() < deadline and process.poll() is None:
            found = re.search(r"(http://127\.0\.0\.1:\d+)/ui#key=([A-Za-z0-9_-]{20,})", log.read_text())
            time.sleep(0.2)
        assert found is not None, log.read_text()
        url, secret = found.groups()
        assert httpx.get(f"{url}/v1/scopes", timeout=30).status_code == 401
        scopes = httpx.get(f"{url}/v1/scopes", headers={"Authorization": f"Bearer {secret}"}, timeout=30).json()
        assert [s["scope"] for s in scopes["scopes"]] == ["customer:ann"]
        # the browser opened at that address sees the data, and the secret leaves the address bar
        page = browser.new_context().new_page()
        page.goto(f"{url}/ui#key={secret}")
        page.wait_for_selector("main[data-ready='1']")
        assert "customer:ann" in page.inner_text("main") and "#key=" not in page.url
        page.context.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
