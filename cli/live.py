"""`ledgermem live serve|mcp`, `ledgermem token create|list|revoke`, `ledgermem tools`: the live memory service."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ledgermem.cli.options import json_option
from ledgermem.cli.main import cli, fails_cleanly, out
from ledgermem.cli.serve import IDLE, WORKERS, _stop_on_sigterm, listen, serve_until_stopped
from ledgermem.service.errors import ServeError

LIVE_ENV = "LEDGERMEM_LIVE"
TOKEN_ENV = "LEDGERMEM_TOKEN"


def live_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--live", "live", required=True, envvar=LIVE_ENV, type=click.Path(file_okay=False),
                        help=f"The live memory folder (ledger, keys, tokens.json); env {LIVE_ENV}.")(fn)


@cli.group("live")
def live_group() -> None:
    """Serve agents' memories (streams 'namespace/.../stream') for writing and reading, with scoped tokens.

    \b
    Example:
      ledgermem token create --live mem/ --namespace acme --scope read,write
      ledgermem live serve mem/ --port 8766
    """


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from ledgermem.gate.errors import CommandRejected
    from ledgermem.gate.retention import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value, param.opts[0])
    except CommandRejected as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1]) from None


@live_group.command("serve")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--backend", default="heuristic", show_default=True,
              help="Backend that summarises turns and answers `respond` (as for `run`).")
@click.option("--quiet", is_flag=True, help="Do not log requests on stderr.")
@click.option("--workers", type=click.IntRange(1, 256), default=WORKERS, show_default=True,
              help="Threads answering requests.")
@click.option("--idle-timeout", type=click.FloatRange(min=0.1, max=3600), default=IDLE, show_default=True,
              help="Seconds a client may stay silent before its connection is closed.")
@click.option("--retention-every", metavar="DURATION", default=None, callback=_duration,
              help="Apply the folder's retention policies to every stream they cover this often (90s, 15m, "
                   "1h, 1d; attributed to server:retention-schedule). Default: only when a client asks.")
@fails_cleanly
def live_serve(folder: str, port: int, backend: str, quiet: bool, workers: int, idle_timeout: float,
               retention_every: int | None) -> None:
    """Serve the live memory in FOLDER over HTTP JSON on 127.0.0.1 (created if new).

    Every request under /api/memory/ needs 'Authorization: Bearer <token>'
    of a token whose namespace covers the stream and which holds the
    tool's scope. The API is described at /openapi.json; the explorer at /
    records turns and asks questions with a token entered on the page.

    \b
    Example:
      ledgermem live serve mem/ --port 8766
      curl -s -H "Authorization: Bearer $TOKEN" \\
        'http://127.0.0.1:8766/api/memory/values?stream=acme/user-42/session-7'
    """
    from ledgermem.service.http import make_live_server
    from ledgermem.service.live import LiveStore
    from ledgermem.service.live_questions import LiveService
    from ledgermem.service.retention import RetentionSchedule

    store = LiveStore(folder, backend=backend)
    server = listen(lambda: make_live_server(LiveService(store), port, quiet=quiet, workers=workers,
                                             idle=idle_timeout), port, store.close)
    streams = len(store.ledger.streams())
    schedule = RetentionSchedule(store, retention_every) if retention_every is not None else None
    serve_until_stopped(server, lambda bound: (
        f"serving the live memory {folder} ({streams} stream{'s' if streams != 1 else ''}, "
        f"{len(store.tokens.tokens())} token(s)) at http://127.0.0.1:{bound}/ : explorer at /, API under "
        "/api/memory/, OpenAPI at /openapi.json"),
        started=schedule.start if schedule is not None else None,
        closing=[schedule.stop, store.close] if schedule is not None else [store.close])


@live_group.command("mcp")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--backend", default="heuristic", show_default=True, help="As for `live serve`.")
@fails_cleanly
def live_mcp(folder: str, backend: str) -> None:
    """Serve the live memory in FOLDER over MCP (JSON-RPC on stdin/stdout) for one token.

    The token is read from the environment (LEDGERMEM_TOKEN), never from
    the command line; every tool call is checked against its namespace and
    scopes. The folder's ledger is held by this process while it runs.

    \b
    Example:
      LEDGERMEM_TOKEN=lmt_... ledgermem live mcp mem/
      (client configuration: {"command": "ledgermem", "args": ["live", "mcp", "mem/"],
                              "env": {"LEDGERMEM_TOKEN": "lmt_..."}})
    """
    from ledgermem.service.live import LiveStore
    from ledgermem.service.live_questions import LiveService
    from ledgermem.service.mcp import run_stdio

    store = LiveStore(folder, backend=backend)
    try:
        service = LiveService(store)
        token = service.authenticate(os.environ.get(TOKEN_ENV))
        _stop_on_sigterm()
        run_stdio(service.session(token))
    finally:
        store.close()


@live_group.group("retention")
def retention_group() -> None:
    """Retention policies of a live folder's namespaces (in FOLDER/retention.json), applied by the server on
    `POST /api/memory/retention/apply` (a token with the erase scope).

    \b
    Example:
      ledgermem live retention set mem/ --namespace acme --keep-raw-turns 20 --expire-facts-after 30d
    """


@retention_group.command("set")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@click.option("--namespace", required=True, help="Namespace prefix the policy covers, e.g. 'acme' or 'acme/user-42'.")
@click.option("--keep-raw-turns", type=click.IntRange(min=1), default=None,
              help="Keep the raw text of the newest N turns of each stream; older turns lose their raw text "
                   "(their summaries and facts are kept).")
@click.option("--expire-facts-after", "fact_ttl", callback=_duration, default=None, metavar="DURATION",
              help="Expire a fact this long after the turn that stated it: 90s, 15m, 12h, 30d, 2w, 1d12h.")
@fails_cleanly
def retention_set(folder: str, namespace: str, keep_raw_turns: int | None, fact_ttl: int | None) -> None:
    """Declare (or replace) the retention policy of a namespace; a stream follows its longest covering namespace.

    Turns holding a pinned constraint never expire.

    \b
    Example:
      ledgermem live retention set mem/ --namespace acme --keep-raw-turns 20 --expire-facts-after 30d
    """
    from ledgermem.gate.retention import RetentionPolicy
    from ledgermem.service.retention import RetentionPolicies

    policy = RetentionPolicy(namespace=namespace, raw_turns=keep_raw_turns, fact_ttl_seconds=fact_ttl)
    RetentionPolicies(folder).set(policy)
    out.print(policy.describe(), markup=False, soft_wrap=True)


@retention_group.command("show")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@json_option("Machine-readable output.")
@fails_cleanly
def retention_show(folder: str, as_json: bool) -> None:
    """The retention policies of a live folder.

    \b
    Example:
      ledgermem live retention show mem/
    """
    from ledgermem.service.retention import RetentionPolicies

    policies = [p for _, p in sorted(RetentionPolicies(folder).load().items())]
    if as_json:
        click.echo(json.dumps([p.as_dict() for p in policies]))
        return
    for p in policies:
        out.print(p.describe(), markup=False, soft_wrap=True)
    if not policies:
        out.print("no retention policies: every stream keeps everything")


@retention_group.command("clear")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@click.option("--namespace", required=True, help="The namespace whose policy goes.")
@fails_cleanly
def retention_clear(folder: str, namespace: str) -> None:
    """Remove the retention policy of a namespace (what already expired stays expired).

    \b
    Example:
      ledgermem live retention clear mem/ --namespace acme
    """
    from ledgermem.service.retention import RetentionPolicies

    if not RetentionPolicies(folder).clear(namespace):
        raise ServeError(f"no retention policy for namespace {namespace!r} in {folder}")
    out.print(f"removed the retention policy of {namespace!r}")


@cli.group("token")
def token_group() -> None:
    """Create, list and revoke the scoped tokens of a live memory.

    \b
    Example:
      ledgermem token create --live mem/ --namespace acme/user-42 --scope read,write
    """


@token_group.command("create")
@live_option
@click.option("--namespace", required=True, help="Namespace prefix the token covers, e.g. 'acme' or 'acme/user-42'.")
@click.option("--scope", "scopes", default="read", show_default=True,
              help="Comma-separated scopes: read, write, erase.")
@click.option("--share", "shares", multiple=True, metavar="NAMESPACE=SCOPES",
              help="A further grant, e.g. 'acme/shared=read' (repeatable): streams several agents share.")
@click.option("--note", default="", help="What the token is for (stored, shown by `token list`).")
@click.option("--expires-in", metavar="DURATION", default=None, callback=_duration,
              help="The token stops authenticating this long after now (90s, 15m, 12h, 30d, 2w). Default: "
                   "until revoked.")
@json_option("Print JSON (with the secret) instead of text.")
@fails_cleanly
def token_create(live: str, namespace: str, scopes: str, shares: tuple[str, ...], note: str, expires_in: int | None,
                 as_json: bool) -> None:
    """Create a token and print its secret once: only its salted hash is stored.

    \b
    Example:
      ledgermem token create --live mem/ --namespace acme/user-42 --scope read,write --share acme/shared=read
    """
    from ledgermem.service.tokens import TokenStore

    grants = []
    for share in shares:
        other, sep, other_scopes = share.partition("=")
        if not sep:
            raise click.BadParameter(f"{share!r}: give NAMESPACE=SCOPES, e.g. acme/shared=read", param_hint="--share")
        grants.append((other, other_scopes))
    Path(live).mkdir(parents=True, exist_ok=True)
    token, secret = TokenStore(Path(live)).create(namespace, scopes, note=note, shared=grants, expires_in=expires_in)
    if as_json:
        out.print(json.dumps({**token.public(), "secret": secret}), markup=False, soft_wrap=True)
        return
    until = f", expires {token.expires_at}" if token.expires_at else ""
    out.print(f"token {token.token_id}: namespace {token.namespace}, scopes {','.join(sorted(token.scopes))}{until}",
              markup=False)
    out.print(secret, markup=False, soft_wrap=True)
    click.echo("(the secret is shown only now; send it as 'Authorization: Bearer <secret>')", err=True)


@token_group.command("list")
@live_option
@fails_cleanly
def token_list(live: str) -> None:
    """List the tokens of a live memory (ids, namespaces, scopes; never secrets).

    \b
    Example:
      ledgermem token list --live mem/
    """
    from ledgermem.service.tokens import TokenStore

    for token in TokenStore(Path(live)).tokens():
        out.print(json.dumps(token.public()), markup=False, soft_wrap=True)


@token_group.command("revoke")
@live_option
@click.argument("token_id")
@fails_cleanly
def token_revoke(live: str, token_id: str) -> None:
    """Revoke a token by id: a running server refuses it from its next request.

    \b
    Example:
      ledgermem token revoke --live mem/ 3f2a9c0d4b1e7a65
    """
    from ledgermem.service.tokens import TokenStore

    token = TokenStore(Path(live)).revoke(token_id)
    out.print(f"token {token.token_id} revoked", markup=False)


@cli.command("tools")
@click.option("--format", "fmt", type=click.Choice(["openai", "mcp", "openapi"]), default="openai",
              show_default=True, help="OpenAI function-calling schemas, MCP tool list, or the OpenAPI document.")
@fails_cleanly
def tools_cmd(fmt: str) -> None:
    """Print the live memory's tools for an agent framework (all generated from one list).

    \b
    Example:
      ledgermem tools --format openai > memory_tools.json
    """
    from ledgermem.service.live_questions import LIVE_QUESTIONS, openai_tools
    from ledgermem.service.mcp import tool

    if fmt == "openai":
        data: object = openai_tools()
    elif fmt == "mcp":
        data = {"tools": [tool(q) for q in LIVE_QUESTIONS]}
    else:
        from ledgermem.service.http import openapi
        from ledgermem.service.live_questions import LiveService

        data = openapi(LiveService)  # the document needs the list and its wording, not a store
    click.echo(json.dumps(data, indent=1, ensure_ascii=False))

