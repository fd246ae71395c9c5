"""What a dataset file was recognised as, and how much of it the loader understood."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

from ledgermem.datasets.model import DatasetError, read_dataset_json
from ledgermem.datasets.loaders.common import LoadOptions
from ledgermem.datasets.loaders.formats import detect, load_document

__all__ = ["Inspection", "inspect_file"]

_SHOWN = 5  # list items shown by render() before "and N more"


@dataclass(frozen=True, slots=True, kw_only=True)
class Inspection:
    """The recognised format and the counts of a loaded file; ``error`` when it does not load.

    ``unmapped_fields`` are keys no loader reads (``<level>.<key>``);
    ``ignored_fields`` are keys the loader knows and deliberately skips
    (generated summaries, image search queries); ``unmapped_evidence`` are
    evidence ids that name no turn (``<probe id>: <id>``).
    """

    path: str
    kind: str
    reason: str
    episodes: int = 0
    turns: int = 0
    probes_by_type: tuple[tuple[str, int], ...] = ()
    probes_with_evidence: int = 0
    evidence_ids: int = 0
    unmapped_evidence: tuple[str, ...] = ()
    unmapped_fields: tuple[str, ...] = ()
    ignored_fields: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def probes(self) -> int:
        return sum(count for _, count in self.probes_by_type)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["probes"] = self.probes
        data["probes_by_type"] = dict(self.probes_by_type)
        for key in ("unmapped_evidence", "unmapped_fields", "ignored_fields", "notes"):
            data[key] = list(data[key])
        return data

    def render(self) -> str:
        lines = [f"{self.path}: {self.kind}", f"  recognised as: {self.reason}"]
        if self.error is not None:
            lines.append(f"  error: {self.error}")
            return "\n".join(lines)
        lines.append(f"  episodes {self.episodes}, turns {self.turns}, probes {self.probes}")
        if self.probes_by_type:
            lines.append("  probes by type: " + ", ".join(f"{name} {count}" for name, count in self.probes_by_type))
        lines.append(f"  evidence: {self.probes_with_evidence} of {self.probes} probes name evidence "
                     f"({self.evidence_ids} record ids)" + _listed("; not mapped", self.unmapped_evidence))
        lines.append("  fields not mapped: " + (_listed("", self.unmapped_fields).lstrip(": ") or "none"))
        if self.ignored_fields:
            lines.append("  fields known, not loaded: " + _listed("", self.ignored_fields).lstrip(": "))
        if self.notes:
            lines.append(f"  notes ({len(self.notes)}):")
            lines += [f"    {note}" for note in self.notes[:_SHOWN]]
            if len(self.notes) > _SHOWN:
                lines.append(f"    ... and {len(self.notes) - _SHOWN} more")
        return "\n".join(lines)


def _listed(label: str, items: tuple[str, ...]) -> str:
    if not items:
        return ""
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return f"{label}: {', '.join(items[:_SHOWN])}{more}"


def inspect_file(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    question_types: Collection[str] | None = None,
    max_turns: int | None = None,
) -> Inspection:
    """Recognise and load ``path`` as ``load_dataset`` would, and describe the result.

    A file that cannot be read or parsed as JSON raises ``DatasetError``; a
    file that parses but does not load is described with its ``error``.
    """
    text_path = os.fspath(path)
    options = LoadOptions.of(limit=limit, question_types=question_types, max_turns=max_turns)
    document = read_dataset_json(text_path)
    detection = detect(document)
    try:
        loaded = load_document(text_path, document, options)
    except DatasetError as exc:
        return Inspection(path=text_path, kind=detection.kind, reason=detection.reason, error=str(exc))
    episodes = loaded.dataset.episodes
    probes = [probe for episode in episodes for probe in episode.probes]
    unmapped = set(loaded.unmapped_evidence)
    mapped = sum(1 for episode in episodes for probe in episode.probes for evidence in probe.evidence
                 if f"{probe.probe_id}: {evidence}" not in unmapped)
    return Inspection(
        path=text_path,
        kind=detection.kind,
        reason=detection.reason,
        episodes=len(episodes),
        turns=sum(len(episode.turns) for episode in episodes),
        probes_by_type=tuple(sorted(Counter(probe.type for probe in probes).items())),
        probes_with_evidence=sum(1 for probe in probes if probe.evidence),
        evidence_ids=mapped,
        unmapped_evidence=loaded.unmapped_evidence,
        unmapped_fields=loaded.unmapped_fields,
        ignored_fields=loaded.ignored_fields,
        notes=loaded.dataset.notes,
    )
