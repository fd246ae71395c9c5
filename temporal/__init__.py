"""Time travel over the projections: as-of, history, diff, blame, manifests, anomalies, DDL."""

from ledgermem.temporal.ddl import postgres_ddl
from ledgermem.temporal.queries import (
    Blame, Episode, anomalies, as_of, blame, diff, fact_history, install, instant, manifest,
    seq_at_time, time_position,
)

__all__ = [
    "Blame", "Episode", "anomalies", "as_of", "blame", "diff", "fact_history", "install", "instant", "manifest",
    "postgres_ddl", "seq_at_time", "time_position",
]
