"""Who sends a request, and what their key may do: one tenant and one role per key.

A key belongs to one tenant and has a role (`fourfold.service.keys.Role`): agent, operator or
admin. A route that needs more than an agent's says so in its OpenAPI operation
(`x-fourfold-role`, set with `needs`), so the role is declared once, where the route is, and
shown in the API's description; `check` refuses a caller whose role falls short (403).
"""

from __future__ import annotations

import hmac
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from fourfold.errors import Forbidden
from fourfold.service.admission import CALLER
from fourfold.service.errors import Unauthorized
from fourfold.service.hosts import is_loopback
from fourfold.service.keys import ANONYMOUS, KeyStore, Role, allows, check_role, key_id_of
from fourfold.service.tenancy import DEFAULT_TENANT

__all__ = ["ROLE_FIELD", "Authenticator", "Caller", "check", "needs", "role_of"]

#: The OpenAPI operation field that names the role a route needs (agent when absent).
ROLE_FIELD = "x-fourfold-role"


@dataclass(frozen=True, slots=True)
class Caller:
    """The sender of a request: its tenant, who it is (a key's public id, or ANONYMOUS), its role."""

    tenant: str
    who: str
    role: Role


def needs(role: Role) -> dict[str, Any]:
    """A route's `openapi_extra` saying it needs a key of `role` (or more)."""
    return {ROLE_FIELD: check_role(role)}


def role_of(route: Any) -> Role:
    """The role a route needs (its `openapi_extra`); an agent's when it names none."""
    extra = getattr(route, "openapi_extra", None) or {}
    return check_role(extra.get(ROLE_FIELD, "agent"))


def check(caller: Caller, needed: Role) -> Caller:
    """`caller`, if its role allows what `needed` allows; Forbidden otherwise."""
    if not allows(caller.role, needed):
        raise Forbidden(f"this needs an {needed} key (or one with more rights); this key's role is {caller.role}: "
                        f"create one with `fourfold keys create --role {needed}`")
    return caller


class Authenticator:
    """Maps an `Authorization` header to a `Caller`, or raises `Unauthorized`.

    Without any key ever created, and only when the service allows it (loopback binds),
    requests without a key act as the `default` tenant with every right (the machine's own
    user); a request that names a loopback host is required too, so a DNS-rebinding web page
    cannot use that open door. With `run_secret` that door opens only to a request that sends
    the secret as its bearer key (`fourfold ui`).
    """

    def __init__(self, keys: KeyStore, *, allow_anonymous: bool = False, run_secret: str | None = None) -> None:
        self.keys = keys
        self.allow_anonymous = allow_anonymous
        self.run_secret = run_secret

    def tenant(self, authorization: str | None, host: str | None) -> tuple[str, Literal["key", "anonymous"]]:
        caller = self.caller(authorization, host)
        return caller.tenant, "anonymous" if caller.who == ANONYMOUS else "key"

    def of_scope(self, scope: MutableMapping[str, Any]) -> Caller:
        """`caller` of an ASGI request: the one `Admission` found, else from its headers."""
        found = scope.get(CALLER)
        if isinstance(found, Caller):
            return found
        headers = {k: v for k, v in scope.get("headers", []) if k in (b"authorization", b"host")}
        authorization, host = (headers[k].decode("latin-1") if k in headers else None
                               for k in (b"authorization", b"host"))
        caller = self.caller(authorization, host)
        scope[CALLER] = caller
        return caller

    def caller(self, authorization: str | None, host: str | None) -> Caller:
        unknown = Unauthorized("the API key is unknown or revoked")
        secret_given = False
        if authorization:
            scheme, _, key = authorization.partition(" ")
            key = key.strip()
            if scheme.lower() != "bearer" or not key:
                raise unknown
            secret_given = self._is_run_secret(key)
            if not secret_given:
                found, who = self.keys.identify(key), key_id_of(key)
                if found is None or who is None:
                    raise unknown
                return Caller(found[0], who, found[1])
        keyless = self.allow_anonymous and is_loopback(host) and not self.keys.has_keys()
        if keyless and (self.run_secret is None or secret_given):
            return Caller(DEFAULT_TENANT, ANONYMOUS, "admin")
        if authorization:
            raise unknown
        if keyless:
            raise Unauthorized("open the address `fourfold ui` printed: it carries this run's secret")
        raise Unauthorized("send an API key: Authorization: Bearer <key> (create one with `fourfold keys create`)")

    def _is_run_secret(self, key: str) -> bool:
        return self.run_secret is not None and hmac.compare_digest(key.encode(), self.run_secret.encode())
