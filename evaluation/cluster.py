"""A run's episodes across the worker processes of a Dask cluster, one ledger per shard, then one merge.

The dataset's episodes are cut into contiguous shards. Each shard is a task
that runs `evaluation.runner.run` on its episodes only, into a run folder of
its own on storage every worker can reach::

    <runs_dir>/<run>/shards/plan.json                   which episodes each shard runs
    <runs_dir>/<run>/shards/<k>/<run>/ledger.duckdb     shard k: a complete, verifiable run ledger
    <runs_dir>/<run>/ledger.duckdb                      the merged run (evaluation.merge)

Every shard records the same `run_started` (the whole dataset, the same
configuration), so a shard is resumed like any run: running the same
command again continues every shard from its ledger. The plan is written
once; a later command with another number of shards is refused rather than
running an episode in two shards.

Dask is an optional dependency (`pip install 'ledgermem[cluster]'`), imported
only here, only when a cluster is asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ledgermem.datasets.model import Dataset
from ledgermem.evaluation.errors import EvaluationError
from ledgermem.memory.errors import RunExists
from ledgermem.evaluation.merge import SHARDS_DIR, MergeResult, check_run_id, merge_shards, shard_folder
from ledgermem.memory.names import remove_run
from ledgermem.evaluation.outputs import write_outputs
from ledgermem.evaluation.runner import RunOptions, check_counts, run
from ledgermem.memory.runs import ledger_path

PLAN_FILE = "plan.json"
LOCAL = re.compile(r"local:([1-9][0-9]{0,2})")
ADDRESS = re.compile(r"(tcp|tls|ucx|ws|wss|inproc)://[^\s/]+|[A-Za-z0-9.\-]+:[0-9]{1,5}")
INSTALL_HINT = "pip install 'ledgermem[cluster]' (Dask's distributed scheduler)"


@dataclass(frozen=True, slots=True)
class ShardResult:
    index: int
    ledger_path: Path
    episodes: int
    incomplete: tuple[str, ...] = ()
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterResult:
    run_id: str
    shards: tuple[ShardResult, ...]
    merged: MergeResult | None  # None while a shard is incomplete

    @property
    def incomplete(self) -> tuple[str, ...]:
        return tuple(f"shard {s.index}: {item}" for s in self.shards for item in s.incomplete)


def plan_shards(episode_ids: Sequence[str], shards: int) -> list[tuple[str, ...]]:
    """Contiguous runs of episodes, sizes differing by at most one, none empty."""
    if shards < 1:
        raise EvaluationError(f"--shards must be at least 1, not {shards}")
    n = min(shards, len(episode_ids))
    cuts = [round(i * len(episode_ids) / n) for i in range(n + 1)] if n else [0]
    return [tuple(episode_ids[a:b]) for a, b in zip(cuts, cuts[1:])]


def _plan(root: Path, episode_ids: Sequence[str], shards: int) -> list[tuple[str, ...]]:
    """The run's shard plan: written on the first call, and the same plan required on every later one."""
    plan = plan_shards(episode_ids, shards)
    path = root / SHARDS_DIR / PLAN_FILE
    if path.is_file():
        try:
            recorded = [tuple(ids) for ids in json.loads(path.read_text(encoding="utf-8"))["shards"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EvaluationError(f"{path}: unreadable shard plan: {exc!r}") from exc
        if recorded != plan:
            raise RunExists(f"{path}: this run was cut into {len(recorded)} shard(s) of other episodes; give "
                            f"--shards {len(recorded)} to resume it, or --force to start it again")
        return plan
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"shards": [list(ids) for ids in plan]}, indent=2) + "\n", encoding="utf-8")
    return plan


def run_shard(index: int, dataset: Dataset, opts: RunOptions) -> ShardResult:
    """One shard, on a worker: the runner over the shard's episodes, then the shard's derived files."""
    result = run(dataset, opts)
    write_outputs(result.ledger_path)
    return ShardResult(index, result.ledger_path, len(opts.episode_ids or ()), result.incomplete, result.last_error)


def parse_address(text: str) -> tuple[str, int | None]:
    """`local:N` (a cluster of N worker processes on this machine) or a scheduler address."""
    local = LOCAL.fullmatch(text.strip())
    if local:
        return "local", int(local.group(1))
    if ADDRESS.fullmatch(text.strip()) and not text.strip().startswith("local:"):
        return text.strip(), None
    raise EvaluationError(f"--cluster {text!r}: give local:N (N worker processes here, 1-999) or a Dask "
                          "scheduler address such as tcp://10.0.0.5:8786")


@contextmanager
def connect(address: str) -> Iterator[Any]:
    """A Dask client: of a new local cluster of worker processes, or of the scheduler at `address`."""
    where, workers = parse_address(address)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise EvaluationError(f"--cluster needs Dask: {INSTALL_HINT}") from exc
    if workers is not None:
        with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None) as cl, \
                Client(cl) as client:
            yield client
        return
    try:
        client = Client(where, timeout="30s")
    except OSError as exc:
        raise EvaluationError(f"--cluster {where}: no Dask scheduler answers there: {exc}") from exc
    with client:
        yield client


def run_cluster(dataset: Dataset, opts: RunOptions, client: Any, *, shards: int | None = None,
                progress: Callable[[ShardResult], None] | None = None) -> ClusterResult:
    """Run the dataset's episodes as shards on the client's workers, then merge the shard ledgers.

    `opts.runs_dir` must be a folder every worker reaches at the same path
    (on one machine, any local folder).
    """
    check_run_id(opts.run_id)
    check_counts(opts)
    if opts.cache is not None or opts.replay_llm is not None or opts.episode_ids is not None:
        raise EvaluationError("a cluster run takes no --redis cache and no --replay-llm: each worker process "
                              "would need its own")
    runs_dir = Path(opts.runs_dir).resolve()
    root, merged = runs_dir / opts.run_id, ledger_path(runs_dir, opts.run_id)
    if opts.force:
        remove_run(runs_dir, opts.run_id)
    elif merged.exists():
        raise RunExists(f"run {opts.run_id!r} already has a ledger at {merged}; pass --force to run it again, "
                        "or choose another --run-id")
    episodes = dataset.episodes[: opts.limit] if opts.limit else dataset.episodes
    count = shards or max(1, len(client.scheduler_info().get("workers", {})))
    plan = _plan(root, [ep.episode_id for ep in episodes], count)
    shared = client.scatter(dataset, broadcast=True)
    env_file = opts.env_file.resolve() if opts.env_file is not None else None
    futures = [
        client.submit(run_shard, k, shared,
                      replace(opts, runs_dir=shard_folder(runs_dir, opts.run_id, k), episode_ids=ids,
                              force=False, env_file=env_file),
                      key=f"ledgermem-{opts.run_id}-shard-{k}", pure=False)
        for k, ids in enumerate(plan)
    ]
    from dask.distributed import as_completed

    done: list[ShardResult] = []
    for future in as_completed(futures):
        result: ShardResult = future.result()  # a shard's error is raised here, as the worker raised it
        done.append(result)
        if progress is not None:
            progress(result)
    done.sort(key=lambda r: r.index)
    if any(r.incomplete for r in done):
        return ClusterResult(opts.run_id, tuple(done), None)
    return ClusterResult(opts.run_id, tuple(done), merge_shards([r.ledger_path for r in done], merged))
