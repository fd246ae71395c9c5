"""The Redis hot cache against a real redis-server: the ledger stays the truth whatever happens to Redis."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.metrics import without_timing
from ledgermem.evaluation.runner import RunResult
from ledgermem.projections.events import LlmCalled
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory import Memory
from ledgermem.memory.cache import HotCache
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import PART_ORDER, render
from tests.service.conftest import RedisServer, small_run


def prompts(path: Path) -> list[tuple[str, str]]:
    """Every model call's purpose and prompt hash, in order: what the memory showed the model."""
    with Ledger(path, read_only=True) as ledger:
        return [(r.event.purpose, r.event.prompt_hash) for r in ledger.read(event_types=["llm_called"])
                if isinstance(r.event, LlmCalled)]


def every(what: str, action: Callable[[int], None]) -> Callable[[str, int], None]:
    """A progress callback that calls `action(count)` after each unit of `what` (turn or probe)."""
    seen = [0]

    def progress(kind: str, n: int) -> None:
        if kind == what:
            seen[0] += n
            action(seen[0])

    return progress


def assert_same_results(result: RunResult, baseline: RunResult) -> None:
    assert without_timing(result.metrics) == without_timing(baseline.metrics)
    assert prompts(result.ledger_path) == prompts(baseline.ledger_path)


def assert_cache_matches_ledger(cache: HotCache, path: Path) -> None:
    """Read back through a fresh reader: every stream's entry equals a fold of its ledger."""
    with Ledger(path, read_only=True) as ledger:
        streams = [s for s, _ in ledger.streams() if s.episode_id]
        assert streams
        for stream in streams:
            memory_state = Memory(ledger, stream, "heuristic").state
            entry = cache.read(ledger, stream)
            assert entry.rendered == render(memory_state)
            assert entry.registry == memory_state.current_values()


def test_keys_of_an_entry_are_distinct_and_namespaced() -> None:
    cache = HotCache(None)
    keys = cache.keys(StreamKey("run:1", "three_layer", "ep*?[x]"))
    assert len(set(keys.values())) == len(PART_ORDER) + 3  # the parts, paged-in items, meta and values
    assert all(k.startswith("ledgermem:run%3A1:three_layer:ep%2A%3F%5Bx%5D:") for k in keys.values())


def test_memory_renders_from_the_cache_and_the_entry_follows_the_ledger(redis_server: RedisServer,
                                                                          tmp_path: Path) -> None:
    cache = HotCache.connect(redis_server.url)
    stream = StreamKey("live", "three_layer", "alice")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        memory = Memory(ledger, stream, "heuristic", cache=cache, config=MemoryConfig(personal_data=False))
        memory.add_turn("My office floor is 3F.", "Noted.")
        memory.add_turn("My office floor changed to 7F.", "Noted.")
        assert memory.render() == render(memory.state)
        assert memory.ask("What is my office floor now?").text == "7F"
        meta = redis_server.client().hgetall(cache.keys(stream)["meta"])
        last = list(ledger.read(stream=stream))[-1]
        assert (int(meta["seq"]), meta["hash"]) == (last.seq, last.hash)
        chain = redis_server.client().lrange(cache.keys(stream)["chain"], 0, -1)
        assert len(chain) == 1 and '"s0002"' in chain[0] and "7F" in chain[0]
    assert cache.stats.hits >= 2 and cache.stats.fallbacks == 0 and not cache.stats.rebuilds


def test_a_run_with_redis_gives_the_results_of_a_run_without(redis_server: RedisServer, tmp_path: Path,
                                                             baseline_run: RunResult) -> None:
    cache = HotCache.connect(redis_server.url)
    result = small_run(tmp_path, cache=cache)
    assert_same_results(result, baseline_run)
    assert cache.stats.hits >= 20  # every probe's prompt was rendered from Redis
    assert cache.stats.fallbacks == 0
    assert_cache_matches_ledger(cache, result.ledger_path)


def test_redis_killed_mid_run_and_restarted_gives_identical_metrics(redis_server: RedisServer, tmp_path: Path,
                                                                    baseline_run: RunResult) -> None:
    cache = HotCache.connect(redis_server.url, retry_after=0.0)

    def chaos(turns: int) -> None:
        if turns == 6:
            redis_server.kill()
        elif turns == 16:
            redis_server.start()  # empty: it had no persistence

    result = small_run(tmp_path, cache=cache, progress=every("turn", chaos))
    assert_same_results(result, baseline_run)
    assert cache.stats.fallbacks >= 10  # the turns 7-16 could not be written
    assert not cache.stats.rebuilds  # episode 2 was written whole again after the restart, before any read
    assert_cache_matches_ledger(cache, result.ledger_path)
    assert cache.stats.rebuilds["missing"] == 1  # episode 1's entry died with the server and was rebuilt


def test_redis_killed_for_good_mid_run_still_gives_identical_metrics(redis_server: RedisServer, tmp_path: Path,
                                                                     baseline_run: RunResult) -> None:
    cache = HotCache.connect(redis_server.url, retry_after=0.0)
    result = small_run(tmp_path, cache=cache, progress=every("turn", lambda n: n == 3 and redis_server.kill()))
    assert_same_results(result, baseline_run)
    assert cache.stats.fallbacks > 20 and "Connection" in cache.stats.last_error


def test_flushed_mid_run_is_rebuilt(redis_server: RedisServer, tmp_path: Path, baseline_run: RunResult) -> None:
    cache = HotCache.connect(redis_server.url)
    client = redis_server.client()
    result = small_run(tmp_path, cache=cache, progress=every("probe", lambda n: n % 3 == 0 and client.flushall()))
    assert_same_results(result, baseline_run)
    assert cache.stats.rebuilds["missing"] >= 3
    assert_cache_matches_ledger(cache, result.ledger_path)


def corruptions(server: RedisServer, cache: HotCache, run_id: str) -> Callable[[int], None]:
    """After probe n, damage the entry of the episode being probed, a different way each time."""
    client, raw = server.client(), server.client(decode=False)
    saved: dict[str, dict[str, bytes]] = {}

    def damage(n: int) -> None:
        for episode in ("syn-en-000", "syn-zh-001"):
            keys = cache.keys(StreamKey(run_id, "three_layer", episode))
            if not client.exists(keys["meta"]):
                continue
            older = saved.get(episode)
            saved[episode] = {k: raw.dump(k) for k in keys.values() if raw.exists(k)}
            match n % 5:
                case 0:  # a rendered summary rewritten, digest left as it was
                    if client.llen(keys["chain"]):
                        client.lset(keys["chain"], 0, '["s0001", "- s0001 (turn 1) the value is WRONG", 9]')
                case 1:  # a list replaced by a string: WRONGTYPE on read
                    client.set(keys["registry"], "garbage")
                case 2:  # an intact entry of an earlier seq put back: a write that never arrived
                    if older:
                        client.delete(*keys.values())
                        for key, blob in older.items():
                            raw.restore(key, 0, blob, replace=True)
                case 3:  # the registry data gone, the rest intact
                    client.delete(keys["values"])
                case 4:  # not JSON at all
                    client.rpush(keys["window"], "{not json")

    return damage


def test_corrupted_keys_are_detected_and_rebuilt(redis_server: RedisServer, tmp_path: Path,
                                                 baseline_run: RunResult) -> None:
    cache = HotCache.connect(redis_server.url)
    damage = corruptions(redis_server, cache, "small")
    result = small_run(tmp_path, cache=cache, progress=every("probe", damage))
    assert_same_results(result, baseline_run)
    assert cache.stats.rebuilds["corrupt"] >= 4 and cache.stats.rebuilds["behind"] >= 1
    assert_cache_matches_ledger(cache, result.ledger_path)


def test_control_a_cache_that_trusts_its_content_lets_corruption_into_the_prompt(
        redis_server: RedisServer, tmp_path: Path, baseline_run: RunResult, monkeypatch: pytest.MonkeyPatch) -> None:
    """Must-fail control: without the digest check the same damage reaches the model."""
    monkeypatch.setattr("ledgermem.memory.cache._digest", lambda *args: "trusted")
    cache = HotCache.connect(redis_server.url)
    client = redis_server.client()

    def damage(n: int) -> None:
        keys = cache.keys(StreamKey("small", "three_layer", "syn-en-000"))
        if client.llen(keys["chain"]):
            client.lset(keys["chain"], 0, '["s0001", "- s0001 (turn 1) the value is WRONG", 9]')

    result = small_run(tmp_path, cache=cache, progress=every("probe", damage))
    assert prompts(result.ledger_path) != prompts(baseline_run.ledger_path)


def test_redis_down_from_the_start_counts_fallbacks(tmp_path: Path, baseline_run: RunResult) -> None:
    from tests.service.conftest import free_port

    cache = HotCache.connect(f"redis://127.0.0.1:{free_port()}/0", retry_after=0.0)
    result = small_run(tmp_path, cache=cache)
    assert_same_results(result, baseline_run)
    assert cache.stats.hits == 0 and cache.stats.writes == 0
    assert cache.stats.fallbacks > 40  # every write and every read


def test_without_the_redis_package_the_memory_works_from_the_ledger(
        tmp_path: Path, baseline_run: RunResult, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # `import redis` raises ImportError
    cache = HotCache.connect("redis://127.0.0.1:6379/0")
    assert not cache.available and "pip install -e '.[redis]'" in cache.stats.last_error
    result = small_run(tmp_path, cache=cache)
    assert_same_results(result, baseline_run)
    assert cache.stats.fallbacks > 40 and cache.stats.hits == 0


def test_a_bad_url_is_a_clear_error() -> None:
    pytest.importorskip("redis")
    from ledgermem.memory.errors import ConfigError

    with pytest.raises(ConfigError, match="not a Redis URL.*redis://127.0.0.1:6379/0"):
        HotCache.connect("http://example.org")


def test_writes_are_idempotent_and_never_go_back(redis_server: RedisServer, tmp_path: Path) -> None:
    cache = HotCache.connect(redis_server.url)
    client = redis_server.client()
    stream = StreamKey("r", "three_layer", "e")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        memory = Memory(ledger, stream, "heuristic", cache=cache, config=MemoryConfig(personal_data=False))
        for n in range(6):
            memory.add_turn(f"My desk number is {n}.", "Noted.")
        keys = cache.keys(stream)
        lengths = {k: client.llen(keys[k]) for k in PART_ORDER}
        last = list(ledger.read(stream=stream))[-1]
        for _ in range(3):  # the same row rewritten: a retry after a lost acknowledgement
            cache.store(stream, memory.state, last)
        assert {k: client.llen(keys[k]) for k in PART_ORDER} == lengths
        assert lengths["window"] == 4
        # A rebuild from an older view of the ledger never overwrites a newer entry ...
        cache._rebuild(stream, (1, "old"), render(memory.state), {})
        assert cache.stats.skipped_writes == 1
        assert int(client.hget(keys["meta"], "seq")) == last.seq
        # ... but a corrupt one is overwritten whatever seq it claims.
        client.hset(keys["meta"], "seq", str(last.seq + 1000))
        assert memory.render() == render(memory.state)
        assert cache.stats.rebuilds["corrupt"] == 1 and cache.stats.skipped_writes == 1
        assert int(client.hget(keys["meta"], "seq")) == last.seq


def test_cleanup_scans_and_unlinks_only_its_namespace(redis_server: RedisServer, tmp_path: Path) -> None:
    client = redis_server.client()
    with pytest.raises(Exception, match="unknown command"):
        client.keys("*")  # the server refuses KEYS: a cleanup that used it would fail
    cache = HotCache.connect(redis_server.url)
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for run_id in ("a", "a:b", "ab"):
            for episode in ("e1", "e2"):
                memory = Memory(ledger, StreamKey(run_id, "three_layer", episode), "heuristic", cache=cache,
                                config=MemoryConfig(personal_data=False))
                memory.add_turn("My team size is 6.", "Noted.")
    client.set("someone-else:key", "kept")
    before = set(client.scan_iter(count=1000))
    removed = cache.clear("a")
    after = set(client.scan_iter(count=1000))
    assert removed == len(before - after) > 0
    assert all(k.startswith("ledgermem:a:") for k in before - after)
    assert any(k.startswith("ledgermem:a%3Ab:") for k in after) and any(k.startswith("ledgermem:ab:") for k in after)
    assert cache.clear("a:b", "three_layer", "e1") > 0
    assert cache.clear() > 0
    assert set(client.scan_iter(count=1000)) == {"someone-else:key"}
    assert cache.stats.fallbacks == 0


def test_a_reader_without_the_state_folds_the_ledger_once(redis_server: RedisServer, tmp_path: Path) -> None:
    writer = HotCache.connect(redis_server.url)
    stream = StreamKey("r", "three_layer", "e")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        memory = Memory(ledger, stream, "heuristic", cache=writer, config=MemoryConfig(personal_data=False))
        memory.add_turn("My office floor is 3F.", "Noted.")
        redis_server.client().flushall()
        reader = HotCache.connect(redis_server.url)
        first = reader.read(ledger, stream)
        second = reader.read(ledger, stream)
        assert first == second and first.rendered == render(memory.state)
        assert reader.stats.rebuilds["missing"] == 1 and reader.stats.hits == 1


def test_erasure_receipt_scans_the_cache(redis_server: RedisServer, tmp_path: Path) -> None:
    cache = HotCache.connect(redis_server.url)
    client = redis_server.client()
    stream = StreamKey("live", "three_layer", "alice")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        memory = Memory(ledger, stream, "heuristic", cache=cache)
        memory.add_turn("My home city is Lisbon.", "Noted.")
        memory.add_turn("My office floor is 3F.", "Noted.")
        assert any("Lisbon" in item for item in client.lrange(cache.keys(stream)["registry"], 0, -1))
        receipt = memory.erase(legal_basis="test", slot="home city")
        assert receipt.clean, receipt.residue
        assert f"cache {cache.namespace(stream)}" in receipt.places_scanned
        cached = [v for k in client.scan_iter(match=cache.namespace(stream) + ":*")
                  for v in (client.lrange(k, 0, -1) if client.type(k) == "list" else client.hvals(k))]
        assert cached and not any("Lisbon" in v for v in cached)
        client.config_set("save", "3600 1")  # persistence on: old values may sit in a dump file
        receipt = memory.erase(legal_basis="test", slot="office floor")
        assert not receipt.clean and receipt.residue["cache persistence (RDB/AOF files)"] == 1


def test_cli_run_with_redis_prints_the_cache_line_and_the_same_metrics(redis_server: RedisServer, tmp_path: Path,
                                                                       baseline_run: RunResult) -> None:
    args = ["run", "--turns", "12", "--episodes", "2", "--systems", "three_layer", "--json", "--run-id", "small",
            "--runs-dir", str(tmp_path), "--redis", redis_server.url]
    cached = CliRunner().invoke(cli, args)
    assert cached.exit_code == 0, cached.output
    assert without_timing(json.loads(cached.stdout)["metrics"]) == without_timing(baseline_run.metrics)
    assert prompts(tmp_path / "small" / "ledger.duckdb") == prompts(baseline_run.ledger_path)
    assert "cache: " in cached.stderr and "0 fallbacks to the ledger" in cached.stderr


def test_cli_erase_rewrites_and_scans_the_runs_cache(redis_server: RedisServer, tmp_path: Path) -> None:
    from ledgermem.evaluation.runner import RunOptions, run
    from ledgermem.datasets.synthetic import generate_synthetic
    from ledgermem.memory.erasure import mentions

    cache = HotCache.connect(redis_server.url)
    opts = RunOptions(run_id="sealed", runs_dir=tmp_path, memory=MemoryConfig(personal_data=True), cache=cache)
    data = generate_synthetic(n_episodes=1, turns=12, seed=7)
    slot, history = next((s, h) for s, h in data.episodes[0].facts if len(h) > 1)  # a slot that changed
    values = {v for _, v in history}
    run(data, opts)
    client = redis_server.client()
    stream = StreamKey("sealed", "three_layer", "syn-en-000")

    def cached_texts() -> list[str]:
        return [v for k in client.scan_iter(match=cache.namespace(stream) + ":*")
                for v in (client.lrange(k, 0, -1) if client.type(k) == "list" else client.hvals(k))]

    assert any(mentions(t, {history[-1][1]}) for t in cached_texts())
    result = CliRunner().invoke(cli, ["erase", "sealed", "--episode", "syn-en-000", "--slot", slot,
                                      "--legal-basis", "test", "--runs-dir", str(tmp_path), "--json",
                                      "--redis", redis_server.url])
    assert result.exit_code == 0, (result.output, result.exc_info)
    receipt = json.loads(result.stdout)
    assert receipt["clean"] and f"cache {cache.namespace(stream)}" in receipt["places_scanned"]
    assert cached_texts() and not any(mentions(t, values) for t in cached_texts())


def test_an_entry_written_by_another_renderer_is_rebuilt(redis_server: RedisServer, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """After an upgrade that renders differently, an intact entry of the old renderer at the same seq is not served."""
    from dataclasses import replace

    cache = HotCache.connect(redis_server.url)
    stream = StreamKey("r", "three_layer", "e")
    with Ledger(tmp_path / "l.duckdb") as ledger:
        memory = Memory(ledger, stream, "heuristic", cache=cache, config=MemoryConfig(personal_data=False))
        memory.add_turn("My office floor is 3F.", "Noted.")
        fresh = render(memory.state)
        registry = replace(fresh.part("registry"), items=tuple(replace(i, text=i.text + " (old format)")
                                                                for i in fresh.part("registry").items))
        other = replace(fresh, parts=tuple(registry if p.name == "registry" else p for p in fresh.parts))
        last = list(ledger.read(stream=stream))[-1]
        position = (last.seq, last.hash)

        # Control: written by this renderer, the other text would be served (its digest is valid).
        cache._write(stream, position, other, memory.state.current_values())
        assert memory.render() == other
        # Written by another renderer, the same entry is rebuilt.
        with monkeypatch.context() as m:
            m.setattr("ledgermem.memory.cache.renderer", lambda: "an-older-renderer")
            cache._write(stream, position, other, memory.state.current_values())
        assert memory.render() == fresh
        assert cache.stats.rebuilds["format"] == 1
