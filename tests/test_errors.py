"""One error tree: every error class in its package's `errors.py`, under `LedgermemError`, without an HTTP status.

The service maps errors to HTTP statuses in one table
(`service.questions.STATUS`), resolved along the error's MRO; no error
class carries a status of its own.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType

import pytest

from ledgermem.service.catalog import Catalog
from ledgermem.memory.errors import RunNotFound
from ledgermem.service.errors import (
    AuditFailed, BadRequest, CatalogError, Closing, Conflict, MethodNotAllowed, NotFound, RunBusy, ServiceError, SnapshotFailed, TimedOut, TooDeep, Unavailable, UnknownRun,
)
from ledgermem.service.questions import STATUS, error_body
from ledgermem.ledger.errors import LedgermemError

PACKAGES = tuple(f"ledgermem.{p}" for p in (
    "ledger", "projections", "temporal", "gate", "memory", "datasets", "evaluation", "service", "cli"))

#: Exception classes that may live outside an `errors.py` (and outside the tree), with the reason.
ALLOWED: Mapping[str, str] = {
    "ledgermem.ledger.chain._NotInSeqOrder": "private signal of the storage-order walk; caught in ledger.chain, never raised out",
    "ledgermem.memory.cache._Corrupt": "private signal of a cached entry to rebuild; caught in memory.cache, never raised out",
    "ledgermem.memory.cache._OtherFormat": "private: a _Corrupt for an entry of another format version; caught the same way",
    "ledgermem.evaluation.workers._Stopped": "private signal that stops a worker once another failed; caught in the worker",
}


def modules(packages: Iterable[str] = PACKAGES) -> Iterator[ModuleType]:
    """Every module of the packages, imported (`__main__` modules, which run the CLI, excepted)."""
    for name in packages:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                yield importlib.import_module(info.name)


def error_classes(mods: Iterable[ModuleType]) -> list[type[BaseException]]:
    """The exception classes defined (not merely imported) in the modules."""
    return [obj for mod in mods for obj in vars(mod).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == mod.__name__]


def problems(classes: Iterable[type[BaseException]], allowed: Mapping[str, str] = ALLOWED) -> list[str]:
    """One line per error class that leaves the tree: outside an `errors` module, not a LedgermemError, a status."""
    out = []
    for cls in classes:
        name = f"{cls.__module__}.{cls.__qualname__}"
        if hasattr(cls, "status"):
            out.append(f"{name}: carries an HTTP status ({cls.status!r}); map it in service.questions.STATUS")  # type: ignore[attr-defined]
        if name in allowed:
            continue
        if cls.__module__.rsplit(".", 1)[-1] != "errors":
            out.append(f"{name}: defined outside an errors.py")
        if not issubclass(cls, LedgermemError):
            out.append(f"{name}: not a LedgermemError")
    return out


@pytest.fixture(scope="module")
def classes() -> list[type[BaseException]]:
    return error_classes(modules())


def test_every_error_is_in_an_errors_module_under_the_root_and_carries_no_status(
        classes: list[type[BaseException]]) -> None:
    assert len(classes) > 60, len(classes)  # the walk reached every package
    assert problems(classes) == []


def test_the_allow_list_names_classes_that_exist(classes: list[type[BaseException]]) -> None:
    names = {f"{c.__module__}.{c.__qualname__}" for c in classes}
    assert set(ALLOWED) <= names, set(ALLOWED) - names


class StrayError(ValueError):
    """Must-fail control: outside an errors module and outside the tree."""


class ServedError(LedgermemError):
    """Must-fail control: in the tree, but outside an errors module and with an HTTP status of its own."""

    status = 418


def test_the_check_reports_a_stray_class() -> None:
    found = problems([StrayError, ServedError])
    assert found == [
        f"{__name__}.StrayError: defined outside an errors.py",
        f"{__name__}.StrayError: not a LedgermemError",
        f"{__name__}.ServedError: carries an HTTP status (418); map it in service.questions.STATUS",
        f"{__name__}.ServedError: defined outside an errors.py",
    ]
    # the allow-list exempts a private class from the place and the root, never from the status rule
    assert problems([StrayError], {f"{__name__}.StrayError": "control"}) == []
    assert problems([ServedError], {f"{__name__}.ServedError": "control"}) == [found[2]]


def test_one_config_error_and_one_no_such_run(classes: list[type[BaseException]]) -> None:
    assert [c.__module__ for c in classes if c.__name__ == "ConfigError"] == ["ledgermem.projections.errors"]
    import ledgermem.memory.errors
    import ledgermem.projections.errors
    assert ledgermem.memory.errors.ConfigError is ledgermem.projections.errors.ConfigError
    assert issubclass(UnknownRun, RunNotFound) and issubclass(UnknownRun, CatalogError)
    assert [c for c in classes if c.__name__ in {"RunNotFound", "UnknownRun"}] == [RunNotFound, UnknownRun]


@pytest.mark.parametrize(("exc", "status"), [
    (BadRequest("x"), 400), (TooDeep("x"), 400), (MethodNotAllowed("x"), 405), (NotFound("x"), 404),
    (Conflict("x"), 409), (Unavailable("x"), 503), (AuditFailed("x"), 500), (ServiceError("x"), 500),
    (RunNotFound("x"), 404), (UnknownRun("x"), 404), (RunBusy("x"), 409), (TimedOut("x"), 504),
    (Closing("x"), 503), (SnapshotFailed("x"), 503), (CatalogError("x"), 500),
    (ValueError("x"), 500),
])
def test_statuses_come_from_the_one_table_by_mro(exc: BaseException, status: int) -> None:
    assert error_body(exc)[0] == status


def test_an_error_without_an_entry_falls_back_as_before() -> None:
    class Asked(LedgermemError, ValueError):
        pass

    assert error_body(Asked("bad"))[0] == 400  # a question asked wrongly
    assert error_body(LedgermemError("broken")) == (500, {"error": "broken", "status": 500})
    assert all(issubclass(k, LedgermemError) for k in STATUS)


def test_the_body_names_the_parameter_and_the_detail() -> None:
    assert error_body(BadRequest("limit: not a number", "limit", detail={"got": "x"})) == (
        400, {"error": "limit: not a number", "status": 400, "parameter": "limit", "detail": {"got": "x"}})


def test_the_catalog_says_no_such_run_with_run_not_found(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="no runs here") as caught:
        Catalog(tmp_path)
    assert isinstance(caught.value, UnknownRun) and error_body(caught.value)[0] == 404
