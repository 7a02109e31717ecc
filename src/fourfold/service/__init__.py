"""fourfold as a service: an authenticated HTTP API and an MCP server over the same memory.

Everything here is an adapter over the library. Importing this package is cheap: FastAPI,
uvicorn and the MCP SDK load only in the modules that need them (`app`, `mcp`, `runner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fourfold.service.app import create_app
    from fourfold.service.keys import ApiKey, KeyStore
    from fourfold.service.tenancy import DEFAULT_TENANT, Tenants

__all__ = ["DEFAULT_TENANT", "ApiKey", "KeyStore", "Tenants", "create_app"]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from fourfold.service.app import create_app

        return create_app
    if name in ("ApiKey", "KeyStore"):
        from fourfold.service import keys

        return getattr(keys, name)
    if name in ("DEFAULT_TENANT", "Tenants"):
        from fourfold.service import tenancy

        return getattr(tenancy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
