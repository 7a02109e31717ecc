"""Schemathesis against the service's own /openapi.json: no input makes it answer 5xx."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from fourfold.embeddings import HashEmbedder
from fourfold.models import OfflineModel
from fourfold.service.app import create_app
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants
from fourfold.stores import InMemoryVectorStore

EMBEDDER = HashEmbedder()


def _service(data_dir: Path) -> tuple[object, str]:
    tenants = Tenants(
        data_dir, embedder=EMBEDDER,
        vector_store=lambda _t: InMemoryVectorStore(embedder_identity=EMBEDDER.identity),
    )
    keys = KeyStore(data_dir / "fourfold.sqlite3")
    key = keys.create("fuzz")[1]
    tenants.get("fuzz").facts.set("refund.window_days", 30)
    return create_app(tenants, keys, model=OfflineModel(), mount_mcp=False), key


# The schema is loaded at collection time (schemathesis parametrizes from it), so the
# service lives in a temp dir made here and removed at exit.
_TMP = tempfile.TemporaryDirectory(prefix="fourfold-fuzz-")
APP, KEY = _service(Path(_TMP.name))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_is_a_server_error(case: schemathesis.Case) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {KEY}"},
        checks=[not_a_server_error, response_schema_conformance],
    )
