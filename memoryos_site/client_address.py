"""Where a sign-in comes from, for django-axes' throttle.

Behind a reverse proxy every request arrives from the proxy's address, so a throttle per address
would lock every person out after one person's wrong passwords. The address of the person is known
only when the server faces clients itself (REMOTE_ADDR), or when a proxy it trusts
(MEMORYOS_TRUSTED_PROXIES: addresses or networks) says in X-Forwarded-For whom it forwards: the
right-most entry that is not itself a trusted proxy. Otherwise it is unknown, and failed sign-ins are
counted per account only.
"""

from __future__ import annotations

import ipaddress
from functools import cache

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _networks(spec: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in spec)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def client_address(request) -> str | None:
    """The address of the person making the request, or None when it cannot be known."""
    proxies = _networks(tuple(settings.MEMORYOS_TRUSTED_PROXIES))
    remote = _address(request.META.get("REMOTE_ADDR", ""))
    if remote is None:
        return None
    if not any(remote in network for network in proxies):
        return str(remote)
    hops = [hop for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return None  # a chain we cannot read names no one
        if not any(address in network for network in proxies):
            return str(address)
    return None


def lockout_parameters(request_or_attempt, credentials=None) -> list[str]:
    """Per account always; per address too when the address is the person's (AXES_LOCKOUT_PARAMETERS)."""
    if hasattr(request_or_attempt, "META"):
        known = client_address(request_or_attempt) is not None
    else:  # a stored attempt: its address was recorded only when known
        known = bool(getattr(request_or_attempt, "ip_address", None))
    return ["username", "ip_address"] if known else ["username"]
