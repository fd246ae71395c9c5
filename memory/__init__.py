"""The application layer: LLM backends, orchestration, exact-id tools, the `Memory` facade."""

from memory.memory import Answer, Memory
from projections.config import MemoryConfig

__all__ = ["Answer", "Memory", "MemoryConfig"]
