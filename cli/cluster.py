"""`ledgermem run --cluster` and `ledgermem merge`: a run's episodes over Dask workers, shard ledgers merged."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledgermem.cli.main import cli, err, fails_cleanly, out
from ledgermem.cli.options import json_option, runs_dir_option
from ledgermem.cli.output import emit, metrics_table
from ledgermem.datasets.model import Dataset
from ledgermem.evaluation.merge import MergeResult, check_run_id, merge_shards, shard_ledger_of, shard_ledgers
from ledgermem.evaluation.runner import RunOptions
from ledgermem.memory.runs import ledger_path

cluster_option = click.option(
    "--cluster", "cluster", default=None, metavar="ADDRESS|local:N",
    help="Run the episodes as shards on a Dask cluster: local:N starts N worker processes here, an address "
         "(tcp://host:8786) uses a running scheduler; --runs-dir must be reachable by every worker. The shard "
         "ledgers are merged into the run's ledger (needs the 'cluster' extra).")
shards_option = click.option("--shards", type=click.IntRange(min=1), default=None,
                              help="With --cluster: number of shards (default: the cluster's workers).")


def run_on_cluster(ds: Dataset, opts: RunOptions, address: str, shards: int | None, *, as_json: bool) -> None:
    """`run --cluster`: run the shards, merge them, print what `run` prints; exit 1 while a shard is incomplete."""
    from ledgermem.evaluation.cluster import connect, run_cluster

    check_run_id(opts.run_id)
    with connect(address) as client:
        result = run_cluster(ds, opts, client, shards=shards,
                             progress=lambda s: err.print(f"shard {s.index} done: {s.episodes} episode(s), "
                                                          f"{s.ledger_path}", markup=False))
    merged = result.merged
    if as_json:
        emit({"run_id": opts.run_id, "ledger": str(merged.ledger_path) if merged else None,
              "shards": [str(s.ledger_path) for s in result.shards], "metrics": merged.metrics if merged else None,
              "incomplete": list(result.incomplete)}, as_json=True, ascii_only=True)
    elif merged is not None:
        _show(merged)
    if merged is None:
        err.print(f"error: {len(result.incomplete)} episode(s) stopped at a failed LLM call "
                  f"({', '.join(result.incomplete[:5])}); nothing merged. Run the same command again to redo them",
                  markup=False)
        sys.exit(1)


def _show(merged: MergeResult) -> None:
    out.print(metrics_table(merged.metrics, f"run {merged.run_id} ({merged.shards} shards merged)"))
    out.print(f"ledger: {merged.ledger_path} ({merged.events} events, {merged.streams} streams; "
              f"shards under {merged.ledger_path.parent / 'shards'})")
    out.print(f"checkpoint: {merged.checkpoint}", markup=False)


@cli.command("merge")
@click.argument("run")
@click.argument("shards", nargs=-1, type=click.Path(exists=True))
@runs_dir_option
@click.option("--force", is_flag=True, help="Replace the run's ledger if one is already there.")
@json_option()
@fails_cleanly
def merge_cmd(run: str, shards: tuple[str, ...], runs_dir: str, force: bool, as_json: bool) -> None:
    """Merge the shard ledgers of RUN (a `run --cluster`) into the run's one ledger.

    Every shard must verify, have finished, and hold the same run
    configuration; an episode stream held by two shards is refused.
    Streams are copied unchanged, the seq and hash chain are written
    anew, run_finished is recomputed, projections and derived files are
    rebuilt. SHARDS default to <runs-dir>/RUN/shards/<k>; a shard may
    also be given as its ledger file or folder.

    \b
    Example:
      ledgermem merge demo
      ledgermem merge demo /mnt/shared/demo-a/shards/0 /mnt/shared/demo-b/shards/1 --force
    """
    check_run_id(run)
    paths = [shard_ledger_of(Path(s), run) for s in shards] if shards else shard_ledgers(Path(runs_dir), run)
    merged = merge_shards(paths, ledger_path(Path(runs_dir), run), overwrite=force)
    if as_json:
        emit({"run_id": merged.run_id, "ledger": str(merged.ledger_path), "shards": [str(p) for p in paths],
              "events": merged.events, "streams": merged.streams, "metrics": merged.metrics},
             as_json=True, ascii_only=True)
        return
    _show(merged)
