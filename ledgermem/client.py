"""The client of the live memory service (`ledgermem live serve`): see `ledgermem.service.client`."""

from __future__ import annotations

from ledgermem.service.client import MemoryClient, MemoryServiceError

__all__ = ["MemoryClient", "MemoryServiceError"]
