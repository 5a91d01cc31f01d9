"""Websocket routes, wrapped in origin and session checks by memoryos_site/asgi.py."""

from __future__ import annotations

from django.urls import path

from memory.web.consumers import ChatConsumer

websocket_urlpatterns = [
    path("ws/chat/", ChatConsumer.as_asgi()),
]
