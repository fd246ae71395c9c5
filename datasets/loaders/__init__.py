"""Loaders for the evaluation dataset formats, chosen by the structure of the file.

    seed           the project's own format (``datasets.model``)
    locomo-list    LoCoMo ``locomo10.json``: a list of samples         (locomo.py)
    locomo-single  one LoCoMo conversation per file                    (locomo.py)
    longmemeval    LongMemEval ``_s`` / ``_m`` / ``_oracle``: questions (longmemeval.py)
    meme           the seed fields under other names (``meme.ALIASES``) (meme.py)

Every loader refuses structural faults (duplicate ids, empty dialogues,
facts past the dialogue) through ``structure.py``, naming the positions.
``load_dataset`` reads a file and calls ``load_document``; ``inspect_file`` says what a file was recognised as,
what it holds and which of its fields were not understood.
"""

import os
from collections.abc import Collection

from ledgermem.datasets.model import Dataset, read_dataset_json
from ledgermem.datasets.loaders.common import Loaded, LoadOptions
from ledgermem.datasets.loaders.formats import FORMATS, Detection, detect, load_document
from ledgermem.datasets.loaders.inspection import Inspection, inspect_file

__all__ = [
    "FORMATS", "Detection", "Inspection", "LoadOptions", "Loaded", "detect", "inspect_file", "load_dataset",
    "load_document",
]


def load_dataset(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    question_types: Collection[str] | None = None,
    max_turns: int | None = None,
) -> Dataset:
    """Load a dataset file of any supported format; raise ``DatasetError`` on any malformed record.

    The format is recognised by structure (``datasets.loaders.detect``).
    ``question_types`` keeps the probes of those types (and the episodes
    left with any) and is applied before ``limit``, the number of episodes
    kept; ``max_turns`` caps a session-based episode (LoCoMo, LongMemEval)
    by dropping its oldest sessions that hold no evidence.  A file either
    loads whole or fails: no record is skipped.
    """
    text_path = os.fspath(path)
    options = LoadOptions.of(limit=limit, question_types=question_types, max_turns=max_turns)
    return load_document(text_path, read_dataset_json(text_path), options).dataset
