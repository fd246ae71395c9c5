"""`ledgermem history | as-of | diff | blame | manifest | anomalies | ddl`: thin shells over `temporal`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ledgermem.cli.main import cli, fails_cleanly, out
from ledgermem.cli.options import json_option, runs_dir_option
from ledgermem.cli.output import emit, rows_table
from ledgermem.memory.errors import RunNotFound
from ledgermem.evaluation.replay import pick_run
from ledgermem.memory.runs import check_seq, open_run, resolve_run
from ledgermem.ledger.store import StreamKey
from ledgermem.temporal import (
    Episode, anomalies, as_of, blame, diff, fact_history, instant, manifest, postgres_ddl, seq_at_time,
)
from ledgermem.temporal.queries import LAYERS


def episode_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = json_option("Machine-readable output.")(fn)
    fn = runs_dir_option(fn)
    fn = click.option("--system", default="three_layer", show_default=True)(fn)
    fn = click.option("--episode", required=True, help="Episode id.")(fn)
    return click.argument("run")(fn)


@contextmanager
def run_connection(run: str, runs_dir: str, system: str, episode: str,
                   seqs: dict[str, int | None] | None = None) -> Iterator[tuple[Any, Episode]]:
    """The run's connection and episode; `seqs` (option -> seq) must lie within the ledger."""
    path = resolve_run(run, Path(runs_dir))
    with open_run(path) as (ledger, _):
        for option, seq in (seqs or {}).items():
            check_seq(ledger, option, seq)
        ep = Episode(pick_run(ledger, None), system, episode)
        if StreamKey(ep.run_id, system, episode) not in dict(ledger.streams()):
            known = sorted({s.episode_id for s, _ in ledger.streams() if s.episode_id})
            raise RunNotFound(f"{path}: no episode {episode!r} of system {system!r}; episodes: "
                              f"{', '.join(known[:12])}{' ...' if len(known) > 12 else ''}")
        yield ledger.conn, ep


def at_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--at", "at", default=None, metavar="TIME",
                        help="Wall-clock time with a timezone (ISO 8601, e.g. 2026-11-01T09:00Z), read from each "
                             "event's recorded time.")(fn)


class SeqOrTime(click.ParamType):
    """A seq (an integer from 0) or an ISO 8601 time with a timezone."""

    name = "SEQ|TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | Any:
        if isinstance(value, int) or str(value).strip().isdigit():
            return int(value)
        label = param.human_readable_name if param is not None else "value"
        try:
            return instant(str(value), label)
        except ValueError as exc:
            self.fail(str(exc).split(": ", 1)[-1], param, ctx)


@cli.command("history")
@episode_options
@click.option("--slot", required=True)
@at_option
@fails_cleanly
def history_cmd(run: str, episode: str, system: str, runs_dir: str, as_json: bool, slot: str,
                at: str | None) -> None:
    """Every value a slot had, with the turn and seq interval in which it was current
    (with --at: as the history stood at that time).

    \b
    Example:
      ledgermem history demo --episode syn-en-000 --slot "meeting time"
      ledgermem history demo --episode syn-en-000 --slot "meeting time" --at 2026-11-01T09:00Z
    """
    moment = instant(at) if at is not None else None
    with run_connection(run, runs_dir, system, episode) as (conn, ep):
        rows = fact_history(conn, ep, slot, at=moment)
    emit(rows, as_json=as_json, title=f"history of {slot!r} in {episode}")


@cli.command("as-of")
@episode_options
@click.option("--seq", type=click.IntRange(min=0), default=None,
              help="System time: after this seq (0 to the ledger's last seq).")
@click.option("--turn", type=click.IntRange(min=0), default=None,
              help="Event time: after this dialogue turn (0: before the first).")
@at_option
@fails_cleanly
def as_of_cmd(run: str, episode: str, system: str, runs_dir: str, as_json: bool,
              seq: int | None, turn: int | None, at: str | None) -> None:
    """Every layer of an episode's memory as it was at a seq, a turn or a wall-clock time.

    \b
    Example:
      ledgermem as-of demo --episode syn-en-000 --turn 10
      ledgermem as-of demo --episode syn-en-000 --at 2026-11-01T09:00Z
    """
    if sum(x is not None for x in (seq, turn, at)) != 1:
        raise click.UsageError("give exactly one of --seq, --turn or --at")
    moment = instant(at) if at is not None else None
    with run_connection(run, runs_dir, system, episode, {"--seq": seq}) as (conn, ep):
        layers = as_of(conn, ep, seq=seq, turn=turn, at=moment)

    def human() -> None:
        for layer in LAYERS:
            if layers[layer]:
                out.print(rows_table(layers[layer], title=layer))
    emit(layers, as_json=as_json, human=human)


@cli.command("diff")
@episode_options
@click.argument("seq_a", type=SeqOrTime())
@click.argument("seq_b", type=SeqOrTime())
@fails_cleanly
def diff_cmd(run: str, episode: str, system: str, runs_dir: str, as_json: bool, seq_a: Any, seq_b: Any) -> None:
    """What entered and left each layer between two points: each a seq or a wall-clock time with a timezone
    (ISO 8601, read from each event's recorded time).

    \b
    Example:
      ledgermem diff demo --episode syn-en-000 30 60
      ledgermem diff demo --episode syn-en-000 2026-11-01T09:00Z 2026-11-01T10:00Z
    """
    seqs = {k: v for k, v in (("SEQ_A", seq_a), ("SEQ_B", seq_b)) if isinstance(v, int)}
    with run_connection(run, runs_dir, system, episode, seqs) as (conn, ep):
        a, b = (v if isinstance(v, int) else seq_at_time(conn, ep, v) for v in (seq_a, seq_b))
        changes = diff(conn, ep, a, b)

    def human() -> None:
        for layer, moved in changes.items():
            for direction in ("entered", "left"):
                if moved[direction]:
                    out.print(rows_table(moved[direction], title=f"{layer}: {direction}"))
    emit(changes, as_json=as_json, human=human)


@cli.command("blame")
@episode_options
@click.option("--slot", required=True)
@fails_cleanly
def blame_cmd(run: str, episode: str, system: str, runs_dir: str, as_json: bool, slot: str) -> None:
    """The summary, turn and raw record that produced a slot's current value.

    \b
    Example:
      ledgermem blame demo --episode syn-en-000 --slot "office floor"
    """
    with run_connection(run, runs_dir, system, episode) as (conn, ep):
        b = blame(conn, ep, slot)
    data = {"slot": b.slot, "value": b.value, "erased": b.erased, "summary": b.summary,
            "records": b.records, "overrode": b.overrode}

    def human() -> None:
        if b.summary is None:
            out.print(f"{slot}: no current value" + (" (erased)" if b.erased else ""))
            return
        s = b.summary
        where = s["status"] + (f" under {s['index_id']}" if s["index_id"] else "")
        out.print(f"{slot} = {b.value}: from {s['summary_id']} (turn {s['created_turn']}, {where})")
        for r in b.records:
            out.print(f"  raw record {r['record_id']} (turn {r['turn']}, {r['occurred_at']}): {r['user_text']}")
        for h in b.overrode:
            out.print(f"  replaced {h['value']!r} from {h['summary_id']} (turns {h['valid_from_turn']}-"
                      f"{h['valid_to_turn']})")
    emit(data, as_json=as_json, human=human)


@cli.command("manifest")
@episode_options
@click.option("--probe", "probe_id", default=None)
@click.option("--turn", type=click.IntRange(min=0), default=None, help="Only prompts rendered at this turn.")
@fails_cleanly
def manifest_cmd(run: str, episode: str, system: str, runs_dir: str, as_json: bool,
                 probe_id: str | None, turn: int | None) -> None:
    """The exact ids and token costs of every prompt rendered for the model (filter by probe or turn).

    \b
    Example:
      ledgermem manifest demo --episode syn-en-000 --probe syn-en-000:p0
    """
    with run_connection(run, runs_dir, system, episode) as (conn, ep):
        rows = manifest(conn, ep, probe_id=probe_id, turn=turn)
    emit(rows, as_json=as_json, title="context manifests")


@cli.command("anomalies")
@episode_options
@fails_cleanly
def anomalies_cmd(run: str, episode: str, system: str, runs_dir: str, as_json: bool) -> None:
    """Patterns worth a look in an episode's history (values that flip back, stale live summaries,
    slot names suspected of naming an attribute the episode already had).

    \b
    Example:
      ledgermem anomalies demo --episode syn-en-000
    """
    with run_connection(run, runs_dir, system, episode) as (conn, ep):
        found = anomalies(conn, ep)

    def human() -> None:
        for name, rows in found.items():
            out.print(rows_table(rows, title=f"{name}: {len(rows)}") if rows else f"{name}: none")
    emit(found, as_json=as_json, human=human)


@cli.command("ddl")
@click.option("--dialect", type=click.Choice(["postgres"]), default="postgres", show_default=True)
@fails_cleanly
def ddl_cmd(dialect: str) -> None:
    """Print CREATE TABLE statements for the ledger and its projections in another database's dialect.

    \b
    Example:
      ledgermem ddl --dialect postgres > schema.sql
    """
    click.echo(postgres_ddl(), nl=False)
