"""Loaders for the evaluation dataset formats, chosen by the structure of the file.

    seed           the project's own format (``evaluation.datasets``)
    locomo-list    LoCoMo ``locomo10.json``: a list of samples         (locomo.py)
    locomo-single  one LoCoMo conversation per file                    (locomo.py)
    longmemeval    LongMemEval ``_s`` / ``_m`` / ``_oracle``: questions (longmemeval.py)
    meme           the seed fields under other names (``meme.ALIASES``) (meme.py)

Every loader refuses structural faults (duplicate ids, empty dialogues,
facts past the dialogue) through ``structure.py``, naming the positions.
``evaluation.datasets.load_dataset`` reads a file and calls
``load_document``; ``inspect_file`` says what a file was recognised as,
what it holds and which of its fields were not understood.
"""

from evaluation.loaders.common import Loaded, LoadOptions
from evaluation.loaders.formats import FORMATS, Detection, detect, load_document
from evaluation.loaders.inspection import Inspection, inspect_file

__all__ = ["FORMATS", "Detection", "Inspection", "LoadOptions", "Loaded", "detect", "inspect_file", "load_document"]
