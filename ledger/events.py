"""The event envelope's body and the registry of event types.

The ledger stores events of types it does not know: each package that
records something declares its own event classes (frozen, slotted,
keyword-only dataclasses deriving from `Event`) and registers them with
`@register`. The ledger encodes and decodes by the registered name
(`event_type`, the string stored in the `events` table) and never names an
event type itself. Which types exist is therefore a matter of which modules
are imported: the memory's events are registered by `ledgermem.projections`
(the layer that folds them), the harness's by `ledgermem.evaluation`; a
stored row whose type no imported module registered is a decode error that
names its seq and type (`ledger.errors.UnknownEventType`), never a skip.

Fields whose names are in `TYPED_COLUMNS` are stored in typed columns that
SQL can filter on; the field named by a class's `IDS` goes to the `ids`
list column; every other field goes into the canonical JSON `payload`. The
columns and their types are fixed here and in `ledger/schema.py`, not
derived from whatever happens to be registered, so the table is the same in
every process.

Names are past tense: something that happened, never a request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, TypeVar

from ledgermem.ledger.errors import InvalidEvent

#: Event fields that become typed columns of the `events` table, in column order.
TYPED_COLUMNS: tuple[str, ...] = (
    "turn",
    "occurred_at",
    "summary_id",
    "record_id",
    "index_id",
    "probe_id",
    "slot",
    "value",
    "ids",
    "text",
    "latency_ms",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of all events. `turn` is event time: the dialogue turn it belongs to."""

    event_type: ClassVar[str] = ""
    schema_version: ClassVar[int] = 1
    IDS: ClassVar[str | None] = None
    #: Fields holding a data subject's values: sealed when the stream holds personal data.
    PERSONAL: ClassVar[tuple[str, ...]] = ()
    SPARSE: ClassVar[tuple[str, ...]] = ()
    #: True for an event that records destroyed keys: the ledger keeps the seq of the last one (what the
    #: projections compare their erasure mark with) without knowing which event type that is.
    SHREDS_KEYS: ClassVar[bool] = False

    turn: int = 0
    occurred_at: str | None = None


E = TypeVar("E", bound=type[Event])

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_REGISTRY: dict[str, type[Event]] = {}

#: Every registered event type by its stored name: a read-only view that grows as packages register theirs.
EVENT_TYPES: Mapping[str, type[Event]] = MappingProxyType(_REGISTRY)


def _where(cls: type[Event]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: E) -> E:
    """Register an event class under its `event_type`; used as a class decorator.

    The name is what the ledger stores, so it is checked once here: a
    lower-case identifier, not taken by another class. Registering the same
    class again (a module imported twice under one name) is a no-op.
    """
    name = cls.event_type
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidEvent(f"{_where(cls)}: event_type {name!r} must be a lower-case name like 'item_added'")
    if not (isinstance(cls, type) and issubclass(cls, Event) and "__dataclass_fields__" in vars(cls)):
        raise InvalidEvent(f"{_where(cls)}: an event type must be a dataclass deriving from ledger.events.Event")
    known = _REGISTRY.get(name)
    if known is not None and known is not cls and _where(known) != _where(cls):
        raise InvalidEvent(f"{_where(cls)}: event type {name!r} is already registered by {_where(known)}")
    _REGISTRY[name] = cls
    return cls


def event_class(name: str) -> type[Event] | None:
    """The class registered under `name`, or None."""
    return _REGISTRY.get(name)


def is_registered(cls: type[Event]) -> bool:
    """Whether `cls` itself (not merely a class of the same name) is registered."""
    return _REGISTRY.get(cls.event_type) is cls
