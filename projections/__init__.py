"""Read models folded from the ledger: pure `evolve`, SCD-2 tables, `render`."""
