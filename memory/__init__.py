"""The application layer: LLM backends, orchestration, exact-id tools, the `Memory` facade."""

from memory.answering import Answer
from memory.memory import Memory, Reply
from projections.config import MemoryConfig

__all__ = ["Answer", "Memory", "MemoryConfig", "Reply"]
