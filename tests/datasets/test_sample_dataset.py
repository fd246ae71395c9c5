"""The bundled sample dataset: seed format, consistent gold, installed with the package, runnable by name."""

from __future__ import annotations

import csv
import fnmatch
import json
import os
import sys
from pathlib import Path

from click.testing import Result

from tests.invoke import invoke_in
from ledgermem.datasets.loaders import load_dataset
from ledgermem.datasets.samples import BUNDLED, DATA, resolve_dataset

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = BUNDLED["sample"]


def invoke(*args: str, cwd: Path) -> Result:
    return invoke_in(cwd, *args)


def test_the_sample_loads_as_a_seed_dataset_in_both_languages() -> None:
    ds = load_dataset(SAMPLE)
    assert ds.name == "sample"
    assert 3 <= len(ds.episodes) <= 4
    langs = {e.lang for e in ds.episodes}
    assert langs == {"en", "zh"}
    assert all(e.probes and e.facts for e in ds.episodes)
    types = {p.type for e in ds.episodes for p in e.probes}
    assert {"current_fact", "history_fact"} <= types
    # Attributes that change and, as a control, attributes that never do, in both languages.
    changed = {e.lang: sum(len(h) > 1 for _, h in e.facts) for e in ds.episodes}
    steady = {e.lang for e in ds.episodes for _, h in e.facts if len(h) == 1}
    assert all(n >= 2 for n in changed.values()) and steady == {"en", "zh"}


def gold_problems(document: dict) -> list[str]:
    """Probes whose gold is not what the episode's own `facts` say (the newest value, or the one before it)."""
    problems = []
    for episode in document["episodes"]:
        facts = {slot: [value for _, value in sorted(history, key=lambda h: int(h[0]))]
                 for slot, history in episode["facts"].items()}
        for probe in episode["probes"]:
            values = facts.get(probe["fact_key"])
            if not values:
                problems.append(f"{episode['episode_id']}: {probe['fact_key']} has no facts")
                continue
            want = values[-1] if probe["type"] == "current_fact" else values[-2] if len(values) > 1 else None
            if probe["answer"] != want:
                problems.append(f"{episode['episode_id']}: {probe['question']} gold {probe['answer']!r}, facts say {want!r}")
            for turn, value in episode["facts"][probe["fact_key"]]:
                user = episode["dialogues"][int(turn)]
                text = user["user"] if isinstance(user, dict) else user[0]
                if value not in text:
                    problems.append(f"{episode['episode_id']}: turn {turn} does not state {value!r}")
    return problems


def test_every_gold_answer_agrees_with_the_facts_and_the_dialogue() -> None:
    assert gold_problems(json.loads(SAMPLE.read_text(encoding="utf-8"))) == []


def test_the_gold_check_catches_a_wrong_gold() -> None:
    """Must-fail control: a history probe answered with the current value, and a fact at the wrong turn."""
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    episode = document["episodes"][0]
    history = next(p for p in episode["probes"] if p["type"] == "history_fact")
    history["answer"] = next(p for p in episode["probes"] if p["type"] == "current_fact"
                             and p["fact_key"] == history["fact_key"])["answer"]
    slot = history["fact_key"]
    episode["facts"][slot][0][0] = len(episode["dialogues"]) - 1
    problems = gold_problems(document)
    assert any("gold" in p for p in problems) and any("does not state" in p for p in problems)


def package_data_patterns(package: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib

        project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        return list(project["tool"]["setuptools"]["package-data"][package])
    raise AssertionError("reading pyproject.toml needs Python 3.11")  # pragma: no cover


def shipped(relative: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)


def test_the_sample_is_package_data_of_datasets() -> None:
    relative = SAMPLE.relative_to(ROOT / "datasets").as_posix()
    assert SAMPLE.parent == DATA and SAMPLE.is_file()
    patterns = package_data_patterns("ledgermem.datasets")
    assert shipped(relative, patterns), f"{relative} is not in ledgermem.datasets' package-data"
    # Control: without the data glob the same check refuses it.
    assert not shipped(relative, [p for p in patterns if not p.startswith("data/")])


def test_the_name_resolves_to_the_bundled_file_unless_a_file_of_that_name_exists(tmp_path: Path) -> None:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert resolve_dataset("sample") == str(SAMPLE)
        assert resolve_dataset("other.json") == "other.json"
        assert resolve_dataset(None) is None
        (tmp_path / "sample").write_text("{}", encoding="utf-8")
        assert resolve_dataset("sample") == "sample"
    finally:
        os.chdir(old)


def test_inspect_recognises_the_sample(tmp_path: Path) -> None:
    result = invoke("run", "--inspect", "sample", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert ": seed" in result.output.splitlines()[0]
    assert "episodes 4, turns 30, probes 18" in result.output
    assert "current_fact 10, history_fact 8" in result.output


def test_the_sample_runs_offline_and_three_layer_answers_it(tmp_path: Path) -> None:
    result = invoke("run", "--dataset", "sample", "--run-id", "sample", "--runs-dir", str(tmp_path / "runs"),
                    "--systems", "three_layer,memgpt_style", "--json", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)["metrics"]
    assert metrics["three_layer"]["Current_Fact_Acc"] >= 0.875
    assert metrics["three_layer"]["History_Fact_Acc"] >= 0.875
    # The destructive baseline cannot fetch a summary by id: the sample still tells the systems apart.
    assert metrics["memgpt_style"]["Memory_Point_Acc"] < metrics["three_layer"]["Memory_Point_Acc"]
    with (tmp_path / "runs" / "sample" / "probe_predictions.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["episode_id"] for r in rows} == {e.episode_id for e in load_dataset(SAMPLE).episodes}
