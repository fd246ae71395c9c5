"""The `ledgermem` command: a thin shell over the library.

Each command opens a ledger, calls one library function and formats the
result: a table for people, `--json` for machines (cli.output).
The group, its consoles and its error boundary (0 success, 1 a failed check
or a `LedgermemError`, 2 a usage error) are in cli.main; the
options two commands share are declared once in cli.options.
Importing this module builds the whole command tree.
"""

from __future__ import annotations

import contextlib
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ledgermem.cli import checkpoint as cli_checkpoint

from ledgermem.cli import cluster as cli_cluster

from ledgermem.cli import judge as cli_judge

from ledgermem.cli import repair as cli_repair

from ledgermem.cli import live as cli_live
from ledgermem.cli import serve as cli_serve

from ledgermem.cli import sweep as cli_sweep

from ledgermem.cli import temporal as cli_temporal
from ledgermem.cli.main import cli, err, fails_cleanly, out
from ledgermem.cli.options import (
    context_options, gate_level_option, given_flags, json_option, keys_option, llm_flags, llm_options,
    memory_options, run_id_option, runs_dir_option,
)
from ledgermem.cli.output import category_table, emit, metrics_table, rows_table
from ledgermem.evaluation.failures import MAX_FAILED_CALLS
from ledgermem.datasets.loaders import load_dataset
from ledgermem.datasets.loaders import inspect_file
from ledgermem.evaluation.outputs import write_outputs
from ledgermem.datasets.samples import resolve_dataset
from ledgermem.evaluation.replay import ENGINES
from ledgermem.evaluation.replay import replay as replay_run
from ledgermem.evaluation.erasure import erase_in_run
from ledgermem.evaluation.runner import SYSTEMS, RunOptions, parse_systems, run
from ledgermem.memory.runs import check_seq, open_run, resolve_run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.gate.errors import InvariantViolation
from ledgermem.gate.invariants import audit
from ledgermem.memory.errors import SqlError
from ledgermem.ledger.errors import LedgerLocked, LedgermemError
from ledgermem.memory.cache import HotCache
from ledgermem.memory.netguard import network_disabled
from ledgermem.ledger.store import Ledger
from ledgermem.projections.materialise import ProjectionStore, projection_path, rebuild_file
from ledgermem.projections.config import MemoryConfig

__all__ = ["category_table", "cli", "main", "metrics_table", "needs_model_note"]

def needs_model_note(metrics: dict[str, dict[str, Any]], backend: str) -> str | None:
    """What the needs-a-model count and the evidence columns mean, when the run has probes only a model answers."""
    counts = {(row.get("Needs_Model_N"), row.get("probes")) for row in metrics.values()}
    if len(counts) != 1:
        return None
    needs, probes = counts.pop()
    if not needs:
        return None
    return (f"needs a model: {needs} of {probes} probes per system have no fact slot for the {backend} backend to "
            f"read; Answerable: accuracy on the others.\nEvKept/EvReach/EvPrompt: share of evidence records the "
            f"memory still holds, can fetch by exact id, shows in the prompt.")


@cli.command("run")
@click.option("--dataset", "dataset_path", type=click.Path(dir_okay=False),
              help="Dataset file (seed JSON, LoCoMo, LongMemEval, MEME), or 'sample' for the bundled sample.")
@click.option("--synthetic", is_flag=True, help="Use the built-in synthetic data (the default without --dataset).")
@click.option("--episodes", type=click.IntRange(min=1), default=6, show_default=True,
              help="Synthetic: number of episodes (at least 1).")
@click.option("--turns", type=click.IntRange(min=1), default=24, show_default=True,
              help="Synthetic: dialogue turns per episode (at least 1).")
@click.option("--seed", default=7, show_default=True, help="Synthetic: random seed.")
@click.option("--systems", default="all", show_default=True,
              help=f"'all' or comma-separated: {', '.join(SYSTEMS)}.")
@click.option("--chain-strategy", default="index", show_default=True, type=click.Choice(["index", "merge"]),
              help="three_layer's capacity strategy.")
@click.option("--judge", type=click.Choice(["string", "llm"]), default="string", show_default=True,
              help="Normalised string match, or an LLM judge (its own backend and cost line).")
@click.option("--judge-backend", default=None, help="Backend of the LLM judge (default: --backend).")
@click.option("--max-tool-iterations", type=click.IntRange(min=0), default=4, show_default=True,
              help="Tool calls allowed per answer (0: none).")
@click.option("--memory-points", type=click.IntRange(min=0), default=2, show_default=True,
              help="memory_point probes generated per episode after ingestion (0: none).")
@click.option("--backend", default="heuristic", show_default=True,
              help="LLM backend: heuristic (offline) or an OpenAI-compatible preset: openai, deepseek, vllm, "
                   "llamacpp, ollama, http.")
@click.option("--model", default=None, help="Model of the backend (else LEDGERMEM_MODEL, .env, the preset's).")
@click.option("--base-url", default=None, help="Base URL of an OpenAI-compatible endpoint (…/v1).")
@click.option("--summarize-backend", default=None, help="Backend for summarising (default: --backend).")
@click.option("--summarize-model", default=None, help="Model for summarising (default: --model).")
@click.option("--summarize-base-url", default=None)
@click.option("--judge-model", default=None, help="Model of the LLM judge (default: --model).")
@click.option("--judge-base-url", default=None)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per HTTP request, above 0 (default 60); after a timeout the retry waits (see "
                   "--backoff-max).")
@click.option("--max-retries", type=click.IntRange(min=0), default=None,
              help="Retries on 429/5xx/disconnects/timeouts (default 4; 0: none).")
@llm_options
@click.option("--max-failed-calls", type=click.IntRange(min=1), default=MAX_FAILED_CALLS, show_default=True,
              help="Stop the run after this many failed LLM calls in a row (a 401/403/404, a bad model or a "
                   "non-JSON reply stops it at once). Failed turns and probes are redone by running the same "
                   "command again.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Episodes (and systems) run on this many threads while they wait for the model; one thread "
                   "writes the ledger, and the result is the same as with one worker.")
@click.option("--rpm", type=click.IntRange(min=1), default=None,
              help="At most this many requests a minute per HTTP endpoint, shared by all workers and purposes.")
@click.option("--tpm", type=click.IntRange(min=1), default=None,
              help="At most this many prompt tokens a minute per HTTP endpoint, shared like --rpm.")
@click.option("--env-file", default=".env", show_default=True, type=click.Path(dir_okay=False),
              help="Read backend settings (and API keys) from this file when not in the environment.")
@click.option("--replay-llm", "replay_llm", default=None, metavar="RUN",
              help="Answer every LLM call from RUN's recorded calls, with the network disabled.")
@click.option("--run-id", default=None, callback=run_id_option,
              help="Run id, a name (default: run-<UTC timestamp>): 1-128 of A-Z a-z 0-9 . _ -, starting with a "
                   "letter or digit.")
@runs_dir_option
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N episodes (N >= 1).")
@click.option("--force", is_flag=True, help="Replace an existing run of the same id (its run folder only).")
@click.option("--window-turns", type=click.IntRange(min=0), default=4, show_default=True,
              help="Turns in the working window (0: none).")
@click.option("--chain-budget", type=click.IntRange(min=1), default=400, show_default=True,
              help="Token budget of the rendered chain.")
@click.option("--summarizer-input-tokens", type=click.IntRange(min=1), default=1500, show_default=True,
              help="How much of the chain (newest first) the summarizer is shown.")
@click.option("--personal-data/--no-personal-data", default=None,
              help="Seal the dialogue's values so they can be erased (default: yes for --dataset, no for synthetic).")
@click.option("--strict", is_flag=True, help="Check the invariants after every commit; stop at the first violation.")
@json_option("Print metrics as JSON.")
@click.option("--inspect", "inspect_path", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Only say what FILE is recognised as (seed, LoCoMo, LongMemEval, MEME), with counts; run nothing.")
@click.option("--question-types", default=None,
              help="Comma-separated probe types to keep (LongMemEval question types, LoCoMo categories), "
                   "applied before --limit.")
@click.option("--max-turns", type=click.IntRange(min=1), default=None,
              help="Truncate long episodes to this many turns, oldest sessions first, keeping evidence sessions.")
@click.option("--redis", "redis_url", default=None, envvar="LEDGERMEM_REDIS_URL", metavar="URL",
              help="Keep three_layer's rendered layers in this Redis (redis://127.0.0.1:6379/0) as a hot cache; "
                   "results are the same with or without it, and with Redis down.")
@gate_level_option
@context_options
@memory_options
@click.option("--poison", is_flag=True,
              help="Synthetic: plant a false value from a web source in every episode and ask a poisoning probe.")
@click.option("--phrasing", type=click.Choice(["dev", "extra", "heldout"]), default="dev", show_default=True,
              help="Synthetic: the part of the phrasing corpus that user statements, updates and questions are "
                   "drawn from (heldout: written before the fact grammar, never used to tune it; extra: more "
                   "development phrasing by other writers).")
@click.option("--distractor-rate", type=click.FloatRange(0.0, 1.0), default=0.15, show_default=True,
              help="Synthetic: share of small-talk turns replaced by distractors (another person's attribute, "
                   "a hypothetical, a negation, reported speech, a plan, a question naming a value).")
@cli_cluster.cluster_option
@cli_cluster.shards_option
@fails_cleanly
def run_cmd(dataset_path: str | None, synthetic: bool, episodes: int, turns: int, seed: int, systems: str,
            backend: str, run_id: str | None, runs_dir: str, limit: int | None, force: bool,
            window_turns: int, chain_budget: int, summarizer_input_tokens: int, personal_data: bool | None,
            strict: bool, as_json: bool, chain_strategy: str, judge: str, judge_backend: str | None,
            max_tool_iterations: int, memory_points: int, model: str | None, base_url: str | None,
            summarize_backend: str | None, summarize_model: str | None, summarize_base_url: str | None,
            judge_model: str | None, judge_base_url: str | None, timeout: float | None, max_retries: int | None,
            max_failed_calls: int, env_file: str, replay_llm: str | None, inspect_path: str | None,
            question_types: str | None, max_turns: int | None, redis_url: str | None = None, gate_level: str = "off",
            context_budget: int = MemoryConfig().context_budget,
            source_policies: dict[str, dict[str, Any]] | None = None, poison: bool = False,
            phrasing: str = "dev", distractor_rate: float = 0.15, workers: int = 1,
            rpm: int | None = None, tpm: int | None = None, cluster: str | None = None,
            shards: int | None = None, memory_option: dict[str, str] | None = None) -> None:
    """Run memory systems over a dataset; the whole run goes into one ledger.

    A run id that exists but never finished (a crash, Ctrl-C, failed LLM
    calls) is resumed from its ledger when the same arguments are given; a
    turn or probe whose LLM call failed is done again. Backend settings
    resolve per purpose (answer, respond, summarize, judge): flag >
    LEDGERMEM_<PURPOSE>_<FIELD> > LEDGERMEM_<FIELD> > .env > preset > default.
    Memory settings: --memory-option KEY=VALUE or the setting's own flag >
    LEDGERMEM_<KEY> > .env > default.

    \b
    Example:
      ledgermem run --synthetic --episodes 6 --turns 24 --run-id demo
      ledgermem run --dataset sample --run-id sample     # the bundled seed-format sample, en + zh
      ledgermem run --systems three_layer,full_context --turns 120 --limit 4
      ledgermem run --backend deepseek --limit 2          # DEEPSEEK_API_KEY from the environment or .env
      ledgermem run --backend llamacpp --max-tokens 384 --summarize-opt max_tokens=200 --timeout 120
      ledgermem run --replay-llm demo --run-id demo-again   # no model, no network
      ledgermem run --poison --source-policy web=remember:false --gate-level pattern
      ledgermem run --phrasing heldout --systems three_layer   # phrasing the fact grammar never saw
      ledgermem run --backend deepseek --workers 16 --rpm 500 --tpm 400000
      ledgermem run --cluster local:4 --run-id demo-sharded   # 4 worker processes, shards merged
    """
    dataset_path, inspect_path = resolve_dataset(dataset_path), resolve_dataset(inspect_path)
    if dataset_path and synthetic:
        raise click.UsageError("give either --dataset or --synthetic, not both")
    if dataset_path and poison:
        raise click.UsageError("--poison plants values in the built-in synthetic data; it does not apply to --dataset")
    types = {t.strip() for t in question_types.split(",") if t.strip()} if question_types else None
    if inspect_path:
        inspection = inspect_file(inspect_path, limit=limit, question_types=types, max_turns=max_turns)
        emit(inspection.to_dict(), as_json=as_json, human=lambda: click.echo(inspection.render()))
        sys.exit(1 if inspection.error else 0)
    if dataset_path:
        ds = load_dataset(dataset_path, limit=limit, question_types=types, max_turns=max_turns)
    else:
        try:
            ds = generate_synthetic(n_episodes=episodes, turns=turns, seed=seed, poison=poison, phrasing=phrasing,
                                    distractor_rate=distractor_rate)
        except ValueError as exc:
            raise click.UsageError(f"synthetic data: {exc}") from None
    for note in ds.notes:
        err.print(f"note: {note}", markup=False)
    if (rpm or tpm) and {backend, summarize_backend or backend, judge_backend or backend} == {"heuristic"}:
        err.print("note: --rpm/--tpm limit requests to HTTP backends; this run makes none", markup=False)
    rid = run_id or "run-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    personal = personal_data if personal_data is not None else bool(dataset_path)
    config = _memory_config(click.get_current_context(), dict(memory_option or {}), Path(env_file),
                            MemoryConfig(personal_data=personal, source_policies=source_policies or {}))
    opts = RunOptions(run_id=rid, runs_dir=Path(runs_dir), systems=parse_systems(systems), backend=backend,
                      memory=config, limit=limit, force=force, strict=strict, judge=judge,
                      judge_backend=judge_backend, max_tool_iterations=max_tool_iterations,
                      memory_points=memory_points, model=model, base_url=base_url,
                      summarize_backend=summarize_backend, summarize_model=summarize_model,
                      summarize_base_url=summarize_base_url, judge_model=judge_model, judge_base_url=judge_base_url,
                      timeout=timeout, max_retries=max_retries, env_file=Path(env_file),
                      llm_flags=llm_flags(click.get_current_context()), max_failed_calls=max_failed_calls,
                      replay_llm=resolve_run(replay_llm, Path(runs_dir)) if replay_llm else None,
                      cache=HotCache.connect(redis_url) if redis_url else None, workers=workers, rpm=rpm, tpm=tpm)
    if cluster is not None:
        if replay_llm or redis_url:
            raise click.UsageError("--cluster takes no --replay-llm and no --redis")
        cli_cluster.run_on_cluster(ds, opts, cluster, shards, as_json=as_json)
        return
    if shards is not None:
        raise click.UsageError("--shards goes with --cluster")
    selected = ds.episodes[:limit] if limit else ds.episodes
    total = len(opts.systems) * sum(len(e.turns) + len(e.probes) + memory_points for e in selected)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task(f"run {rid}", total=total)
        with network_disabled() if opts.replay_llm else contextlib.nullcontext():
            result = run(ds, opts, progress=lambda what, n: bar.advance(task, n))
    files = write_outputs(result.ledger_path)
    if opts.cache is not None:
        err.print(opts.cache.stats.line(), markup=False)
    if as_json:
        emit({"run_id": rid, "ledger": str(result.ledger_path), "metrics": result.metrics,
              "incomplete": list(result.incomplete), "last_error": result.last_error,
              "checkpoint": result.checkpoint}, as_json=True, ascii_only=True)
        sys.exit(1 if result.incomplete else 0)
    partial = f"; INCOMPLETE: {len(result.incomplete)} episode(s) to redo" if result.incomplete else ""
    title = f"run {rid} ({ds.name}, {len(selected)} episodes, {result.label}{partial})"
    out.print(metrics_table(result.metrics, title))
    by_category = category_table(result.metrics, f"run {rid}: accuracy by category")
    if by_category is not None:
        out.print(by_category)
    if (note := needs_model_note(result.metrics, backend)) is not None:
        out.print(note, markup=False)
    out.print(f"ledger: {result.ledger_path}")
    out.print("derived: " + ", ".join(str(f) for f in files))
    if result.checkpoint:
        out.print(f"checkpoint: {result.checkpoint}", markup=False)
    failed = sum(row.get("llm_errors") or 0 for row in result.metrics.values())
    if failed and not result.incomplete:
        err.print(f"note: {failed} LLM call(s) failed and their turns or probes were redone; the failed attempts are "
                  "in the ledger (llm_called with an error)", markup=False)
    if result.incomplete:
        shown = ", ".join(result.incomplete[:5]) + (" ..." if len(result.incomplete) > 5 else "")
        err.print(f"error: {len(result.incomplete)} episode(s) stopped at a failed LLM call ({shown}); the run is "
                  f"not finished. Last error: {result.last_error} -- run the same command again to redo them",
                  markup=False)
        sys.exit(1)


def _memory_config(ctx: click.Context, options: dict[str, str], env_file: Path, base: MemoryConfig) -> MemoryConfig:
    """The run's memory settings: --memory-option or a flag given > LEDGERMEM_<KEY> > .env > default."""
    from ledgermem.memory.errors import ConfigError
    from ledgermem.memory.settings import resolve_memory_settings

    flags: dict[str, Any] = given_flags(ctx, ("window_turns", "chain_budget", "summarizer_input_tokens",
                                              "chain_strategy", "gate_level", "context_budget"))
    for key, value in options.items():
        if key in flags and str(flags[key]) != value:
            raise click.UsageError(f"--memory-option {key}={value} contradicts --{key.replace('_', '-')} {flags[key]}")
        flags[key] = value
    try:
        return resolve_memory_settings(base, flags=flags, dotenv=env_file)[0]
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


@cli.command("report")
@click.argument("run")
@runs_dir_option
@click.option("--thresholds", "thresholds_file", default=None, type=click.Path(dir_okay=False, exists=True),
              help="JSON or TOML file changing the ok/WARN/FAIL thresholds (per metric: ok, warn, better; false: off).")
@fails_cleanly
def report_cmd(run: str, runs_dir: str, thresholds_file: str | None = None) -> None:
    """Write report.md and PNG plots next to a run, derived from its ledger.

    The CSV files are derived again from the ledger first, so the report
    always matches what the ledger holds. The main metrics get an ok, WARN
    or FAIL verdict per system, in report.md and here.

    \b
    Example:
      ledgermem report demo
      ledgermem report demo --thresholds thresholds.toml
    """
    path = resolve_run(run, Path(runs_dir))
    if Path(path).is_dir():
        raise click.UsageError("report works on a run's ledger file; import a Parquet export first")
    # Plotting (matplotlib) is loaded by this command only: `run` and the rest never pay for it.
    from ledgermem.evaluation.report import read_metrics, write_report
    from ledgermem.evaluation.verdicts import DEFAULT_THRESHOLDS, extraction_recall, load_thresholds
    from ledgermem.evaluation.verdicts import console_table as verdict_table

    thresholds = load_thresholds(thresholds_file) if thresholds_file else DEFAULT_THRESHOLDS
    derived = write_outputs(path)
    with open_run(Path(path)) as (ledger, _):
        measured = extraction_recall(ledger)
    written = write_report(Path(path).parent, thresholds, measured)
    metrics = read_metrics(Path(path).parent, [t.metric for t in thresholds])
    for system, values in measured.items():
        metrics.setdefault(system, {}).update(values)
    out.print(verdict_table(metrics, thresholds, f"run {Path(path).parent.name}: verdicts"))
    out.print(f"report: {written[0]}")
    out.print("plots: " + ", ".join(str(p) for p in written[1:]))
    out.print("derived: " + ", ".join(str(p) for p in derived))


@cli.command("chat")
@click.option("--ledger", "ledger_file", default="chat.duckdb", show_default=True, type=click.Path(dir_okay=False),
              help="Ledger file of the conversation (created if missing; reopening it resumes the episode).")
@click.option("--episode", default="chat", show_default=True, help="Episode id within the ledger.")
@click.option("--backend", default="heuristic", show_default=True, help="LLM backend (as for `run`).")
@click.option("--model", default=None)
@click.option("--base-url", default=None)
@click.option("--env-file", default=".env", show_default=True, type=click.Path(dir_okay=False))
@click.option("--personal-data/--no-personal-data", default=True, show_default=True)
@fails_cleanly
def chat_cmd(ledger_file: str, episode: str, backend: str, model: str | None, base_url: str | None,
             env_file: str, personal_data: bool) -> None:
    """Talk to the memory, one live turn per line, and see which ids each answer's context held.

    Every turn is recorded (the reply, its LLM calls, the memory update,
    self-written or by the summarizer). Lines starting with / are commands:
    /render, /values, /tool NAME key=value ..., /audit, /quit.

    \b
    Example:
      ledgermem chat --ledger chat.duckdb
    """
    from ledgermem.evaluation.runner import build_backends
    from ledgermem.ledger.store import StreamKey
    from ledgermem.memory.memory import Memory
    from ledgermem.projections.tokens import default_tokenizer

    tokenizer = default_tokenizer()
    opts = RunOptions(run_id="chat", backend=backend, model=model, base_url=base_url, env_file=Path(env_file))
    backends = build_backends(opts, tokenizer)
    with Ledger(ledger_file) as ledger, ProjectionStore(projection_path(Path(ledger_file))) as projections:
        memory = Memory(ledger, StreamKey("chat", "three_layer", episode), backends.memory,
                        config=MemoryConfig(personal_data=personal_data, tokenizer=tokenizer),
                        projections=projections)
        interactive = sys.stdin.isatty()
        out.print(f"chat with the memory in {ledger_file} (episode {episode!r}, backend {backend}, "
                  f"turn {memory.state.turn}); /quit to leave")
        while True:
            if interactive:
                out.print("[bold]you>[/bold] ", end="")
            line = sys.stdin.readline()
            if not line:
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not _chat_command(memory, text):
                    break
                continue
            rendered = memory.render()
            reply = memory.respond(text)
            out.print(f"agent> {reply.text}", markup=False)
            held = "; ".join(f"{p.name} {', '.join(p.ids) or '-'}" for p in rendered.parts)
            out.print(f"  context: {held}", markup=False)
            update = "self-written" if reply.self_written else "summarizer" + (" (fallback)" if reply.fallback else "")
            written = [r.event.summary_id for r in reply.recorded if r.event.event_type == "summary_created"]
            out.print(f"  memory update: {update}; summaries written: {', '.join(written) or 'none'}", markup=False)


def _chat_command(memory: Any, text: str) -> bool:
    """Run one /command of `chat`; False to stop."""
    name, *args = text[1:].split()
    if name in ("quit", "exit", "q"):
        return False
    if name == "render":
        out.print(memory.render().text, markup=False)
    elif name == "values":
        for slot, (value, sid) in memory.state.current_values().items():
            out.print(f"{slot} = {value}  ({sid})", markup=False)
    elif name == "tool" and args:
        pairs = dict(a.split("=", 1) for a in args[1:] if "=" in a)
        result = memory.tool(args[0], pairs)
        out.print(("ok: " if result.ok else "failed: ") + result.text, markup=False)
    elif name == "audit":
        try:
            memory.check()
        except InvariantViolation as exc:
            out.print(f"violation: {exc}", markup=False)
        else:
            out.print("I1-I3 and I5 hold for this episode", markup=False)
    else:
        out.print("commands: /render, /values, /tool NAME key=value ..., /audit, /quit", markup=False)
    return True


@cli.command("replay")
@click.argument("run")
@runs_dir_option
@json_option()
@keys_option
@click.option("--engine", type=click.Choice(ENGINES), default="python", show_default=True,
              help="Rebuild by the Python fold or by vectorised DuckDB SQL.")
@fails_cleanly
def replay_cmd(run: str, keys: Path | None, runs_dir: str, as_json: bool, engine: str) -> None:
    """Rebuild all projections and metrics from the ledger alone (no LLM) and compare with the live run.

    Exits 1 if anything differs.

    \b
    Example:
      ledgermem replay demo
    """
    path = resolve_run(run, Path(runs_dir))
    with open_run(path, keys=keys) as (ledger, projections):
        report = replay_run(ledger, projections, engine=engine)
    if as_json:
        emit({
            "run_id": report.run_id, "identical": report.identical, "erasures": report.erasures,
            "projections_identical": report.projections_identical, "metrics_identical": report.metrics_identical,
            "tables": [vars_of(t) for t in report.tables], "metrics": report.metrics,
            "recorded_metrics": report.recorded_metrics, "metrics_seq": report.metrics_seq,
            "later_turns": report.later_turns, "added_metrics": report.added_metrics, "harness": report.harness,
        }, as_json=True, ascii_only=True)
    else:
        table = Table(title=f"projections of run {report.run_id}: live vs replayed ({engine} engine)")
        for col in ("table", "live rows", "replayed rows", "identical"):
            table.add_column(col)
        for t in report.tables:
            table.add_row(t.table, str(t.live_rows), str(t.replayed_rows), "yes" if t.equal else f"NO: {t.first_difference}")
        out.print(table)
        out.print(metrics_table(report.metrics, "metrics replayed from the ledger"))
        if report.recorded_metrics is not None:
            out.print(metrics_table(report.recorded_metrics, "metrics recorded by the live run"))
        metrics = "identical" if report.metrics_identical else "DIFFERENT"
        if report.erasures and not report.metrics_identical:
            metrics = f"differ after {report.erasures} erasure(s) (erased text changes token counts)"
        if not report.harness:
            metrics = "not compared (no harness run recorded any)"
        projections = "identical" if report.projections_identical else "DIFFERENT"
        verdict = "reproduced" if report.identical else "NOT reproduced"
        if report.later_turns:
            later = ", ".join(f"{n} from {src or 'no named source'}" for src, n in report.later_turns.items())
            out.print(f"note: turns recorded after the run finished ({later}) are replayed into the projections; "
                      f"metrics are compared as of seq {report.metrics_seq}, where the run recorded them",
                      markup=False, soft_wrap=True)
        if report.added_metrics:
            out.print(f"note: metrics this version adds, not recorded by the run: {', '.join(report.added_metrics)}",
                      markup=False, soft_wrap=True)
        out.print(f"replay: projections {projections}, metrics {metrics} -> {verdict}")
    if not report.identical:
        sys.exit(1)


def vars_of(obj: Any) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in obj.__slots__}


@cli.command("audit")
@click.argument("run")
@runs_dir_option
@click.option("--at", "at_seq", type=click.IntRange(min=0), default=None,
              help="Check the state as of this seq (0 to the ledger's last seq).")
@click.option("--i4-floor", type=click.FloatRange(0.0, 1.0), default=None,
              help="Extraction recall under this (0 to 1) is a violation.")
@json_option()
@keys_option
@fails_cleanly
def audit_cmd(run: str, keys: Path | None, runs_dir: str, at_seq: int | None, i4_floor: float | None, as_json: bool) -> None:
    """Check invariants I1-I5 and the structural invariants of a run; exit 1 on any violation.

    \b
    Example:
      ledgermem audit demo --at 120 --i4-floor 0.9
    """
    path = resolve_run(run, Path(runs_dir))
    with open_run(path, keys=keys, examine=True) as (ledger, projections):
        check_seq(ledger, "--at", at_seq)
        partial = None if path.is_dir() else projections.behind(ledger)
        report = audit(ledger, projections, at_seq=at_seq, i4_floor=i4_floor)
    anchored, anchor_failed, anchor_detail = cli_checkpoint.audit_status(path)
    if as_json:
        emit(report.as_dict() | {"checkpoint": anchor_detail, "projections": partial or "whole"}, as_json=True)
    else:
        when = f"as of seq {at_seq}" if at_seq is not None else "now"
        table = Table(title=f"audit of {path} ({when})")
        for col in ("invariant", "result", "violations", "first violation / detail"):
            table.add_column(col)
        for r in report.results:
            first = r.violations[0] if r.violations else None
            if r.not_checked:
                table.add_row(r.invariant, "NOT CHECKED", "-", "sealed values cannot be opened (see below)")
                continue
            note = (f"seq {first.seq} {first.stream} {', '.join(first.ids)}: {first.message}" if first
                    else i4_note(r.detail) if r.invariant == "I4"
                    else ", ".join(f"{k}={v}" for k, v in r.detail.items() if k != "gaps"))
            table.add_row(r.invariant, "ok" if r.ok else "VIOLATED", str(len(r.violations)), note)
        out.print(table)
        i4 = next(r for r in report.results if r.invariant == "I4").detail
        if any(s["source"] != "exempt" for s in i4.get("streams", [])):
            out.print(i4_table(i4["streams"]))
        out.print(f"checkpoint: {anchored}", markup=False)
        if partial:
            out.print(f"projections: not a whole fold of the ledger: {partial} (the replay check compares them "
                      "with a fold of the ledger; `ledgermem repair` rebuilds them)", markup=False, soft_wrap=True)
        failed = [r.invariant for r in report.results if r.violations] + (["checkpoint"] if anchor_failed else [])
        unchecked = [r for r in report.results if r.not_checked]
        if unchecked:
            out.print(f"audit: NOT CHECKED {', '.join(r.invariant for r in unchecked)}: {unchecked[0].not_checked}",
                      markup=False)
        if failed or not unchecked:
            out.print(f"audit: VIOLATED {', '.join(failed)}" if failed else "audit: all invariants hold")
    if not report.ok or anchor_failed:
        sys.exit(1)


def i4_note(detail: dict[str, Any]) -> str:
    """The I4 line of the audit table: recall (or n/a) and what the streams were compared against."""
    sources = ", ".join(f"{name}: {n} stream{'s' if n != 1 else ''}" for name, n in detail["sources"].items())
    if not detail["compared"]:
        return f"nothing to compare, recall n/a ({sources})"
    return f"recall {detail['recall']} ({detail['captured']} of {detail['compared']} captured; {sources})"


def i4_table(streams: list[dict[str, Any]]) -> Table:
    """I4 per episode stream: what it was compared against, recall and gaps (baselines are exempt)."""
    exempt = sum(s["source"] == "exempt" for s in streams)
    table = Table(title="I4 extraction completeness per stream",
                  caption=f"{exempt} baseline stream{'s' if exempt != 1 else ''} exempt" if exempt else None)
    for col in ("stream", "compared against", "captured", "recall", "gaps"):
        table.add_column(col)
    for s in (s for s in streams if s["source"] != "exempt"):
        recall = "n/a" if s["recall"] is None else str(s["recall"])
        gaps = ", ".join(s["gaps"][:4]) + (f" and {len(s['gaps']) - 4} more" if len(s["gaps"]) > 4 else "")
        table.add_row(s["stream"], s["against"], f"{s['captured']} of {s['compared']}", recall, gaps)
    return table


@cli.command("erase")
@click.argument("run")
@click.option("--episode", required=True, help="Episode id whose data subject is concerned.")
@click.option("--system", default="three_layer", show_default=True)
@click.option("--slot", default=None, help="Erase this slot (every value, or only --value).")
@click.option("--value", default=None,
              help="With --slot: only this value. Alone: this value wherever it was said (dialogue, tool results, "
                   "summaries, facts, index titles, answers, probe questions and gold) in every system's copy of the "
                   "episode, matched as a whole word, case-insensitive, whitespace normalised.")
@click.option("--record", "record_id", default=None, help="Erase a raw record and everything derived from it.")
@click.option("--subject", is_flag=True, help="Erase everything of the episode's data subject.")
@click.option("--legal-basis", required=True, help="Why, e.g. 'GDPR Art. 17 request #123'.")
@click.option("--scan-export", "exports", multiple=True, type=click.Path(file_okay=False, exists=True),
              help="A Parquet export of this run to include in the residue scan (repeatable).")
@runs_dir_option
@json_option()
@click.option("--redis", "redis_url", default=None, envvar="LEDGERMEM_REDIS_URL", metavar="URL",
              help="The Redis hot cache the run used: its entry is rewritten and included in the residue scan.")
@fails_cleanly
def erase_cmd(run: str, episode: str, system: str, slot: str | None, value: str | None, record_id: str | None,
              subject: bool, legal_basis: str, exports: tuple[str, ...], runs_dir: str, as_json: bool,
              redis_url: str | None = None) -> None:
    """Crypto-shred personal data of one episode and print the erasure receipt.

    The run must have been recorded with personal data sealed (the default for
    --dataset runs). Every system's copy of the episode is erased, the run's
    derived files (CSV, JSON Lines, report.md) are rewritten from the ledger,
    and the residue scan reads the episode's streams and rows and every file of
    the run. Exits 1 if it finds the value anywhere.

    \b
    Example:
      ledgermem erase demo --episode alice --slot "home city" --legal-basis "GDPR Art. 17 #12"
      ledgermem erase demo --episode alice --value Reykjavik --legal-basis "GDPR Art. 17 #12"
    """
    path = resolve_run(run, Path(runs_dir))
    receipt = erase_in_run(path, system=system, episode=episode, slot=slot, value=value, record_id=record_id,
                           subject=subject, legal_basis=legal_basis, exports=[Path(e) for e in exports],
                           cache=HotCache.connect(redis_url) if redis_url else None)
    if as_json:
        emit(receipt.as_dict(), as_json=True)
    else:
        out.print(f"erased {len(receipt.facts)} fact(s) ({sum(c for *_, c in receipt.facts)} collateral), "
                  f"{len(receipt.records)} raw record(s), {len(receipt.summaries)} summary(ies), "
                  f"{len(receipt.indexes)} index title(s); {len(receipt.keys_shredded)} key(s) shredded"
                  + (f" in {len(receipt.streams)} stream(s)" if receipt.streams else " (nothing readable left)"))
        for place, hits in receipt.residue.items():
            out.print(f"  residue in {place}: {hits}")
        out.print("receipt: clean" if receipt.clean else "receipt: RESIDUE FOUND")
    if not receipt.clean:
        sys.exit(1)


@cli.command("export")
@click.argument("run")
@click.option("--to", "target", required=True, type=click.Path(file_okay=False), help="Export directory.")
@runs_dir_option
@click.option("--overwrite", is_flag=True, help="Replace this run's data if the directory already holds it.")
@fails_cleanly
def export_cmd(run: str, target: str, runs_dir: str, overwrite: bool) -> None:
    """Write a run's events as Hive-partitioned Parquet (run_id=/system=/part-N.parquet, zstd).

    Sealed values stay sealed and keys are not exported. DuckDB, Polars, Spark
    and Trino read the directory as is; every read command accepts it.

    \b
    Example:
      ledgermem export demo --to exports/
    """
    from ledgermem.ledger.parquet import export  # pyarrow.parquet: loaded by the commands that use it

    path = resolve_run(run, Path(runs_dir))
    with Ledger(path, read_only=True) as ledger:
        files = export(ledger, Path(target), overwrite=overwrite)
    out.print(f"exported {len(files)} file(s) to {target}")


@cli.command("import")
@click.argument("source", type=click.Path(file_okay=False, exists=True))
@click.option("--to", "target", required=True, type=click.Path(dir_okay=False), help="New ledger file.")
@click.option("--run-id", default=None, callback=run_id_option,
              help="Which run, if the directory holds several ledgers' runs.")
@fails_cleanly
def import_cmd(source: str, target: str, run_id: str | None) -> None:
    """Read a Parquet export back into a new DuckDB ledger (verified first) and build its projections.

    \b
    Example:
      ledgermem import exports/ --to runs/demo-copy/ledger.duckdb
    """
    from ledgermem.ledger.parquet import import_into

    # The projections are written to a new file and renamed in, inside the import: a kill leaves the import's
    # marker, and running the same command again finishes it (or `ledgermem repair FILE` rebuilds them).
    imported = import_into(Path(source), Path(target), run_id=run_id,
                           derive=lambda ledger: rebuild_file(ledger, projection_path(target)))
    with imported.ledger as ledger:
        count = ledger.last_seq
    for orphan in imported.removed:
        out.print(f"removed {orphan}, left by an interrupted import", markup=False, soft_wrap=True)
    done = "finished an interrupted import of" if imported.finished else "imported"
    out.print(f"{done} {count} events into {target}", markup=False, soft_wrap=True)


@cli.command("sql")
@click.argument("run")
@click.argument("query")
@runs_dir_option
@json_option("Rows as a JSON list of objects.")
@keys_option
@fails_cleanly
def sql_cmd(run: str, keys: Path | None, query: str, runs_dir: str, as_json: bool) -> None:
    """Run a SQL query (DuckDB dialect) against a run's ledger and projections, read-only.

    Tables: events, summary_versions, fact_versions, index_versions, raw_records, window_versions,
    pin_versions. One read-only statement (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN), run in a
    sandbox that opens no file but the run's: ATTACH, COPY, SET, PRAGMA, CREATE, ... are refused.

    \b
    Example:
      ledgermem sql demo "SELECT slot, value FROM fact_versions WHERE valid_to_seq IS NULL"
    """
    import duckdb

    from ledgermem.memory import sandbox
    from ledgermem.service.catalog import Snapshots

    try:
        sandbox.read_only(query)  # refused before the run is opened
    except duckdb.Error as exc:
        raise SqlError(f"query failed: {str(exc).splitlines()[0]}") from exc
    path = resolve_run(run, Path(runs_dir))
    with contextlib.ExitStack() as stack:
        try:
            ledger, _ = stack.enter_context(open_run(path, keys=keys))
        except LedgerLocked:
            # Its writer holds the ledger or its key store: query a private copy of the ledger as of now
            # (the key store is never copied, so sealed values read as [sealed] until the writer is done).
            snapshots = Snapshots(refresh=0.0)
            stack.callback(snapshots.close)
            copy = snapshots.ledger_for(path)
            ledger, _ = stack.enter_context(open_run(copy))
            err.print(f"note: run {run!r} is being written; querying a snapshot of its ledger up to seq "
                      f"{ledger.last_seq} (sealed values read as [sealed] until the writer closes it)",
                      markup=False)
        try:
            names, rows = sandbox.execute(ledger.conn, query)
        except duckdb.Error as exc:
            raise SqlError(f"query failed: {str(exc).splitlines()[0]}") from exc
    if as_json:
        emit([dict(zip(names, r)) for r in rows], as_json=True)
        return
    out.print(rows_table(rows, columns=names))
    out.print(f"{len(rows)} row(s)")


@cli.command("verify")
@click.argument("run")
@runs_dir_option
@json_option()
@click.option("--checkpoint", is_flag=False, flag_value="", default=None, metavar="[FILE]",
              help="Also check the signed checkpoints (default file: beside the ledger): a rewrite with recomputed "
                   "hashes, or removed events.")
@cli_checkpoint.public_key_option
@cli_checkpoint.key_option
@fails_cleanly
def verify_cmd(run: str, runs_dir: str, as_json: bool, checkpoint: str | None = None, public_key: str | None = None,
               checkpoint_key: str | None = None) -> None:
    """Recompute the hash chain and check seq and stream versions; name the first broken seq.

    Exits 1 if the ledger does not verify (or, with --checkpoint, a checkpoint fails).

    \b
    Example:
      ledgermem verify demo
      ledgermem verify demo --checkpoint --public-key signer.pub
    """
    from ledgermem.ledger.parquet import ParquetLedger

    path = resolve_run(run, Path(runs_dir))
    with contextlib.ExitStack() as stack:
        try:
            ledger = stack.enter_context(ParquetLedger(path) if path.is_dir() else Ledger(path, read_only=True))
        except LedgerLocked:
            # Its writer holds the ledger: verify a private copy of it as of now (whole commits only).
            from ledgermem.service.catalog import Snapshots

            snapshots = Snapshots(refresh=0.0)
            stack.callback(snapshots.close)
            ledger = stack.enter_context(Ledger(snapshots.ledger_for(path), read_only=True))
            err.print(f"note: run {run!r} is being written; verifying a snapshot of its ledger up to seq "
                      f"{ledger.last_seq}", markup=False)
        report = ledger.verify()
    anchors = None if checkpoint is None else cli_checkpoint.check(path, checkpoint, public_key, checkpoint_key)
    if as_json:
        emit(vars_of(report) | ({"checkpoint": anchors.as_dict()} if anchors else {}), as_json=True, indent=None,
             ascii_only=True)
    elif report.ok:
        out.print(f"ok: {report.events} events, hash chain and stream versions verify ({path})")
    else:
        err.print(f"BROKEN at seq {report.first_broken_seq}: {report.reason} ({path})", markup=False)
    if anchors is not None and not as_json:
        cli_checkpoint.show(anchors)
    if not report.ok or (anchors is not None and not anchors.ok):
        sys.exit(1)


# The cli_* modules declare their commands on the group when imported (above); named here so that import stays.
SUBCOMMAND_MODULES = (cli_checkpoint, cli_cluster, cli_judge, cli_live, cli_repair, cli_serve, cli_sweep, cli_temporal)


def main() -> None:
    cli()
