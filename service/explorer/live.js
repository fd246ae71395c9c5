// The explorer's live panel, shown when the page is served by `ledgermem live serve`: load a stream with
// a read token; with a write token, record a turn, let the memory respond, or ask a question, and see
// the memory update (its rendering and current values) and every tool call's candidate table.
// The token lives in this script's memory only: never in localStorage, sessionStorage or the URL, so
// it is gone when the page is closed or reloaded. Uses the helpers of explorer.js ($, el, busy, status).
"use strict";

const live = { token: "", stream: "" };

function liveNeed(text) {
  $("#live-need").textContent = text;
  $("#live-need").hidden = !text;
}

function freshKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

async function liveApi(method, path, params) {
  if (!live.token) throw new Error("a token is needed: enter a read token to read a stream, a write token to record or ask");
  const url = new URL(path, location.origin);
  const init = { method, headers: { Authorization: "Bearer " + live.token } };
  if (method === "GET") {
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
    }
  } else {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(params);
  }
  busy(+1);
  try {
    const response = await fetch(url, init);
    const body = await response.json();
    if (!response.ok) throw new Error(`${response.status} ${body.error || response.statusText}`);
    return body;
  } finally {
    busy(-1);
  }
}

async function liveLoad() {
  live.stream = $("#live-stream").value.trim();
  if (!live.token) return liveNeed("Enter a token: a read token shows a stream, a write token also records turns and asks.");
  if (!live.stream) return liveNeed("Name a stream (namespace/.../stream) to load.");
  liveNeed("");
  try {
    const [values, rendered, calls] = await Promise.all([
      liveApi("GET", "/api/memory/values", { stream: live.stream }),
      liveApi("GET", "/api/memory/render", { stream: live.stream }),
      liveApi("GET", "/api/memory/tool-calls", { stream: live.stream, limit: 20 }),
    ]);
    const body = $("#live-values tbody");
    body.replaceChildren(...values.values.map((v) => el("tr", { "data-id": "slot:" + v.slot },
      el("td", {}, v.slot), el("td", {}, v.value), el("td", { class: "id" }, v.summary_id))));
    if (!values.values.length) body.append(el("tr", {}, el("td", { class: "empty", colSpan: 3 }, "empty")));
    $("#live-version").textContent = `version ${values.version} · turn ${values.turn}`;
    $("#live-render pre").textContent = rendered.text;
    $("#live-tokens").textContent = `${rendered.tokens} of ${rendered.budget} tokens`;
    if (!$("#live-calls").dataset.fresh) showCalls($("#live-calls"), calls.tool_calls);
    delete $("#live-calls").dataset.fresh;
    status(`${live.stream}: version ${values.version}, turn ${values.turn}`);
  } catch (error) {
    status(error.message, true);
    if (error.message.startsWith("404")) liveNeed("No such stream yet: record a turn (write token) to start it.");
  }
}

async function liveWrite(action) {
  live.stream = $("#live-stream").value.trim();
  if (!live.stream) return liveNeed("Name a stream (namespace/.../stream) to write to.");
  try {
    let answer;
    if (action === "ask") {
      answer = await liveApi("POST", "/api/memory/ask", { stream: live.stream, question: $("#live-question").value });
      $("#live-answer").textContent = `A: ${answer.answer || "(no answer)"} (${answer.tool_calls.length} tool call${answer.tool_calls.length === 1 ? "" : "s"}, seq ${answer.first_seq}-${answer.last_seq})`;
    } else {
      const body = { stream: live.stream, user: $("#live-user").value, idempotency_key: freshKey() };
      if (action === "record") body.agent = $("#live-agent").value;
      answer = await liveApi("POST", action === "record" ? "/api/memory/turns" : "/api/memory/respond", body);
      $("#live-answer").textContent = `turn ${answer.turn} recorded (seq ${answer.first_seq}-${answer.last_seq})` +
        (answer.reply !== undefined ? `; reply: ${answer.reply}` : "");
    }
    showCalls($("#live-calls"), answer.tool_calls || []);
    $("#live-calls").dataset.fresh = "1"; // the calls of this write stay shown after the reload below
    $("#live-answer").classList.remove("error");
    await liveLoad();
  } catch (error) {
    $("#live-answer").textContent = error.message;
    $("#live-answer").classList.add("error");
    status(error.message, true);
  }
}

async function startLive() {
  document.title = "ledgermem live memory";
  $("#mode").textContent = "live memory";
  for (const node of document.querySelectorAll(".runs-only")) node.hidden = true;
  $("#live-panel").hidden = false;
  liveNeed("Enter a token: a read token shows a stream, a write token also records turns and asks.");
  $("#live-token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    live.token = $("#live-token").value.trim();
    $("#live-token").value = ""; // held by this script only
    $("#live-who").textContent = live.token ? "token " + live.token.split("_")[1] : "";
    guarded(liveLoad);
  });
  $("#live-stream-form").addEventListener("submit", (event) => { event.preventDefault(); guarded(liveLoad); });
  $("#live-turn-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(() => liveWrite(event.submitter && event.submitter.value === "respond" ? "respond" : "record"));
  });
  $("#live-ask-form").addEventListener("submit", (event) => { event.preventDefault(); guarded(() => liveWrite("ask")); });
}
