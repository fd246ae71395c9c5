"""Multimodal blocks: bytes by content hash in the blob table, sealed like text, exported, verified, erased."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ledgermem.datasets.model import DatasetError
from ledgermem.datasets.loaders import load_dataset
from ledgermem.ledger.blocks import Block, caption_text
from ledgermem.ledger.errors import LedgerError
from ledgermem.projections.events import TurnRecorded
from ledgermem.ledger.keys import ERASED, KeyStore
from ledgermem.ledger.parquet import BLOBS_FILE, ParquetLedger, export, import_dataset
from ledgermem.ledger.schema import decode, encode
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR


def _png(width: int = 2, height: int = 1) -> bytes:
    """A real (tiny, grey) PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


PNG = _png()
PNG_SHA = hashlib.sha256(PNG).hexdigest()


def _seed_file(folder: Path, blocks: list[dict[str, object]]) -> Path:
    doc = {"episodes": [{"episode_id": "ep1", "dialogues": [
        {"user": "Here is my cat.", "agent": "Lovely!", "blocks": blocks},
        {"user": "I live in Lisbon.", "agent": "Noted."},
    ], "facts": {}, "probes": []}]}
    path = folder / "seed.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _memory(path: Path, personal: bool = True) -> Memory:
    cfg = MemoryConfig(tokenizer=ESTIMATOR, personal_data=personal)
    return Memory(Ledger(path), StreamKey("run", "three_layer", "ep1"), config=cfg)


def _record(path: Path, dataset: Path, personal: bool = True) -> Memory:
    memory = _memory(path, personal)
    for t in load_dataset(str(dataset)).episodes[0].turns:
        memory.add_turn(t.user, t.agent, occurred_at=t.occurred_at, source=t.source, blocks=t.blocks)
    return memory


def _block(memory: Memory, block_id: str) -> dict[str, object]:
    result = memory.tool("get_block", {"block_id": block_id})
    assert result.ok, result.text
    out: dict[str, object] = json.loads(result.text)
    return out


# --- the seed format ---------------------------------------------------------------------


def test_seed_png_block_round_trips_with_identical_bytes_and_hash(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "cat.png").write_bytes(PNG)
    dataset = _seed_file(tmp_path, [
        {"mime": "image/png", "data_base64": base64.b64encode(PNG).decode(), "source": "camera", "caption": "a cat"},
        {"mime": "image/png", "path": "img/cat.png", "caption": "the same cat"},
    ])
    turn = load_dataset(str(dataset)).episodes[0].turns[0]
    assert [b.data for b in turn.blocks] == [PNG, PNG] and turn.user == "Here is my cat."
    memory = _record(tmp_path / "l.duckdb", dataset)
    memory.ledger.close()

    reopened = _memory(tmp_path / "l.duckdb")  # from the file, with its key store
    (rec,) = [r for r in reopened.ledger.read(event_types=["turn_recorded"]) if r.event.blocks]
    assert [b["sha256"] for b in rec.event.blocks] == [PNG_SHA, PNG_SHA]
    got = _block(reopened, PNG_SHA)
    assert base64.b64decode(str(got["data_base64"])) == PNG
    assert hashlib.sha256(base64.b64decode(str(got["data_base64"]))).hexdigest() == got["sha256"] == PNG_SHA
    assert (got["mime"], got["source"], got["caption"], got["size"], got["bytes"]) == (
        "image/png", "camera", "a cat", len(PNG), "ok")
    # One row per key: the two blocks of one turn share their bytes.
    assert reopened.ledger.conn.execute("SELECT count(*) FROM blobs").fetchone() == (1,)
    # The window shows the captions, not the bytes; the raw-record tool lists the blocks.
    window = reopened.render().text
    assert "Here is my cat. [image: a cat] [image: the same cat]" in window
    raw = reopened.tool("get_raw_record", {"reference_id": "r0001"}).text
    assert f"BLOCK {PNG_SHA} (user) image/png; {len(PNG)} bytes; source camera: a cat" in raw
    assert reopened.ledger.verify().ok
    reopened.ledger.close()


def test_the_summarizer_sees_the_caption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ledgermem.memory.memory as module
    seen: list[str] = []
    original = module.summarizer_messages

    def spy(state: object, *, turn: int, user: str, agent: str) -> list[dict[str, str]]:
        seen.append(user)
        return original(state, turn=turn, user=user, agent=agent)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "summarizer_messages", spy)
    dataset = _seed_file(tmp_path, [{"mime": "image/jpeg", "source": "https://example.org/x.jpg",
                                     "caption": "a red bicycle"}])
    memory = _record(tmp_path / "l.duckdb", dataset)
    assert seen[0] == "Here is my cat. [image: a red bicycle]"
    stored = [r.event.text for r in memory.ledger.read(event_types=["turn_recorded"])]
    assert stored[0] == "Here is my cat."  # the record keeps the words as said; the block stays a block
    memory.ledger.close()


def test_sealed_block_keeps_caption_and_source_out_of_the_clear(tmp_path: Path) -> None:
    dataset = _seed_file(tmp_path, [{"mime": "image/png", "data_base64": base64.b64encode(PNG).decode(),
                                     "source": "holiday-photo-7", "caption": "grandmother's garden"}])
    memory = _record(tmp_path / "l.duckdb", dataset)
    payloads = " ".join(r[0] for r in memory.ledger.conn.execute("SELECT payload FROM events").fetchall())
    assert "grandmother" not in payloads and "holiday-photo-7" not in payloads
    assert PNG_SHA in payloads  # the content address stays readable: the chain covers the bytes by it
    stored = memory.ledger.conn.execute("SELECT data FROM blobs").fetchone()
    assert stored is not None and PNG not in bytes(stored[0])  # encrypted under the turn's key
    memory.ledger.close()


@pytest.mark.parametrize("blocks, message", [
    ([{"mime": "image/png", "path": "../outside.png"}], "leaves the dataset's folder"),
    ([{"mime": "image/png", "path": "/etc/hostname"}], "leaves the dataset's folder"),
    ([{"mime": "image/png", "path": "missing.png"}], "no such file"),
    ([{"mime": "image/png", "data_base64": "not base64!"}], "not valid base64"),
    ([{"mime": "png", "data_base64": ""}], "MIME type"),
    ([{"mime": "image/png"}], "needs a source"),
    ([{"mime": "image/png", "data_base64": "", "path": "x.png"}], "not both"),
    ([{"mime": "image/png", "caption": "x", "colour": "red"}], "unknown field"),
    ([{"mime": "image/png", "caption": "x", "side": "both"}], "side must be"),
    ("a picture", "not a list"),
])
def test_bad_seed_blocks_are_refused_naming_the_block(tmp_path: Path, blocks: object, message: str) -> None:
    (tmp_path / "outside.png").write_bytes(PNG)
    inner = tmp_path / "data"
    inner.mkdir()
    path = _seed_file(inner, blocks)  # type: ignore[arg-type]
    with pytest.raises(DatasetError) as err:
        load_dataset(str(path))
    assert message in str(err.value)
    assert "episodes[0].dialogues[0]" in str(err.value)


# --- the ledger ------------------------------------------------------------------------------


def _turn(blocks: tuple[Block, ...]) -> TurnRecorded:
    return TurnRecorded(turn=1, record_id="r0001", text="hi", agent="yo", blocks=tuple(b.ref() for b in blocks))


def test_append_refuses_a_reference_without_its_bytes_or_with_other_bytes() -> None:
    block = Block(mime="image/png", data=PNG, caption="c")
    with Ledger() as ledger:
        with pytest.raises(LedgerError, match="bytes were not given"):
            ledger.append(StreamKey("r"), [_turn((block,))], expected_version=0)
        with pytest.raises(LedgerError, match="do not have that hash"):
            ledger.append(StreamKey("r"), [_turn((block,))], expected_version=0, blobs={PNG_SHA: PNG + b"x"})
        assert ledger.last_seq == 0 and ledger.conn.execute("SELECT count(*) FROM blobs").fetchone() == (0,)


def test_verify_names_an_altered_blob_and_a_missing_one(tmp_path: Path) -> None:
    block = Block(mime="image/png", data=PNG, caption="c")
    for sealed in (False, True):
        with Ledger(keys=KeyStore() if sealed else None) as ledger:
            ledger.append(StreamKey("r"), [_turn((block,))], expected_version=0, blobs={PNG_SHA: PNG},
                          keys=["k"] if sealed else None)
            assert ledger.verify().ok
            ledger.conn.execute("UPDATE blobs SET data = data || '\\x00'::BLOB")  # must-fail: the bytes altered
            report = ledger.verify()
            assert not report.ok and PNG_SHA in report.reason and "altered" in report.reason
            ledger.conn.execute("DELETE FROM blobs")  # must-fail: the bytes gone
            report = ledger.verify()
            assert not report.ok and report.reason == f"seq 1: block {PNG_SHA} has no row in the blobs table"


def test_a_turn_without_blocks_encodes_as_before_and_an_old_payload_decodes() -> None:
    old_payload = '{"agent":"yo","gated":"","remember":true,"source":null}'  # as written before blocks existed
    event = TurnRecorded(turn=1, record_id="r0001", text="hi", agent="yo")
    assert encode(event).payload == old_payload  # so event ids and hashes of block-less turns are unchanged
    columns = {**encode(event).columns}
    back = decode(1, "turn_recorded", 1, columns, old_payload)
    assert back == event and back.blocks == ()  # type: ignore[attr-defined]


def test_a_ledger_written_before_the_blob_table_reads_and_gets_one(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with Ledger(path) as ledger:
        ledger.append(StreamKey("r"), [TurnRecorded(turn=1, record_id="r0001", text="hi", agent="yo")],
                      expected_version=0)
        ledger.conn.execute("DROP TABLE blobs")
    with duckdb.connect(str(path)) as conn:
        assert "blobs" not in {r[0] for r in conn.execute("SHOW TABLES").fetchall()}
    with Ledger(path, read_only=True) as ledger:
        assert ledger.verify().ok and [r.event.blocks for r in ledger.read()] == [()]  # type: ignore[attr-defined]
        assert ledger.get_blob(PNG_SHA).state == "missing"
    with Ledger(path) as ledger:
        assert ledger.conn.execute("SELECT count(*) FROM blobs").fetchone() == (0,)


# --- export and import ----------------------------------------------------------------------


def test_export_and_import_carry_blobs_and_verify_covers_them(tmp_path: Path) -> None:
    dataset = _seed_file(tmp_path, [{"mime": "image/png", "data_base64": base64.b64encode(PNG).decode(),
                                     "caption": "a cat", "source": "camera"}])
    memory = _record(tmp_path / "l.duckdb", dataset, personal=False)
    export(memory.ledger, tmp_path / "out")
    memory.ledger.close()
    blob_file = tmp_path / "out" / "run_id=run" / BLOBS_FILE
    assert pq.read_table(blob_file).num_rows == 1
    with ParquetLedger(tmp_path / "out") as exported:
        assert exported.verify().ok and exported.get_blob(PNG_SHA).data == PNG
    imported = import_dataset(tmp_path / "out", tmp_path / "copy.duckdb")
    with imported as copy:
        assert copy.verify().ok and copy.get_blob(PNG_SHA).data == PNG

    table = pq.read_table(blob_file)  # must-fail: one byte of the exported image altered
    data = bytearray(table.column("data")[0].as_py())
    data[-1] ^= 1
    pq.write_table(table.set_column(3, table.schema.field("data"), pa.array([bytes(data)], pa.binary())), blob_file)
    with ParquetLedger(tmp_path / "out") as exported:
        report = exported.verify()
    assert not report.ok and PNG_SHA in report.reason
    with pytest.raises(Exception, match=PNG_SHA):
        import_dataset(tmp_path / "out", tmp_path / "copy2.duckdb")
    assert not (tmp_path / "copy2.duckdb").exists()


def test_export_of_a_sealed_blob_verifies_with_the_keys(tmp_path: Path) -> None:
    dataset = _seed_file(tmp_path, [{"mime": "image/png", "data_base64": base64.b64encode(PNG).decode()}])
    memory = _record(tmp_path / "l.duckdb", dataset)
    export(memory.ledger, tmp_path / "out")
    keys = memory.ledger.keys
    assert keys is not None
    with ParquetLedger(tmp_path / "out") as exported:
        assert exported.get_blob(PNG_SHA).state == "sealed"  # no key store: the bytes stay closed
    with ParquetLedger(tmp_path / "out", keys=keys) as exported:
        assert exported.verify().ok and exported.get_blob(PNG_SHA).data == PNG
        exported.conn.close()
    memory.ledger.close()


# --- erasure ----------------------------------------------------------------------------------


@pytest.mark.parametrize("subject", [False, True])
def test_erasure_makes_block_bytes_unreadable(tmp_path: Path, subject: bool) -> None:
    dataset = _seed_file(tmp_path, [{"mime": "image/png", "data_base64": base64.b64encode(PNG).decode(),
                                     "caption": "my front door", "source": "doorcam"}])
    memory = _record(tmp_path / "l.duckdb", dataset)
    before = _block(memory, PNG_SHA)  # control: before erasure the bytes are readable
    assert before["bytes"] == "ok" and base64.b64decode(str(before["data_base64"])) == PNG
    got = memory.erase(legal_basis="test", subject=True) if subject else memory.erase(
        legal_basis="test", record_id="r0001")
    place = "blob table of run/three_layer/ep1 (bytes of erased records)"
    assert place in got.places_scanned and got.residue[place] == 0
    after = _block(memory, PNG_SHA)
    assert after["bytes"] == ERASED and after["data_base64"] is None and after["caption"] == ERASED
    assert memory.ledger.get_blob(PNG_SHA).state == "erased"
    assert "my front door" not in memory.render().text
    memory.ledger.close()
    with Ledger(tmp_path / "l.duckdb", read_only=True) as ledger:  # a replay reads what the live state showed
        (rec,) = [r for r in ledger.read(event_types=["turn_recorded"]) if r.event.blocks]  # type: ignore[attr-defined]
        ref = rec.event.blocks[0]  # type: ignore[attr-defined]
        assert ref["caption"] == ERASED and ref["sha256"] == PNG_SHA
        assert ledger.get_blob(PNG_SHA).state == "erased" and ledger.verify().ok


def test_caption_text_follows_the_side() -> None:
    refs = [Block(mime="image/png", source="u", caption="a", side="agent").ref(),
            Block(mime="audio/ogg", source="v").ref()]
    assert caption_text(refs) == "[audio]" and caption_text(refs, "agent") == "[image: a]"


# --- a sharded run ------------------------------------------------------------------------------


def test_merged_shards_carry_their_blobs(tmp_path: Path) -> None:
    from ledgermem.evaluation.cluster import plan_shards
    from ledgermem.evaluation.merge import merge_shards, shard_folder, shard_ledgers
    from ledgermem.evaluation.runner import RunOptions, run
    from ledgermem.memory.runs import ledger_path

    other = _png(3, 2)
    doc = {"episodes": [
        {"episode_id": f"ep{i}", "dialogues": [
            {"user": "Look.", "agent": "Nice.", "blocks": [{"mime": "image/png", "caption": f"picture {i}",
                                                              "data_base64": base64.b64encode(img).decode()}]},
            {"user": "I live in Lisbon.", "agent": "Noted."}], "facts": {}, "probes": []}
        for i, img in enumerate((PNG, other))]}
    (tmp_path / "ds.json").write_text(json.dumps(doc), encoding="utf-8")
    ds = load_dataset(str(tmp_path / "ds.json"))
    runs = tmp_path / "runs"
    for k, ids in enumerate(plan_shards([e.episode_id for e in ds.episodes], 2)):
        run(ds, RunOptions(run_id="r", runs_dir=shard_folder(runs, "r", k), systems=("three_layer",),
                           memory=MemoryConfig(tokenizer=ESTIMATOR), episode_ids=ids))
    result = merge_shards(shard_ledgers(runs, "r"), ledger_path(runs, "r"))
    with Ledger(result.ledger_path, read_only=True) as ledger:
        assert ledger.verify().ok
        assert ledger.conn.execute("SELECT count(*) FROM blobs").fetchone() == (2,)
        assert ledger.keys is not None
        assert ledger.get_blob(hashlib.sha256(other).hexdigest()).data == other


def test_erase_on_the_command_line_shreds_the_blocks_of_every_system(tmp_path: Path) -> None:
    import os

    from click.testing import CliRunner

    from ledgermem.cli.commands import cli

    doc = {"episodes": [{"episode_id": "alice", "dialogues": [
        {"user": "My front door, freshly painted.", "agent": "Nice colour.",
         "blocks": [{"mime": "image/png", "caption": "a blue front door",
                     "data_base64": base64.b64encode(PNG).decode()}]},
        {"user": "Lovely weather today.", "agent": "Indeed."}], "facts": {}, "probes": []}]}
    (tmp_path / "seed.json").write_text(json.dumps(doc), encoding="utf-8")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        ran = CliRunner().invoke(cli, ["run", "--dataset", "seed.json", "--run-id", "d",
                                       "--systems", "three_layer,full_context"], catch_exceptions=False)
        assert ran.exit_code == 0, ran.output
        path = tmp_path / "runs" / "d" / "ledger.duckdb"
        with Ledger(path, read_only=True) as ledger:  # control: before the erasure every copy is readable
            assert ledger.get_blob(PNG_SHA).data == PNG
            assert ledger.conn.execute("SELECT count(*) FROM blobs").fetchone() == (2,)  # one per system's key
        erased = CliRunner().invoke(cli, ["erase", "d", "--episode", "alice", "--record", "r0001",
                                          "--legal-basis", "x", "--json"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert erased.exit_code == 0, erased.output
    receipt = json.loads(erased.output)
    for system in ("three_layer", "full_context"):
        place = f"blob table of d/{system}/alice (bytes of erased records)"
        assert place in receipt["places_scanned"] and receipt["residue"][place] == 0
    with Ledger(path, read_only=True) as ledger:
        assert ledger.get_blob(PNG_SHA).state == "erased" and ledger.verify().ok
