"""In a real browser: the service's /docs page renders offline, under a content security policy.

Headless Chromium loads Swagger UI from a running `fourfold serve` and must draw the API's
operations from local files only; a request to any other host fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from fourfold.service.testing import LiveService

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with LiveService(tmp_path_factory.mktemp("swagger") / "data") as service:
        yield service


def test_swagger_ui_draws_every_route_from_local_files(browser: Any, live: LiveService, tmp_path: Path) -> None:
    page = browser.new_page()
    requested: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        response = page.goto(f"{live.url}/docs", wait_until="networkidle")
        assert response is not None
        headers = response.headers
        page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
        title = page.inner_text(".swagger-ui .info .title")
        routes = page.eval_on_selector_all(
            ".swagger-ui .opblock .opblock-summary-path", "nodes => nodes.map(n => n.textContent.trim())")
        page.screenshot(path=str(tmp_path / "docs.png"))
    finally:
        page.close()
    assert "fourfold" in title.lower()
    assert "/v1/memories" in routes and "/v1/facts/tool-description" in routes and len(routes) > 20
    here = urlsplit(live.url).netloc
    assert {urlsplit(url).netloc for url in requested} == {here}, requested
    assert any(url.endswith("/openapi.json") for url in requested)
    assert errors == []  # a script the policy refused would be reported here
    # the inspector's protection: nothing may frame the docs, and only their own scripts run
    assert headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"].split("script-src", 1)[1].split(";")[0]
