"""One table between the library's typed errors and HTTP: status codes out, typed errors back in.

The service answers `{"error": {"code", "message"}}`; `RemoteMemory` turns the code back
into the same exception class the embedded library raises, so callers catch one set.
"""

from __future__ import annotations

from fourfold.errors import FourfoldError, TooLarge, error_types
from fourfold.text import lines

__all__ = ["STATUS", "ServiceError", "TooLarge", "Unauthorized", "error_for", "one_line", "status_for"]


class Unauthorized(FourfoldError):
    """No API key, or one that is unknown or revoked."""

    code = "unauthorized"


class ServiceError(FourfoldError):
    """The service failed in a way the library has no type for (its message says how)."""

    code = "internal"


#: HTTP status of each error code; anything unlisted is a 500.
STATUS: dict[str, int] = {
    "invalid_input": 422,
    "too_large": 413,
    "budget_exceeded": 422,
    "not_found": 404,
    "method_not_allowed": 405,
    "unauthorized": 401,
    "forbidden": 403,
    "embedder_mismatch": 409,
    "lock_timeout": 503,
    "store_unavailable": 503,
    "store_read_only": 503,
    "storage_full": 507,  # Insufficient Storage (RFC 4918): the request may succeed once space is freed
    "model_error": 502,
    "store_corrupt": 500,
    "missing_dependency": 500,
    "internal": 500,
}


def status_for(code: str) -> int:
    return STATUS.get(code, 500)


def error_for(code: str, message: str) -> FourfoldError:
    """The typed error a service answer stands for (ServiceError for codes this client lacks)."""
    return error_types().get(code, ServiceError)(message)


def one_line(text: object, limit: int = 500) -> str:
    """Messages travel as one line: a multi-line library message is joined, long ones clipped."""
    return lines.one_line(str(text), limit)
