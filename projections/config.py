"""The memory's configuration, as recorded in every `episode_started` event.

It travels inside the log, so that `evolve` and `decide` read it from the
state and never from the environment.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from projections.errors import ConfigError


#: The memory systems a stream can hold: this memory and the three baselines it is compared with.
SYSTEM_KINDS: tuple[str, ...] = ("three_layer", "full_context", "memgpt_style", "naive_chain")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryConfig:
    system: str = "three_layer"  # which memory this stream holds (baselines keep raw records and window only here)
    window_turns: int = 4
    chain_budget: int = 400  # tokens of the rendered chain (titles + un-indexed summaries)
    high_water: float = 0.85  # compact when the chain passes this share of its budget ...
    low_water: float = 0.60  # ... down to this share
    chain_strategy: str = "index"
    index_group_size: int = 4
    index_title_max_chars: int = 80
    summary_max_tokens: int = 120
    summarizer_input_tokens: int = 1500
    context_budget: int = 2000  # tokens of the whole rendered memory in an answer prompt
    tokenizer: str = "auto"  # resolved to a concrete name before it is recorded
    personal_data: bool = True  # seal the subject's values so they can be erased; False for synthetic data

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def validate(self) -> MemoryConfig:
        problems = []
        if self.system not in SYSTEM_KINDS:
            problems.append(f"system={self.system!r}: one of {', '.join(SYSTEM_KINDS)}")
        if self.window_turns < 0:
            problems.append(f"window_turns={self.window_turns!r} must be >= 0")
        if self.chain_budget <= 0:
            problems.append(f"chain_budget={self.chain_budget!r} must be > 0")
        if not 0 < self.low_water < self.high_water <= 1:
            problems.append(f"need 0 < low_water ({self.low_water}) < high_water ({self.high_water}) <= 1")
        if self.chain_strategy not in ("index",):
            problems.append(f"chain_strategy={self.chain_strategy!r}: this version implements 'index'")
        if self.index_group_size < 2:
            problems.append(f"index_group_size={self.index_group_size!r} must be >= 2")
        if self.tokenizer == "auto":
            problems.append("tokenizer='auto' must be resolved to a concrete name before it is recorded")
        if problems:
            raise ConfigError("invalid memory configuration: " + "; ".join(problems))
        return self
