"""Which hosts are this machine: one rule for where the service binds and for whom it trusts."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str | None) -> bool:
    """Whether `host` names this machine: `localhost`, or an address in 127.0.0.0/8 or ::1.

    `host` is a bind address (`127.0.0.1`, `::1`) or a Host header (`localhost:8765`,
    `[::1]:8765`): a port and the brackets of an IPv6 address are ignored. Any other name,
    even one that resolves to 127.0.0.1, is not loopback (DNS rebinding uses such names).
    """
    if not host:
        return False
    name = host.strip()
    if name.startswith("["):
        name, closed, port = name[1:].partition("]")
        if not closed or (port and not port.startswith(":")):
            return False
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
