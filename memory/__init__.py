"""The application layer: LLM backends, orchestration, exact-id tools, the `Memory` facade."""

from ledgermem.memory.answering import Answer
from ledgermem.memory.memory import Memory, Reply
from ledgermem.projections.config import MemoryConfig

__all__ = ["Answer", "Memory", "MemoryConfig", "Reply"]
