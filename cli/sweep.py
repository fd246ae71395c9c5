"""`ledgermem sweep`: gate levels × datasets through three_layer, printed as one Markdown table."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ledgermem.cli.main import cli, fails_cleanly
from ledgermem.cli.options import context_options, json_option, kept_runs_dir_option
from ledgermem.cli.output import emit
from ledgermem.datasets.loaders import load_dataset
from ledgermem.evaluation.runner import RunOptions
from ledgermem.evaluation.sweep import SweepCase, builtin_cases, parse_levels, sweep, sweep_markdown
from ledgermem.projections.config import CHAIN_STRATEGIES, GATE_LEVELS, MemoryConfig


@contextlib.contextmanager
def _runs_dir(given: str | None) -> Iterator[Path]:
    """The given folder (its runs are kept), or a temporary one removed afterwards."""
    if given is not None:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix="ledgermem-sweep-") as tmp:
        yield Path(tmp)


@cli.command("sweep")
@click.option("--dataset", "datasets", multiple=True, type=click.Path(dir_okay=False),
              help="A dataset file (repeatable); default: the built-in synthetic data, zh and en.")
@click.option("--levels", default=",".join(GATE_LEVELS), show_default=True,
              help="Comma-separated gate levels to run.")
@click.option("--episodes", type=click.IntRange(min=1), default=2, show_default=True,
              help="Synthetic: episodes per language (at least 1).")
@click.option("--turns", type=click.IntRange(min=1), default=16, show_default=True,
              help="Synthetic: dialogue turns per episode (at least 1).")
@click.option("--seed", default=7, show_default=True, help="Synthetic: random seed.")
@click.option("--poison", is_flag=True, help="Synthetic: plant a false value from a web source per episode.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N episodes of a file.")
@click.option("--backend", default="heuristic", show_default=True,
              help="LLM backend: heuristic (offline) or an OpenAI-compatible preset (as for `run`).")
@click.option("--model", default=None)
@click.option("--base-url", default=None)
@click.option("--summarize-backend", default=None, help="Backend for summarising (default: --backend).")
@click.option("--summarize-model", default=None)
@click.option("--summarize-base-url", default=None)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per HTTP request, above 0.")
@click.option("--max-retries", type=click.IntRange(min=0), default=None,
              help="Retries on 429/5xx/disconnects (0: none).")
@click.option("--env-file", default=".env", show_default=True, type=click.Path(dir_okay=False))
@click.option("--window-turns", type=click.IntRange(min=0), default=4, show_default=True,
              help="Turns in the working window (0: none).")
@click.option("--chain-budget", type=click.IntRange(min=1), default=400, show_default=True,
              help="Token budget of the rendered chain.")
@click.option("--chain-strategy", default="index", show_default=True, type=click.Choice(CHAIN_STRATEGIES))
@context_options
@click.option("--personal-data/--no-personal-data", default=None,
              help="Seal values so they can be erased (default: yes for --dataset, no for synthetic).")
@kept_runs_dir_option
@click.option("--force", is_flag=True, help="Replace runs of the same ids in --runs-dir.")
@json_option("Rows as JSON.")
@fails_cleanly
def sweep_cmd(datasets: tuple[str, ...], levels: str, episodes: int, turns: int, seed: int, poison: bool,
              limit: int | None, backend: str, model: str | None, base_url: str | None,
              summarize_backend: str | None, summarize_model: str | None, summarize_base_url: str | None,
              timeout: float | None, max_retries: int | None, env_file: str, window_turns: int,
              chain_budget: int, chain_strategy: str, context_budget: int,
              source_policies: dict[str, dict[str, Any]], personal_data: bool | None, runs_dir: str | None,
              force: bool, as_json: bool) -> None:
    """Run three_layer at each gate level over each dataset; print one row per pair.

    Columns: accuracy on current values, earlier values and hard
    constraints; summarizer calls, LLM calls (every purpose) and rendered
    tokens per turn; turns the gate kept from the summarizer.

    \b
    Example:
      ledgermem sweep
      ledgermem sweep --levels off,pattern --dataset data/seed.json --limit 2
    """
    chosen = parse_levels(levels)
    if datasets and poison:
        raise click.UsageError("--poison plants values in the built-in synthetic data; it does not apply "
                               "to --dataset")
    if datasets:
        cases = [SweepCase(path, load_dataset(path, limit=limit),
                           True if personal_data is None else personal_data) for path in datasets]
    else:
        try:
            cases = builtin_cases(episodes=episodes, turns=turns, seed=seed, poison=poison)
        except ValueError as exc:
            raise click.UsageError(f"synthetic data: {exc}") from None
        cases = [SweepCase(c.label, c.dataset, bool(personal_data)) for c in cases]
    memory = MemoryConfig(window_turns=window_turns, chain_budget=chain_budget, chain_strategy=chain_strategy,
                          context_budget=context_budget, source_policies=source_policies)
    with _runs_dir(runs_dir) as folder:
        # No memory_point probes: the table has no column for them, and they would only add answer calls.
        base = RunOptions(run_id="sweep", runs_dir=folder, backend=backend, memory=memory, force=force,
                          memory_points=0,
                          model=model, base_url=base_url, summarize_backend=summarize_backend,
                          summarize_model=summarize_model, summarize_base_url=summarize_base_url,
                          timeout=timeout, max_retries=max_retries, env_file=Path(env_file))
        rows = sweep(cases, chosen, base)
    emit(rows, as_json=as_json, human=lambda: click.echo(sweep_markdown(rows)))
