"""`ledgermem checkpoint` and the checkpoint parts of `verify` and `audit`: the chain head signed outside the ledger.

The signing key is found in this order: `--checkpoint-key`, then
`$LEDGERMEM_CHECKPOINT_KEY`, then `$XDG_CONFIG_HOME/ledgermem/checkpoint.key`
(`~/.config/...`); it is made on first use. Verifying trusts `--public-key`,
else the public half of that signing key; never the key written in a
checkpoint line, which whoever rewrote the ledger could have written too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledgermem.cli.main import cli, err, fails_cleanly, out
from ledgermem.cli.options import json_option, runs_dir_option
from ledgermem.cli.output import emit
from ledgermem.memory.runs import resolve_run
from ledgermem.ledger.checkpoint import (
    CheckpointReport,
    checkpoint_path,
    default_key_path,
    key_id,
    load_public_key,
    load_signing_key,
    public_key_path,
    read_checkpoints,
    verify_checkpoints,
    write_checkpoint,
)
from ledgermem.ledger.errors import CheckpointError
from ledgermem.ledger.store import Ledger

key_option = click.option(
    "--checkpoint-key", type=click.Path(dir_okay=False), default=None, metavar="PATH",
    help="Ed25519 signing key, kept outside the run (default: $LEDGERMEM_CHECKPOINT_KEY, else "
         "$XDG_CONFIG_HOME/ledgermem/checkpoint.key).")
public_key_option = click.option(
    "--public-key", type=click.Path(dir_okay=False, exists=True), default=None, metavar="PATH",
    help="The signer's public key to trust (default: the public half of the signing key).")


def trusted_key(public_key: str | None, checkpoint_key: str | None) -> Ed25519PublicKey:
    """The public key checkpoints must verify under; never made here, never read from a checkpoint line."""
    if public_key:
        return load_public_key(public_key)
    private = Path(checkpoint_key) if checkpoint_key else default_key_path()
    if private.exists():
        return load_signing_key(private, create=False).public_key()
    if public_key_path(private).exists():
        return load_public_key(public_key_path(private))
    raise CheckpointError(f"no trusted key to check checkpoints with: no signing key at {private}; "
                          "pass --public-key with the signer's public key")


def check(ledger_path: Path, source: str, public_key: str | None, checkpoint_key: str | None) -> CheckpointReport:
    """Every checkpoint of `source` (default: the one beside the ledger) against the ledger now.

    A Parquet export keeps the ledger's seqs and hashes, so the ledger's
    checkpoints vouch for it too (name the file: an export has none beside it).
    """
    if not source and ledger_path.is_dir():
        raise CheckpointError(f"{ledger_path}: a Parquet export has no checkpoint file beside it; "
                              "name the ledger's: --checkpoint FILE")
    where = Path(source) if source else checkpoint_path(ledger_path)
    trusted = trusted_key(public_key, checkpoint_key)
    checkpoints = read_checkpoints(where)
    if not checkpoints:
        raise CheckpointError(f"{where}: the checkpoint file holds no checkpoints")
    from ledgermem.ledger.parquet import ParquetLedger  # pyarrow.parquet: loaded by the commands that read Parquet

    with ParquetLedger(ledger_path) if ledger_path.is_dir() else Ledger(ledger_path, read_only=True) as ledger:
        return verify_checkpoints(ledger, checkpoints, trusted, str(where))


def show(report: CheckpointReport) -> None:
    """A line for a good report; one line per problem on stderr for a bad one."""
    if report.ok:
        after = report.last_seq - (report.newest_seq or 0)
        tail = f"; {after} event(s) after it are not covered by any checkpoint" if after else ""
        out.print(f"ok: {report.checked} checkpoint(s) signed by key {report.key_id} hold, the newest at seq "
                  f"{report.newest_seq}{tail} ({report.source})", markup=False)
        return
    for problem in report.problems:
        err.print(f"CHECKPOINT FAILED: {problem}", markup=False)


def audit_status(ledger_path: Path) -> tuple[str, bool, dict[str, Any]]:
    """The audit's checkpoint line: (text, whether it fails the audit, JSON detail)."""
    where = checkpoint_path(ledger_path)
    if ledger_path.is_dir() or not where.exists():
        return "none (`ledgermem checkpoint RUN` signs one)", False, {"present": False}
    try:
        report = check(ledger_path, str(where), None, None)
    except CheckpointError as exc:
        return f"present, not checked: {exc}", False, {"present": True, "checked": False, "reason": str(exc)}
    detail = {"present": True, **report.as_dict()}
    if report.ok:
        return f"{report.checked} signed checkpoint(s) hold, the newest at seq {report.newest_seq}", False, detail
    return f"FAILED: {report.problems[0]}", True, detail


@cli.command("checkpoint")
@click.argument("run")
@runs_dir_option
@key_option
@click.option("--checkpoint-out", "copies", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Also append the checkpoint here, e.g. on another machine (repeatable).")
@json_option()
@fails_cleanly
def checkpoint_cmd(run: str, runs_dir: str, checkpoint_key: str | None, copies: tuple[str, ...],
                   as_json: bool) -> None:
    """Sign the ledger's head (seq, hash, event count, time) with a key kept outside the run.

    The ledger is verified first; the signed line is appended to
    <ledger>.checkpoints.jsonl beside it and to every --checkpoint-out.
    `ledgermem verify RUN --checkpoint` then detects a rewrite that
    recomputed the hashes, and removed events.

    \b
    Example:
      ledgermem checkpoint demo --checkpoint-out /mnt/audit/demo.checkpoints.jsonl
    """
    path = resolve_run(run, Path(runs_dir))
    if path.is_dir():
        raise CheckpointError(f"{path}: a Parquet export is a copy; sign the ledger it was exported from")
    key = load_signing_key(Path(checkpoint_key) if checkpoint_key else default_key_path())
    with Ledger(path, read_only=True) as ledger:
        checkpoint, files = write_checkpoint(ledger, key, copies=copies)
    if as_json:
        emit({"checkpoint": json.loads(checkpoint.to_line()), "key_id": key_id(key.public_key()),
              "files": [str(f) for f in files]}, as_json=True, indent=None, ascii_only=True)
        return
    out.print(f"signed seq {checkpoint.seq} ({checkpoint.events} events, head {checkpoint.head_hash[:16]}…) "
              f"with key {key_id(key.public_key())}: {', '.join(str(f) for f in files)}", markup=False)
