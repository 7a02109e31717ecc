"""One loopback rule for where the service binds (`fourfold serve --host`) and for the Host
header it trusts without a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from fourfold.service.hosts import is_loopback
from test_service import Service


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:8765", "127.8.9.10", "localhost", "LOCALHOST:80", "::1", "[::1]", "[::1]:8765", " localhost "],
)
def test_this_machine_is_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    [None, "", "0.0.0.0", "10.0.0.1", "10.0.0.1:8765", "::", "[::]:8765", "192.168.1.2", "evil.example",
     "localhost.evil.example", "127.0.0.1.evil.example:80", "localhost:80:80", "[::1", "[::1]x", "notlocalhost"],
)
def test_anything_else_is_not(host: str | None) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize(("host", "anonymous"), [("127.0.0.2:8765", True), ("[::1]:8765", True), ("evil.example", False)])
def test_the_service_lets_in_without_a_key_exactly_the_loopback_hosts(tmp_path: Path, host: str, anonymous: bool) -> None:
    service = Service(tmp_path, allow_anonymous=True)
    try:
        response = service.client.get("/v1/whoami", headers={"Host": host})
        assert (response.status_code, response.json().get("auth")) == ((200, "anonymous") if anonymous else (401, None))
    finally:
        service.close()
