"""The memory's configuration, as recorded in every `episode_started` event.

It travels inside the log, so that `evolve` and `decide` read it from the
state and never from the environment.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ledgermem.projections.errors import ConfigError


#: What `system` may be spelled as: a lower-case name. Which systems exist is the harness's list
#: (`evaluation.runner.SYSTEMS`); the memory only records the name and checks its own (`three_layer`).
_SYSTEM_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

#: Which turns are summarised: `off` every turn; `loose` all but small talk and plain questions;
#: `pattern` only turns where the lexical detector finds a fact, a constraint or an open loop;
#: `strict` as `pattern`, and summary facts the detector did not find are kept as inferences.
GATE_LEVELS: tuple[str, ...] = ("off", "loose", "pattern", "strict")
CHAIN_STRATEGIES: tuple[str, ...] = ("index", "merge")
#: Which attribute table names summary slots (`gate.attributes`): the built-in one, or none (only `slot_aliases`).
ATTRIBUTE_TABLES: tuple[str, ...] = ("builtin", "none")
#: Fields added after ledgers were first written, with the value their absence means: the behaviour those
#: ledgers were decided with, so a resumed or re-decided old run goes on as it began.
_ABSENT_MEANS: dict[str, Any] = {"attribute_table": "none"}


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
    index_max_per_turn: int = 2  # new titles (and folds) per turn, a hard cap against runaway loops
    index_fold_share: float = 0.5  # fold titles into a higher level once titles pass this share of the budget
    merge_min_gain: float = 0.15  # a merge must shrink the rendered chain by this share, else it is rejected
    merge_max_group: int = 4  # summaries rewritten into one merge
    gate_level: str = "off"
    #: Per-source behaviour, declared here and never by a hard-coded name:
    #: {"<source>": {"remember": false}} keeps that source's turns as raw records only;
    #: {"<source>": {"strip": ["<regex>", ...]}} removes matches from its text before the window and summarizer see it.
    source_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary_max_tokens: int = 120
    summarizer_input_tokens: int = 1500
    context_budget: int = 2000  # tokens of the whole rendered memory in an answer prompt
    #: The current-values registry: shown at all, how many slots at most (0: no count cap), and the share of
    #: `context_budget` it may take (0: no share). Over either, the least recently confirmed slots are left
    #: out first; a slot a live pin names is never left out.
    registry_enabled: bool = True
    registry_max_slots: int = 12
    registry_budget_share: float = 0.5
    tokenizer: str = "auto"  # resolved to a concrete name before it is recorded
    personal_data: bool = True  # seal the subject's values so they can be erased; False for synthetic data
    page_in_turns: int = 3  # how many following turns' prompts show an item the agent paged in
    #: One name per attribute: summary slots the table knows are stored under their canonical name.
    attribute_table: str = "builtin"
    #: More names, {"<canonical slot>": ["<alias>", ...]} (a dataset's `attributes`); a canonical name that is
    #: an alias of the table takes its attribute over.
    slot_aliases: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryConfig:
        """A recorded configuration (`episode_started`); a field it lacks takes the value its absence means."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if values and "registry_max_slots" not in values:
            # Recorded before the registry had limits: it rendered every slot, and its replay must too.
            values.setdefault("registry_max_slots", 0)
            values.setdefault("registry_budget_share", 0.0)
        return cls(**{**_ABSENT_MEANS, **values})

    def validate(self) -> MemoryConfig:
        problems = []
        if not isinstance(self.system, str) or not _SYSTEM_NAME.fullmatch(self.system):
            problems.append(f"system={self.system!r} must be a lower-case name like 'three_layer'")
        if self.window_turns < 0:
            problems.append(f"window_turns={self.window_turns!r} must be >= 0")
        if self.chain_budget <= 0:
            problems.append(f"chain_budget={self.chain_budget!r} must be > 0")
        if not 0 < self.low_water < self.high_water <= 1:
            problems.append(f"need 0 < low_water ({self.low_water}) < high_water ({self.high_water}) <= 1")
        if self.chain_strategy not in CHAIN_STRATEGIES:
            problems.append(f"chain_strategy={self.chain_strategy!r}: one of {', '.join(CHAIN_STRATEGIES)}")
        if self.index_group_size < 2:
            problems.append(f"index_group_size={self.index_group_size!r} must be >= 2")
        if self.index_max_per_turn < 1:
            problems.append(f"index_max_per_turn={self.index_max_per_turn!r} must be >= 1")
        if not 0 < self.index_fold_share <= 1:
            problems.append(f"index_fold_share={self.index_fold_share!r} must be in (0, 1]")
        if not 0 <= self.merge_min_gain < 1:
            problems.append(f"merge_min_gain={self.merge_min_gain!r} must be in [0, 1)")
        if self.merge_max_group < 2:
            problems.append(f"merge_max_group={self.merge_max_group!r} must be >= 2")
        if self.gate_level not in GATE_LEVELS:
            problems.append(f"gate_level={self.gate_level!r}: one of {', '.join(GATE_LEVELS)}")
        if self.page_in_turns < 1:
            problems.append(f"page_in_turns={self.page_in_turns!r} must be >= 1")
        if not isinstance(self.registry_enabled, bool):
            problems.append(f"registry_enabled={self.registry_enabled!r} must be true or false")
        if isinstance(self.registry_max_slots, bool) or not isinstance(self.registry_max_slots, int) \
                or self.registry_max_slots < 0:
            problems.append(f"registry_max_slots={self.registry_max_slots!r} must be a whole number >= 0 (0: no cap)")
        if not 0 <= self.registry_budget_share <= 1:
            problems.append(f"registry_budget_share={self.registry_budget_share!r} must be in [0, 1] (0: no share)")
        problems += _policy_problems(self.source_policies)
        if self.attribute_table not in ATTRIBUTE_TABLES:
            problems.append(f"attribute_table={self.attribute_table!r}: one of {', '.join(ATTRIBUTE_TABLES)}")
        problems += alias_problems(self.slot_aliases)
        if self.tokenizer == "auto":
            problems.append("tokenizer='auto' must be resolved to a concrete name before it is recorded")
        if problems:
            raise ConfigError("invalid memory configuration: " + "; ".join(problems))
        return self


def _policy_problems(policies: Any) -> list[str]:
    if not isinstance(policies, dict):
        return [f"source_policies={policies!r} must map a source name to its policy"]
    problems = []
    for source, policy in policies.items():
        where = f"source_policies[{source!r}]"
        if not isinstance(policy, dict):
            problems.append(f"{where}={policy!r} must be a mapping such as {{'remember': false}}")
            continue
        unknown = set(policy) - {"remember", "strip"}
        if unknown:
            problems.append(f"{where}: unknown keys {sorted(unknown)}; known: remember, strip")
        if "remember" in policy and not isinstance(policy["remember"], bool):
            problems.append(f"{where}['remember']={policy['remember']!r} must be true or false")
        strip = policy.get("strip", [])
        if not isinstance(strip, (list, tuple)) or not all(isinstance(p, str) for p in strip):
            problems.append(f"{where}['strip']={strip!r} must be a list of regular expressions")
            continue
        for pattern in strip:
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append(f"{where}['strip']: {pattern!r} is not a regular expression ({exc})")
    return problems


def alias_problems(aliases: Any, where: str = "slot_aliases") -> list[str]:
    """What is wrong with a {canonical: [alias, ...]} mapping (empty when nothing is)."""
    if not isinstance(aliases, dict):
        return [f"{where}={aliases!r} must map a canonical slot name to a list of its other names"]
    problems = []
    owner: dict[str, str] = {}
    for canonical, names in aliases.items():
        if not isinstance(canonical, str) or not canonical.strip():
            problems.append(f"{where}: {canonical!r} is not a slot name")
            continue
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n.strip() for n in names):
            problems.append(f"{where}[{canonical!r}]={names!r} must be a list of non-empty names")
            continue
        for name in (canonical, *names):
            seen = owner.setdefault(" ".join(name.lower().split()), canonical)
            if seen != canonical:
                problems.append(f"{where}: {name!r} is listed under both {seen!r} and {canonical!r}")
    return problems
