"""`network_disabled()`: no socket may connect while it is active.

A run replayed from recorded LLM calls must not reach any model: inside
this context every attempt to open a network connection raises
`NetworkDisabled`, so a replay that would silently call out fails loudly.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ledgermem.memory.errors import NetworkDisabled


@contextmanager
def network_disabled(reason: str = "recorded LLM calls are being replayed") -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NetworkDisabled(f"network is disabled: {reason}")

    saved = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo)
    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo = saved  # type: ignore[method-assign]
