"""A LoCoMo image round-trips as a block: load -> run -> ledger -> tool, caption in the window."""

from __future__ import annotations

import json
from pathlib import Path

from ledgermem.datasets.model import DatasetError, dataset_to_json, parse_seed
from ledgermem.datasets.loaders import load_dataset
from ledgermem.datasets.loaders.locomo import image_mime
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

FIXTURES = Path(__file__).parent.parent / "fixtures" / "datasets"
LOCOMO = str(FIXTURES / "locomo10_sample.json")
RACE = ("image/jpeg", "https://example.org/race.jpg", "a photo of runners crossing a finish line")


def test_a_locomo_image_round_trips_as_a_block(tmp_path: Path) -> None:
    ds = load_dataset(LOCOMO)
    (block,) = ds.episodes[0].turns[3].blocks
    assert (block.mime, block.source, block.caption, block.data) == (*RACE, None)
    result = run(ds, RunOptions(run_id="x", runs_dir=tmp_path, systems=("three_layer", "full_context"),
                                memory=MemoryConfig(tokenizer=ESTIMATOR)))
    with Ledger(result.ledger_path) as ledger:
        refs = {(r.stream.system, r.event.record_id): r.event.blocks  # type: ignore[attr-defined]
                for r in ledger.read(event_types=["turn_recorded"]) if r.event.blocks}  # type: ignore[attr-defined]
        assert ledger.verify().ok
    expected = {"sha256": None, "size": None, "mime": RACE[0], "source": RACE[1], "caption": RACE[2], "side": "user"}
    for system in ("three_layer", "full_context"):  # every system is given the same block
        assert refs[(system, "r0004")] == (expected,)
    assert len(refs) == 2 * 2  # the race photo and the store screenshot, in each system

    memory = Memory(Ledger(result.ledger_path), StreamKey("x", "three_layer", ds.episodes[0].episode_id))
    got = json.loads(memory.tool("get_block", {"block_id": "r0004#1"}).text)
    assert (got["mime"], got["source"], got["caption"], got["sha256"]) == (*RACE, None)
    assert got["bytes"] == "absent" and got["data_base64"] is None  # LoCoMo gives the URL, not the file
    listed = memory.tool("get_raw_record", {"reference_id": "r0004"}).text
    assert f"BLOCK r0004#1 (user) image/jpeg; no bytes stored; source {RACE[1]}: {RACE[2]}" in listed
    assert "USER: Melanie: Great! It made me realise self-care is important.\n" in listed
    assert not memory.tool("get_block", {"block_id": "r0004#2"}).ok
    memory.ledger.close()


def test_the_window_shows_the_caption_as_the_text_did_before(tmp_path: Path) -> None:
    ds = load_dataset(LOCOMO)
    memory = Memory(Ledger(tmp_path / "l.duckdb"), StreamKey("x", "three_layer", "e"),
                    config=MemoryConfig(tokenizer=ESTIMATOR, window_turns=8))
    for t in ds.episodes[0].turns[:4]:
        memory.add_turn(t.user, t.agent, occurred_at=t.occurred_at, blocks=t.blocks)
    assert ("USER: Melanie: Great! It made me realise self-care is important. "
            "[image: a photo of runners crossing a finish line] | AGENT:") in memory.render().text
    memory.erase(legal_basis="test", record_id="r0004")
    got = json.loads(memory.tool("get_block", {"block_id": "r0004#1"}).text)
    assert got["caption"] == ERASED and got["source"] == ERASED and got["mime"] == RACE[0]
    assert "runners" not in memory.render().text
    memory.ledger.close()


def test_locomo_blocks_survive_the_seed_json_round_trip() -> None:
    ds = load_dataset(LOCOMO)
    again = parse_seed("again.json", dataset_to_json(ds))
    assert again.episodes[0].turns[3].blocks == ds.episodes[0].turns[3].blocks
    assert again.content_hash() == ds.content_hash()


def test_image_mime_from_the_url() -> None:
    assert image_mime("https://x.org/a.PNG?size=2") == "image/png"
    assert image_mime("https://x.org/photo") == "image/*"
    assert image_mime("https://x.org/a.txt") == "image/*"


def _local_copy(tmp_path: Path, url: str) -> Path:
    doc = json.loads((FIXTURES / "locomo_single_conv.json").read_text(encoding="utf-8"))
    text = json.dumps(doc).replace("https://example.org/trail.jpg", url)
    folder = tmp_path / "data"
    folder.mkdir(parents=True)
    (folder / "conv.json").write_text(text, encoding="utf-8")
    return folder / "conv.json"


def test_a_locomo_image_beside_the_file_is_loaded_with_its_bytes(tmp_path: Path) -> None:
    path = _local_copy(tmp_path, "img/trail.png")
    (path.parent / "img").mkdir()
    (path.parent / "img" / "trail.png").write_bytes(b"\x89PNG-trail")
    (block,) = load_dataset(str(path)).episodes[0].turns[2].blocks
    assert (block.mime, block.source, block.data) == ("image/png", "img/trail.png", b"\x89PNG-trail")
    assert block.caption == "a photo of a mountain trail with snow"
    (missing,) = load_dataset(str(_local_copy(tmp_path / "b", "img/none.png"))).episodes[0].turns[2].blocks
    assert missing.data is None and missing.source == "img/none.png"  # a reference all the same


def test_a_locomo_image_path_may_not_leave_the_dataset_folder(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(b"x")
    path = _local_copy(tmp_path, "../secret.png")
    try:
        load_dataset(str(path))
    except DatasetError as exc:
        assert "leaves the dataset's folder" in str(exc) and "session_2[0]" in str(exc)
    else:
        raise AssertionError("a path out of the dataset's folder was read")
