"""Websocket routes (the chat consumer arrives with the browser chat)."""

from __future__ import annotations

websocket_urlpatterns: list = []
