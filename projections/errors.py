"""Errors of the projections layer.

    LedgermemError (ledger.errors)
    └── ProjectionError
        ├── ConfigError (also ValueError)     a configuration that cannot work: the memory's (projections.config),
        │                                     a backend's or the cache's settings (memory.settings, memory.cache)
        ├── EvolveError                       an event that does not apply to the state (names the seq)
        └── ProjectionsBehind                 a projection file that is not a whole fold of its ledger
"""

from __future__ import annotations

from ledgermem.ledger.errors import LedgermemError


class ProjectionError(LedgermemError):
    """A read model could not be built."""


class ConfigError(ProjectionError, ValueError):
    """A configuration that cannot work: the memory's own, or the settings of a backend or the cache."""


class EvolveError(ProjectionError):
    """An event refers to something the state does not have."""


class ProjectionsBehind(ProjectionError):
    """A projection file that does not hold a whole fold of its ledger: an interrupted fill or run, or older."""
