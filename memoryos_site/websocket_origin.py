"""The chat's websocket opens only from a page of this very site: its Origin must name the host AND
the port the socket was opened on (the Host header), or be one of CSRF_TRUSTED_ORIGINS (a proxy that
rewrites Host), as Django's CSRF check asks of a form. Channels' AllowedHostsOriginValidator
compares host names only, so any other server on the machine (http://localhost:9999) could open a
socket with the person's cookie."""

from __future__ import annotations

from urllib.parse import urlparse

from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings


class SameOriginValidator(OriginValidator):
    def __init__(self, application) -> None:
        super().__init__(application, allowed_origins=[])

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers", []))
        try:
            origin = urlparse(headers[b"origin"].decode("latin1"))
            # A browser always names the Host; a client without one is no browser carrying a person's
            # cookie to a page of another origin (what this check is for), and ALLOWED_HOSTS still applies.
            host = urlparse("//" + headers[b"host"].decode("latin1")) if b"host" in headers else None
            allowed = host is None or self.same_origin(origin, host)
        except (KeyError, UnicodeDecodeError, ValueError):  # no Origin, or a port that is no number
            allowed = False
        if allowed:
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)

    def same_origin(self, origin, host) -> bool:
        if any(self.match_allowed_origin(origin, trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS):
            return True
        if origin.scheme not in ("http", "https") or not origin.hostname or not host.hostname:
            return False
        default_port = 443 if origin.scheme == "https" else 80  # a Host without a port is on the scheme's
        host_port = host.port if host.port is not None else default_port
        return origin.hostname == host.hostname and self.get_origin_port(origin) == host_port
