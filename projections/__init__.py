"""Read models folded from the ledger: pure `evolve`, SCD-2 tables, `render`.

Importing the package registers the memory's event types with the ledger
(`projections.events`), so every reader that folds a stream can decode it.
"""

from ledgermem.projections import events as events  # registers the memory's event types
