"""The run explorer end to end in headless Chromium (the system's chromium, driven by chromedriver).

Set LEDGERMEM_UPDATE_SCREENSHOT=1 to write the screenshots the docs show (docs/explorer.png in serving.md,
docs/explorer-live.png in service.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.service.conftest import Served, assert_no_secret, require_binary

ROOT = Path(__file__).resolve().parents[2]
README_SHOT = ROOT / "docs" / "explorer.png"
LIVE_SHOT = ROOT / "docs" / "explorer-live.png"
SIZE = (1500, 1000)
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = require_binary("chromium", "chromium")
    driver_path = require_binary("chromedriver", "chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium look for a driver on the network
    profile = tempfile.mkdtemp(prefix="ledgermem-chromium-")
    options = Options()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={SIZE[0]},{SIZE[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def settle(driver: Any, timeout: float = 30) -> None:
    """Wait until the page has started and no request is in flight."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.execute_script("return document.body.dataset.ready === 'true' "
                                 "&& document.body.dataset.pending === '0'"):
            time.sleep(0.2)  # the slider's debounce
            if driver.execute_script("return document.body.dataset.pending === '0'"):
                return
        time.sleep(0.05)
    raise AssertionError(f"the page did not settle: {driver.find_element('id', 'status').text}")


def texts(driver: Any, selector: str) -> list[str]:
    return [e.text for e in driver.find_elements("css selector", selector)]


def registry(driver: Any) -> dict[str, str]:
    rows = driver.find_elements("css selector", "#layer-registry tbody tr[data-id]")
    return {r.find_elements("tag name", "td")[0].text: r.find_elements("tag name", "td")[1].text for r in rows}


def move_slider(driver: Any, value: int) -> None:
    driver.execute_script("const s = document.getElementById('slider'); s.value = arguments[0];"
                          "s.dispatchEvent(new Event('input'));", value)
    time.sleep(0.2)
    settle(driver)


def test_the_explorer_shows_layers_over_time_and_where_each_gold_value_was(browser: Any, served: Served,
                                                                         tmp_path: Path) -> None:
    ep = "/api/runs/small/episodes/syn-en-000"
    browser.get(f"{served.url}/?run=small&episode=syn-en-000")
    settle(browser)
    timeline = served.get(ep + "/timeline").json()
    assert browser.find_element("id", "position").text == f"seq {timeline['last_seq']} · turn 12"
    now = {r["slot"]: r["value"] for r in served.get(ep + "/values").json()["items"]}
    assert registry(browser) == now
    assert "all invariants hold" in browser.find_element("id", "audit").text

    # The slider: the layers as they were after turn 6.
    early = next(t["last_seq"] for t in timeline["turns"] if t["turn"] == 6)
    move_slider(browser, early)
    assert browser.find_element("id", "position").text == f"seq {early} · turn 6"
    then = {r["slot"]: r["value"] for r in served.get(ep + "/values", seq=early).json()["items"]}
    assert registry(browser) == then and then != now
    window = [r["record_id"] for r in served.get(ep + "/as-of", seq=early).json()["window"]]
    assert [t.split()[0] for t in texts(browser, "#layer-window li[data-id]")] == window
    assert len(texts(browser, "#layer-raw li[data-id]")) == 6

    # The turn axis reaches the same state.
    browser.find_element("css selector", "input[name=axis][value=turn]").click()
    move_slider(browser, 6)
    assert registry(browser) == then

    # The time axis: the slider at turn 6's last recorded time (in milliseconds) shows what the API answers then.
    sixth = next(t for t in timeline["turns"] if t["turn"] == 6)
    browser.find_element("css selector", "input[name=axis][value=at]").click()
    millis = int(datetime.fromisoformat(sixth["last_at"].replace("Z", "+00:00")).timestamp() * 1000)
    move_slider(browser, millis)
    slider_time = datetime.fromtimestamp(millis / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    by_time = served.get(ep + "/as-of", at=slider_time).json()
    assert by_time["at"]["by"] == "at" and by_time["at"]["turn"] >= 5
    assert registry(browser) == {r["slot"]: r["value"] for r in by_time["registry"]}
    assert browser.find_element("id", "position").text.startswith(f"seq {by_time['at']['seq']} · turn ")

    # A probe whose gold value left the prompt: one exact-id call away.
    probes = served.get(ep + "/probes").json()["items"]
    probe = next(p for p in probes if p["where"] == "one_hop")
    detail = served.get(f"{ep}/probes/{probe['probe_id']}").json()
    browser.find_element("css selector", f"#probe-list tr[data-probe='{probe['probe_id']}']").click()
    settle(browser)
    assert texts(browser, "#gold-scale li.on") == ["one hop"]
    listed = [t.split()[0] for t in texts(browser, "#gold-items li")]
    assert listed == [i["id"] for i in detail["gold_location"]["one_hop"]]
    assert len(texts(browser, "#path li")) == len(detail["retrieval_path"])
    assert [s.split()[0] for s in texts(browser, "#path li")] == [s["step"] for s in detail["retrieval_path"]]
    manifest_parts = [r.split()[0] for r in texts(browser, "#manifest tbody tr")]
    assert manifest_parts == list(detail["manifest"]["parts"])
    gold_ids = {i["id"] for i in detail["gold_location"]["one_hop"]}
    highlighted = {e.get_attribute("data-id") for e in browser.find_elements("css selector", "#layers .gold")}
    assert gold_ids & highlighted  # the archived summary (or raw record) holding it is marked in its layer
    prompt_ids = set(detail["manifest"]["item_ids"])
    shown = {e.get_attribute("data-id") for e in browser.find_elements("css selector", "#layers .in-prompt")}
    assert shown and shown <= prompt_ids

    # A probe answered from the prompt.
    direct = next(p for p in probes if p["where"] == "prompt")
    browser.find_element("css selector", f"#probe-list tr[data-probe='{direct['probe_id']}']").click()
    settle(browser)
    assert texts(browser, "#gold-scale li.on") == ["in the prompt"]

    # A probe that called tools: each call with its candidate table, as the API computes it.
    tooled = next(p for p in probes if p["tool_calls"])
    browser.find_element("css selector", f"#probe-list tr[data-probe='{tooled['probe_id']}']").click()
    settle(browser)
    calls = served.get(ep + "/tool-calls", probe=tooled["probe_id"]).json()["items"]
    assert len(calls) == tooled["tool_calls"]
    shown_calls = browser.find_elements("css selector", "#probe-calls .call")
    assert [c.get_attribute("data-seq") for c in shown_calls] == [str(c["seq"]) for c in calls]
    for call, node in zip(calls, shown_calls):
        rows = node.find_elements("css selector", "table.candidates tbody tr[data-id]")
        assert [(r.get_attribute("data-id"), "chosen" in (r.get_attribute("class") or "")) for r in rows] == \
            [(c["item_id"], c["chosen"]) for c in call["candidates"]]
        assert call["rule"] in node.find_element("css selector", ".rule").text
        assert node.find_element("css selector", ".check").text.startswith("✓")

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors

    browser.find_element("css selector", "input[name=axis][value=seq]").click()
    browser.find_element("css selector", f"#probe-list tr[data-probe='{probe['probe_id']}']").click()
    settle(browser)
    assert browser.find_element("id", "position").text.startswith(f"seq {detail['manifest']['seq']} ")
    shot = tmp_path / "explorer.png"
    assert browser.save_screenshot(str(shot))
    check_png(shot, min_size=(SIZE[0] // 2, SIZE[1] // 2))
    if os.environ.get("LEDGERMEM_UPDATE_SCREENSHOT"):
        README_SHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, README_SHOT)


def check_png(path: Path, *, min_size: tuple[int, int]) -> None:
    """A real, decodable PNG of at least `min_size` that is not a blank page."""
    from matplotlib import image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pixels = image.imread(str(path))  # decodes every chunk: a truncated or corrupt file raises
    height, width = pixels.shape[:2]
    assert width >= min_size[0] and height >= min_size[1], (width, height)
    assert float(pixels[..., :3].std()) > 0.05, "the screenshot is (nearly) one colour"


def test_the_screenshot_is_a_valid_image_and_is_linked() -> None:
    assert README_SHOT.is_file(), "docs/explorer.png: run the browser test with LEDGERMEM_UPDATE_SCREENSHOT=1"
    check_png(README_SHOT, min_size=(1000, 600))
    assert "](explorer.png)" in (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    check_png(LIVE_SHOT, min_size=(1000, 600))
    assert "](explorer-live.png)" in (ROOT / "docs" / "service.md").read_text(encoding="utf-8")


# -- the live panel (`ledgermem live serve`) --------------------------------------------------------

def type_into(driver: Any, element_id: str, text: str) -> None:
    box = driver.find_element("id", element_id)
    box.clear()
    box.send_keys(text)


def use_token(driver: Any, secret: str, stream: str) -> None:
    type_into(driver, "live-stream", stream)
    type_into(driver, "live-token", secret)
    driver.find_element("css selector", "#live-token-form button").click()
    settle(driver)


def live_values(driver: Any) -> dict[str, str]:
    rows = driver.find_elements("css selector", "#live-values tbody tr[data-id]")
    return {r.find_elements("tag name", "td")[0].text: r.find_elements("tag name", "td")[1].text for r in rows}


def candidate_rows(driver: Any, tool: str) -> list[tuple[str, bool]]:
    call = driver.find_elements("css selector", f"#live-calls .call[data-tool='{tool}']")[-1]
    return [(r.get_attribute("data-id"), "chosen" in (r.get_attribute("class") or "").split())
            for r in call.find_elements("css selector", "table.candidates tbody tr[data-id]")]


def test_the_live_panel_records_and_asks_with_a_write_token_and_shows_each_candidate_table(
        browser: Any, tmp_path: Path) -> None:
    from tests.service.live_scripted import STREAM, TURNS, live_server

    with live_server(tmp_path / "mem") as live:
        browser.get(live.url + "/")
        settle(browser)
        assert browser.find_element("id", "live-panel").is_displayed()
        assert not browser.find_element("id", "probes").is_displayed()  # no recorded runs here
        assert "Enter a token" in browser.find_element("id", "live-need").text  # without one, it says what is needed

        writer = live.secrets["writer"]
        use_token(browser, writer, STREAM)
        assert browser.find_element("id", "status").text.startswith("404")  # the stream does not exist yet
        for user, agent in TURNS:
            type_into(browser, "live-user", user)
            type_into(browser, "live-agent", agent)
            browser.find_element("id", "live-record").click()
            settle(browser)
        assert live_values(browser) == {"office": "floor 5"}
        values = live.request("writer", "GET", "/api/memory/values", stream=STREAM).json()
        assert live_values(browser) == {v["slot"]: v["value"] for v in values["values"]}
        rendered = live.request("writer", "GET", "/api/memory/render", stream=STREAM).json()
        assert browser.find_element("css selector", "#live-render pre").text.strip() == rendered["text"].strip()

        type_into(browser, "live-question", "Where was my office before it moved?")
        browser.find_element("css selector", "#live-ask-form button").click()
        settle(browser)
        assert "It was floor 3" in browser.find_element("id", "live-answer").text
        calls = live.request("writer", "GET", "/api/memory/tool-calls", stream=STREAM).json()["tool_calls"]
        assert len(calls) == 1 and calls[0]["problems"] == [] and calls[0]["reproduced"] is True
        expected = [(c["item_id"], c["chosen"]) for c in calls[0]["candidates"]]
        assert candidate_rows(browser, "get_predecessor_summary") == expected == [("s0001", True), ("s0002", False)]
        why = browser.find_element("css selector", "#live-calls .call .rule").text
        assert calls[0]["rule"] in why
        if os.environ.get("LEDGERMEM_UPDATE_SCREENSHOT"):
            assert browser.save_screenshot(str(LIVE_SHOT))

        # The memory answers a live turn: its tool call's table is shown, and the memory updates.
        version = values["version"]
        type_into(browser, "live-user", "Where was my office before floor 5?")
        browser.find_element("id", "live-respond").click()
        settle(browser)
        assert "reply: It was floor 3" in browser.find_element("id", "live-answer").text
        assert candidate_rows(browser, "get_predecessor_summary") == expected
        now = live.request("writer", "GET", "/api/memory/values", stream=STREAM).json()
        assert now["version"] > version and now["turn"] == 4
        assert browser.find_element("id", "live-version").text == f"version {now['version']} · turn 4"

        # The token was held in the page's memory only.
        stored = browser.execute_script("return JSON.stringify([Object.entries(localStorage), "
                                        "Object.entries(sessionStorage), location.href, document.cookie])")
        assert_no_secret(writer, stored)

        # A fresh page with a read token reads the stream, and its write is refused with the 403 shown.
        browser.get(live.url + "/")
        settle(browser)
        use_token(browser, live.secrets["reader"], STREAM)
        assert live_values(browser) == {"office": "floor 5"}
        before = live.store.ledger.last_seq
        type_into(browser, "live-user", "My office moved to floor 9.")
        browser.find_element("id", "live-record").click()
        settle(browser)
        refusal = browser.find_element("id", "live-answer").text
        assert refusal.startswith("403") and "write" in refusal, refusal
        assert live.store.ledger.last_seq == before and live_values(browser) == {"office": "floor 5"}

        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
                  and " 403 " not in e["message"] and " 404 " not in e["message"]]
        assert not errors, errors
