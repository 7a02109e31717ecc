"""The tenant's API keys over HTTP, for an admin key: list them, create one, revoke one.

A key only ever sees and manages the keys of its own tenant; the secret of a new key is in
the answer once and stored nowhere (only its digest).

This module has no `from __future__ import annotations`: FastAPI reads the routes' parameter
types.
"""

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field, StrictStr

from fourfold.service import schemas as s
from fourfold.service.auth import Caller, check, needs
from fourfold.service.keys import ApiKey, KeyStore, Role

__all__ = ["KeyIn", "KeyOut", "install_key_routes"]


class KeyIn(s.RequestBody):
    label: StrictStr = Field("", description="A note to recognise the key by.")
    role: Role = Field("agent", description="agent, operator or admin (see `fourfold keys create --role`).")


class KeyOut(BaseModel):
    id: str
    tenant: str
    role: Role
    label: str
    created_at: float
    revoked_at: float | None


class KeysOut(BaseModel):
    keys: list[KeyOut]


class KeyCreatedOut(BaseModel):
    key: KeyOut
    secret: str = Field(description="The key itself: shown once, stored nowhere.")


def _out(key: ApiKey) -> KeyOut:
    return KeyOut(id=key.id, tenant=key.tenant, role=key.role, label=key.label, created_at=key.created_at,
                  revoked_at=key.revoked_at)


def install_key_routes(api: APIRouter, caller: Callable[..., Caller], keys: KeyStore) -> None:
    """GET /keys, POST /keys, DELETE /keys/{key_id} on `api`, each for an admin key of the
    caller's tenant (`caller` is the dependency that names the sender)."""
    admin = needs("admin")
    Who = Annotated[Caller, Depends(caller)]

    @api.get("/keys", tags=["keys"], openapi_extra=admin)
    def list_keys(who: Who) -> KeysOut:
        """Your tenant's keys, revoked ones too (never a key itself)."""
        return KeysOut(keys=[_out(k) for k in keys.list(tenant=check(who, "admin").tenant)])

    @api.post("/keys", status_code=201, tags=["keys"], openapi_extra=admin)
    def create_key(body: KeyIn, who: Who) -> KeyCreatedOut:
        """A new key of your tenant; its secret is in this answer only."""
        record, secret = keys.create(check(who, "admin").tenant, label=body.label, role=body.role)
        return KeyCreatedOut(key=_out(record), secret=secret)

    @api.delete("/keys/{key_id}", tags=["keys"], openapi_extra=admin)
    def revoke_key(key_id: str, who: Who) -> KeyOut:
        """Revoke one of your tenant's keys: requests with it get 401 at once."""
        return _out(keys.revoke(key_id, tenant=check(who, "admin").tenant))
