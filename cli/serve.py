"""`ledgermem serve` and `ledgermem mcp`: the audit service over HTTP (with the explorer) and over MCP stdio."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from ledgermem.service.catalog import Catalog
from ledgermem.cli.main import cli, fails_cleanly, out
from ledgermem.cli.options import keys_option, runs_dir_option
from ledgermem.service.errors import ServeError
from ledgermem.service.core import TIME_LIMIT, Service

SWITCH_INTERVAL = 0.001
WORKERS, IDLE = 8, 30.0  # as service.http (not imported here: `mcp` does not need the HTTP server)


def _stop_on_sigterm() -> None:
    """SIGTERM ends the server like Ctrl-C does: through its cleanup (snapshots removed, files closed)."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))


def listen(make: Callable[[], Any], port: int, release: Callable[[], None]) -> Any:
    """The server `make` builds; when the port cannot be bound, `release` what was opened and say so in one line."""
    try:
        return make()
    except OSError as exc:
        release()
        raise ServeError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; choose another --port "
                         "(0 picks a free one)") from exc


def serve_until_stopped(server: Any, banner: Callable[[int], str], *, closing: Sequence[Callable[[], None]],
                        started: Callable[[], object] | None = None) -> None:
    """Print the banner (given the bound port) and answer until Ctrl-C or SIGTERM; then close `closing` in order."""
    _stop_on_sigterm()
    # A thread that waits for the interpreter (a short read behind an audit folding events in Python) gets
    # it after 1 ms instead of the default 5: short answers stay short while a long one runs.
    sys.setswitchinterval(SWITCH_INTERVAL)
    out.print(banner(server.server_address[1]), markup=False, soft_wrap=True)
    sys.stdout.flush()
    if started is not None:
        started()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for close in closing:
            close()


def catalog_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--hold", type=click.FloatRange(min=0), default=1.0, show_default=True,
                      help="Seconds a run stays open after a request (0: closed after each; a writer of that "
                           "run waits at most this long).")(fn)
    fn = click.option("--refresh", type=click.FloatRange(min=0), default=1.0, show_default=True,
                      help="A run still being written is served from a snapshot taken again at most this often.")(fn)
    fn = keys_option(fn)
    fn = runs_dir_option(fn)
    return click.argument("target", metavar="RUN_OR_DIR")(fn)


@cli.command("serve")
@catalog_options
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--token", default=None, envvar="LEDGERMEM_SERVE_TOKEN",
              help="Require 'Authorization: Bearer TOKEN' on /api/ (env LEDGERMEM_SERVE_TOKEN).")
@click.option("--intake", is_flag=True, help="Enable the one write: POST .../facts, audited before it answers.")
@click.option("--intake-backend", default="heuristic", show_default=True,
              help="Summarizer backend of the fact intake (as for `run`).")
@click.option("--quiet", is_flag=True, help="Do not log requests on stderr.")
@click.option("--workers", type=click.IntRange(1, 256), default=WORKERS, show_default=True,
              help="Threads answering requests; more requests wait (up to a backlog) or get 503.")
@click.option("--idle-timeout", type=click.FloatRange(min=0.1, max=3600), default=IDLE, show_default=True,
              help="Seconds a client may stay silent before its connection is closed.")
@click.option("--time-limit", type=click.FloatRange(min=0.1, max=86400), default=TIME_LIMIT,
              show_default=True, help="Seconds a read may take; past it its queries stop and it answers 504.")
@click.option("--audit-processes", type=click.IntRange(0, 16), default=1, show_default=True,
              help="Audits run in this many child processes at most, so other reads never wait behind one "
                   "(0: in the server's process).")
@fails_cleanly
def serve_cmd(target: str, runs_dir: str, keys: Path | None, refresh: float, hold: float, port: int,
              token: str | None, intake: bool, intake_backend: str, quiet: bool, workers: int,
              idle_timeout: float, time_limit: float, audit_processes: int) -> None:
    """Serve runs over read-only HTTP JSON on 127.0.0.1, with the run explorer at /.

    RUN_OR_DIR is a run id (under --runs-dir), a ledger file, a run
    folder, a runs directory (every run in it), or a Parquet export. A
    run whose writer is still running is served from a snapshot. The
    API is described at /openapi.json.

    \b
    Example:
      ledgermem serve runs/ --port 8765
      curl -s http://127.0.0.1:8765/api/runs/demo/audit
    """
    from ledgermem.service.http import make_server

    catalog = Catalog(target, runs_dir=Path(runs_dir), keys=keys, refresh=refresh, hold=hold)
    service = Service(catalog, intake=intake, intake_backend=intake_backend, time_limit=time_limit,
                      audit_processes=audit_processes)
    server = listen(lambda: make_server(service, port, token=token, quiet=quiet, workers=workers,
                                        idle=idle_timeout), port, catalog.close)
    if service.audit_workers is not None:  # its modules load while the server starts answering
        threading.Thread(target=service.audit_workers.warm, daemon=True, name="ledgermem-audit-warm").start()
    runs = sum(len(catalog.run_ids(s)) for s in catalog.sources())
    extras = ", bearer token required" if token else ""
    extras += ", fact intake on" if intake else ""
    serve_until_stopped(server, lambda bound: (
        f"serving {catalog.description} ({runs} run{'s' if runs != 1 else ''}{extras}) at "
        f"http://127.0.0.1:{bound}/ : explorer at /, API under /api/, OpenAPI at /openapi.json"),
        closing=[catalog.close])


@cli.command("mcp")
@catalog_options
@fails_cleanly
def mcp_cmd(target: str, runs_dir: str, keys: Path | None, refresh: float, hold: float) -> None:
    """Answer the same questions as `serve` over MCP (JSON-RPC on stdin/stdout) for an MCP client.

    Tools: list_runs, get_run, list_episodes, audit, erasures,
    current_values, history, as_of, blame, diff, manifest, list_probes,
    probe, layers, timeline; each returns the JSON the HTTP API returns.

    \b
    Example:
      ledgermem mcp runs/demo
      (client configuration: {"command": "ledgermem", "args": ["mcp", "runs/demo"]})
    """
    from ledgermem.service.mcp import run_stdio

    catalog = Catalog(target, runs_dir=Path(runs_dir), keys=keys, refresh=refresh, hold=hold)
    _stop_on_sigterm()
    try:
        run_stdio(Service(catalog))
    finally:
        catalog.close()
