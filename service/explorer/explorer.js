// The run explorer: an episode's layers at any point of its history, and every probe with its
// context manifest, retrieval path, tool calls with their candidate tables, and where its gold value
// was. Reads the audit API only; served by `ledgermem live serve`, the page is the live panel (live.js).
// Every value from a run is untrusted text: it is put in the page with textContent, never as HTML.
"use strict";

const $ = (selector) => document.querySelector(selector);
const enc = encodeURIComponent;
const state = { run: null, system: null, episode: null, timeline: null, probe: null, rawOffset: 0,
                layersAsked: 0, prompt: new Set(), gold: new Set(), at: null };
let token = sessionStorage.getItem("ledgermem-token") || "";
let pending = 0;

function busy(delta) {
  pending += delta;
  document.body.dataset.pending = String(pending);
}

function status(text, isError = false) {
  const bar = $("#status");
  bar.textContent = text;
  bar.classList.toggle("error", isError);
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

async function api(path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  busy(+1);
  try {
    const response = await fetch(url, { headers: token ? { Authorization: "Bearer " + token } : {} });
    const body = await response.json();
    if (response.status === 401) $("#token-form").hidden = false;
    if (!response.ok) throw new Error(`${response.status} ${body.error || response.statusText}`);
    return body;
  } finally {
    busy(-1);
  }
}

function episodePath(what) {
  return `/api/runs/${enc(state.run)}/episodes/${enc(state.episode)}/${what}`;
}

function facts(list) {
  return list && list.length ? " [FACTS: " + list.map((f) => `${f.slot}=${f.value}`).join("; ") + "]" : "";
}

// -- choosing a run, system and episode ----------------------------------------------------

function fillSelect(select, values, chosen) {
  select.replaceChildren(...values.map((v) => el("option", { value: v, selected: v === chosen }, v)));
  if (!values.includes(chosen) && values.length) select.value = values[0];
  return select.value;
}

async function loadRuns(wanted) {
  const runs = await api("/api/runs", { limit: 1000 });
  state.run = fillSelect($("#run"), runs.items.map((r) => r.run_id), wanted.run);
  await loadEpisodes(wanted);
}

async function loadEpisodes(wanted) {
  const [run, episodes] = await Promise.all([
    api(`/api/runs/${enc(state.run)}`),
    api(`/api/runs/${enc(state.run)}/episodes`, { limit: 1000 }),
  ]);
  $("#live").hidden = !run.live;
  const systems = [...new Set(episodes.items.map((e) => e.system))];
  state.system = fillSelect($("#system"), systems, wanted.system || (systems.includes("three_layer") ? "three_layer" : null));
  const ids = episodes.items.filter((e) => e.system === state.system).map((e) => e.episode_id);
  state.episode = fillSelect($("#episode"), ids, wanted.episode);
  loadAudit();
  await loadEpisode(wanted);
}

async function loadAudit() {
  const badge = $("#audit");
  badge.className = "badge";
  badge.textContent = "audit …";
  try {
    const report = await api(`/api/runs/${enc(state.run)}/audit`);
    const failed = report.checks.filter((c) => !c.ok).map((c) => c.invariant);
    badge.classList.add(report.ok ? "ok" : "bad");
    badge.textContent = report.ok ? "audit: all invariants hold" : "audit: VIOLATED " + failed.join(", ");
  } catch (error) {
    badge.textContent = "audit: " + error.message;
  }
}

// -- the time axis ----------------------------------------------------------------------------

function axis() {
  return document.querySelector("input[name=axis]:checked").value;
}

// Where the slider stands on the chosen axis: a seq, a turn, or a recorded time in milliseconds (the time axis).
function positionOn(at) {
  if (!at) return null;
  if (axis() === "at") return at.at ? Date.parse(at.at) : null;
  return axis() === "seq" ? at.seq : at.turn;
}

function bounds() {
  const t = state.timeline;
  const turns = t.turns.map((x) => x.turn);
  if (axis() === "at") return t.first_at ? [Date.parse(t.first_at), Date.parse(t.last_at)] : [0, 0];
  return axis() === "seq" ? [t.first_seq, t.last_seq] : [Math.min(...turns, 0), Math.max(...turns, 0)];
}

// The slider's value as a parameter of the layers question: `at` goes as an ISO 8601 time in UTC.
function sliderParam() {
  const value = Number($("#slider").value);
  return axis() === "at" ? new Date(value).toISOString() : String(value);
}

function setupSlider(position) {
  const t = state.timeline;
  const slider = $("#slider");
  const [min, max] = bounds();
  slider.min = min;
  slider.max = max;
  slider.value = position !== undefined && position !== null ? Math.min(Math.max(position, min), max) : max;
  const marks = $("#marks");
  marks.replaceChildren();
  for (const p of t.probes) {
    const at = axis() === "at" ? Date.parse(p.first_at) : axis() === "seq" ? p.first_seq : p.turn;
    const left = max > min ? ((at - min) / (max - min)) * 100 : 0;
    const mark = el("span", { title: p.probe_id });
    mark.style.left = `${left}%`; // through the CSSOM: the page's CSP allows no inline style attributes
    marks.append(mark);
  }
}

async function loadEpisode(wanted = {}) {
  state.timeline = await api(episodePath("timeline"), { system: state.system });
  if (wanted.turn !== undefined && wanted.turn !== null) document.querySelector("input[value=turn]").checked = true;
  if (wanted.at) document.querySelector("input[value=at]").checked = true;
  setupSlider(axis() === "at" ? (wanted.at ? Date.parse(wanted.at) : null) : axis() === "seq" ? wanted.seq : wanted.turn);
  await Promise.all([loadProbes(wanted.probe), loadLayers()]);
}

let timer = null;
function sliderMoved() {
  $("#position").textContent = `${axis()} ${sliderParam()} …`;
  clearTimeout(timer);
  timer = setTimeout(loadLayers, 120);
}

function remember() {
  const params = new URLSearchParams({ run: state.run, system: state.system, episode: state.episode });
  params.set(axis(), sliderParam());
  if (state.probe) params.set("probe", state.probe);
  history.replaceState(null, "", "?" + params.toString());
}

// -- the layers -------------------------------------------------------------------------------

function fill(layer, rows, idOf, textOf) {
  const list = $(`#layer-${layer} ol`);
  list.replaceChildren();
  if (!rows.length) list.append(el("li", { class: "empty" }, "empty"));
  for (const row of rows) {
    const id = idOf(row);
    list.append(el("li", { "data-id": id }, el("span", { class: "id" }, id), " ", textOf(row)));
  }
}

async function loadLayers(append = false) {
  const asked = ++state.layersAsked;
  if (!append) state.rawOffset = 0;
  const params = { system: state.system, limit: 50, offset: state.rawOffset };
  params[axis()] = sliderParam();
  try {
    const layers = await api(episodePath("layers"), params);
    if (asked !== state.layersAsked) return; // the slider moved on: a newer answer is coming
    state.at = layers.at;
    $("#position").textContent = `seq ${layers.at.seq} · turn ${layers.at.turn}${layers.at.at ? " · " + layers.at.at : ""}`;
    $("#layer-pinned").hidden = !layers.pinned; // a run recorded before pins existed has no such layer
    fill("pinned", layers.pinned || [], (r) => r.pin_id, (r) => `${r.kind}: ${r.text}`);
    fill("window", layers.window, (r) => r.record_id, (r) => `turn ${r.turn} USER: ${r.user_text} | AGENT: ${r.agent_text}`);
    const body = $("#layer-registry tbody");
    body.replaceChildren(...layers.registry.map((r) => el("tr", { "data-id": "slot:" + r.slot },
      el("td", {}, r.slot), el("td", {}, r.erased ? "[erased]" : r.value), el("td", { class: "id" }, r.summary_id || ""))));
    if (!layers.registry.length) body.append(el("tr", {}, el("td", { class: "empty", colSpan: 3 }, "empty")));
    fill("index", layers.index, (r) => r.index_id, (r) => `${r.title} (members ${r.members.join(", ")})`);
    fill("chain", layers.chain, (r) => r.summary_id, (r) => `turn ${r.created_turn}: ${r.text}${facts(r.facts)}`);
    fill("indexed", layers.indexed, (r) => r.summary_id, (r) => `under ${r.index_id}: ${r.text}${facts(r.facts)}`);
    fill("archive", layers.archive, (r) => r.summary_id, (r) =>
      `(${r.archive_reason || "archived"}${r.superseded_by && r.superseded_by.length ? " → " + r.superseded_by.join(", ") : ""}) ${r.text}${facts(r.facts)}`);
    const raw = $("#layer-raw ol");
    if (!append) raw.replaceChildren();
    for (const r of layers.raw.items) {
      raw.append(el("li", { "data-id": r.record_id }, el("span", { class: "id" }, r.record_id), " ",
        `turn ${r.turn}${r.occurred_at ? " @" + r.occurred_at : ""} USER: ${r.user_text} | AGENT: ${r.agent_text}`));
    }
    if (!raw.children.length) raw.append(el("li", { class: "empty" }, "empty"));
    $("#raw-count").textContent = `${raw.querySelectorAll("li[data-id]").length} of ${layers.raw.total}`;
    state.rawOffset = layers.raw.next_offset ?? state.rawOffset;
    $("#raw-more").hidden = layers.raw.next_offset === null;
    highlight();
    remember();
    status(`${state.run} / ${state.system} / ${state.episode}: layers as of seq ${layers.at.seq}, turn ${layers.at.turn}`);
  } catch (error) {
    status(error.message, true);
  }
}

function highlight() {
  for (const node of document.querySelectorAll("#layers [data-id]")) {
    node.classList.toggle("in-prompt", state.prompt.has(node.dataset.id));
    node.classList.toggle("gold", state.gold.has(node.dataset.id));
  }
}

// -- the probes -------------------------------------------------------------------------------

async function loadProbes(wanted) {
  const probes = await api(episodePath("probes"), { system: state.system, limit: 1000 });
  const body = $("#probe-list tbody");
  body.replaceChildren();
  for (const p of probes.items) {
    const row = el("tr", { "data-probe": p.probe_id },
      el("td", {}, el("span", { class: "id" }, p.probe_id)), el("td", {}, p.type),
      el("td", { class: p.correct ? "correct" : "wrong" }, p.answer || "(no answer)"), el("td", {}, p.where || "—"));
    row.addEventListener("click", () => selectProbe(p.probe_id));
    body.append(row);
  }
  if (!probes.items.length) body.append(el("tr", {}, el("td", { class: "empty", colSpan: 4 }, "no probes")));
  if (wanted && probes.items.some((p) => p.probe_id === wanted)) await selectProbe(wanted, false);
}

const WHERE = { prompt: "in the rendered prompt", one_hop: "one exact-id tool call away",
                raw_only: "only in raw turns this system can no longer read", gone: "nowhere" };

async function selectProbe(id, move = true) {
  try {
    const p = await api(episodePath("probes/" + enc(id)), { system: state.system });
    state.probe = id;
    for (const row of document.querySelectorAll("#probe-list tbody tr")) row.classList.toggle("selected", row.dataset.probe === id);
    $("#probe-detail").hidden = false;
    const o = p.outcome || {};
    $("#probe-title").textContent = `${p.probe_id} · ${p.type}${p.slot ? " · " + p.slot : ""}`;
    $("#probe-question").textContent = `Q: ${p.question}  A: ${o.answer ?? "(not answered yet)"}  ${o.correct ? "✓ correct" : "✗ wrong"} (gold ${p.gold})`;
    $("#gold-value").textContent = p.gold;
    const where = p.gold_location.where;
    for (const li of document.querySelectorAll("#gold-scale li")) li.classList.toggle("on", li.dataset.where === where);
    $("#gold-where").textContent = where ? `${where}: the gold value was ${WHERE[where]} when the prompt was rendered` : "not judged yet";
    const items = $("#gold-items");
    items.replaceChildren();
    for (const i of p.gold_location.in_prompt || []) items.append(el("li", { class: "in-prompt" }, el("span", { class: "id" }, i.id), " ", `in the prompt (${i.part}): ${i.text}`));
    for (const i of p.gold_location.one_hop || []) items.append(el("li", {}, el("span", { class: "id" }, i.id), " ", `${i.layer}, reachable with ${i.tool}`));
    for (const i of p.gold_location.raw_only || []) items.append(el("li", {}, el("span", { class: "id" }, i.id), " ", `raw turn ${i.turn}, no longer readable by the system`));
    const manifest = $("#manifest tbody");
    manifest.replaceChildren();
    for (const [part, info] of Object.entries((p.manifest && p.manifest.parts) || {})) {
      manifest.append(el("tr", {}, el("td", {}, part), el("td", {}, info.ids.join(", ") || "—"), el("td", {}, info.tokens)));
    }
    const path = $("#path");
    path.replaceChildren(...p.retrieval_path.map((s) => el("li", { "data-step": s.step }, el("span", { class: "step" }, s.step), " ", describe(s))));
    const calls = await api(episodePath("tool-calls"), { system: state.system, probe: id, limit: 1000 });
    showCalls($("#probe-calls"), calls.items);
    state.prompt = new Set(p.manifest ? p.manifest.item_ids : []);
    state.gold = new Set([...(p.gold_location.in_prompt || []), ...(p.gold_location.one_hop || []), ...(p.gold_location.raw_only || [])].map((i) => i.id));
    if (move && p.manifest) {
      // The layers as they were when this probe's prompt was rendered (by its seq, when on the time axis).
      if (axis() === "at") {
        document.querySelector("input[name=axis][value=seq]").checked = true;
        setupSlider(p.manifest.seq);
      }
      const target = axis() === "seq" ? p.manifest.seq : p.manifest.turn;
      $("#slider").value = target;
      await loadLayers();
    } else {
      highlight();
      remember();
    }
  } catch (error) {
    status(error.message, true);
  }
}

function describe(step) {
  switch (step.step) {
    case "context": return `seq ${step.seq}: ${step.ids.length} items in the prompt`;
    case "llm": return `seq ${step.seq} ${step.purpose} call (${step.model}): ${step.response}${step.error ? " ERROR " + step.error : ""}`;
    case "tool": return `seq ${step.seq} ${step.tool}(${Object.entries(step.args).map(([k, v]) => `${k}=${v}`).join(", ")}) ${step.ok ? "ok" : "failed"}: ${step.result}`;
    case "answer": return `seq ${step.seq}: ${step.text} (${step.tool_calls} tool calls)`;
    case "judged": return `seq ${step.seq}: ${step.correct ? "correct" : "wrong"} by ${step.method}`;
    default: return JSON.stringify(step);
  }
}

// -- tool calls and their candidate tables ----------------------------------------------------

function callTitle(c) {
  return `seq ${c.seq} ${c.tool}(${Object.entries(c.args).map(([k, v]) => `${k}=${v}`).join(", ")}) ${c.ok ? "ok" : "failed"}`;
}

function showCalls(container, calls) {
  container.replaceChildren();
  if (!calls.length) container.append(el("p", { class: "empty" }, "no tool calls"));
  for (const c of calls) {
    const rows = c.candidates.map((k) => el("tr", { class: k.chosen ? "chosen" : "", "data-id": k.item_id },
      el("td", {}, el("span", { class: "id" }, k.item_id)), el("td", {}, k.status), el("td", {}, k.value ?? ""),
      el("td", {}, (k.superseded_by || []).join(", ") || "—"), el("td", {}, k.role), el("td", {}, k.chosen ? "returned" : "")));
    if (!rows.length) rows.push(el("tr", {}, el("td", { class: "empty", colSpan: 6 }, "no candidates")));
    const problems = [...c.problems, ...(c.reproduced === false ? ["the memory at this seq does not give the recorded result"] : [])];
    const check = problems.length ? el("p", { class: "check bad" }, "✗ " + problems.join("; "))
      : el("p", { class: "check ok" }, c.reproduced ? "✓ the memory at this seq gives the recorded result"
                                                     : "✓ table consistent" + (c.not_recomputed ? ` (${c.not_recomputed})` : ""));
    container.append(el("div", { class: "call", "data-seq": c.seq, "data-tool": c.tool },
      el("h5", {}, callTitle(c)),
      el("p", { class: "rule" }, el("b", {}, "why: "), c.rule),
      el("table", { class: "candidates" },
        el("thead", {}, el("tr", {}, ...["id", "status", "value", "superseded_by", "role", "returned"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows)),
      check,
      el("details", {}, el("summary", {}, "result"), el("pre", {}, c.result))));
  }
}

// -- wiring -----------------------------------------------------------------------------------

function wanted() {
  const q = new URLSearchParams(location.search);
  const number = (name) => (q.has(name) ? Number(q.get(name)) : null);
  return { run: q.get("run"), system: q.get("system"), episode: q.get("episode"), seq: number("seq"),
           turn: number("turn"), at: q.get("at"), probe: q.get("probe") };
}

async function start() {
  $("#run").addEventListener("change", () => guarded(() => loadEpisodes({ run: $("#run").value })));
  $("#system").addEventListener("change", () => { state.system = $("#system").value; guarded(() => loadEpisodes({ system: state.system })); });
  $("#episode").addEventListener("change", () => { state.episode = $("#episode").value; state.probe = null; $("#probe-detail").hidden = true; guarded(() => loadEpisode()); });
  $("#slider").addEventListener("input", sliderMoved);
  for (const radio of document.querySelectorAll("input[name=axis]")) {
    radio.addEventListener("change", () => { setupSlider(positionOn(state.at)); loadLayers(); });
  }
  $("#raw-more").addEventListener("click", () => loadLayers(true));
  $("#token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    token = $("#token").value;
    sessionStorage.setItem("ledgermem-token", token);
    $("#token-form").hidden = true;
    guarded(() => loadRuns(wanted()));
  });
  if (await isLive()) {
    await guarded(startLive);
  } else {
    await guarded(() => loadRuns(wanted()));
  }
  document.body.dataset.ready = "true";
}

async function isLive() {
  // `ledgermem live serve` describes the memory API; `ledgermem serve` the audit API of recorded runs.
  try {
    const response = await fetch("/openapi.json");
    const description = await response.json();
    return "/api/memory/turns" in (description.paths || {});
  } catch (error) {
    return false;
  }
}

async function guarded(work) {
  try {
    await work();
  } catch (error) {
    status(error.message, true);
  }
}

start();
