"""Time travel over the projections: as-of, history, diff, blame, manifests, anomalies, DDL."""

from ledgermem.temporal.ddl import postgres_ddl
from ledgermem.temporal.queries import Blame, Episode, anomalies, as_of, blame, diff, fact_history, install, manifest

__all__ = [
    "Blame", "Episode", "anomalies", "as_of", "blame", "diff", "fact_history", "install", "manifest", "postgres_ddl",
]
