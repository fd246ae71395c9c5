"""The harness: runner, systems, metrics, judges, replay, report.

Importing the package registers the harness's event types with the ledger
(`evaluation.events`), so whatever reads a run the harness wrote can decode it.
"""

from ledgermem.evaluation import events as events  # registers the harness's event types
