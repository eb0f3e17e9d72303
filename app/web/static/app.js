// agent-runtime's chat page: plain JavaScript over the service's own HTTP API, no build step.
//
// A turn is drawn from its events. The events a page has shown are kept in sessionStorage per
// turn, so after a reload the page draws them again and follows the turn from the last one it
// kept (`?after=SEQ` on an EventSource authorised by a stream token): nothing lost, nothing twice.
// A stream that ends without `turn.ended` (a replica handed the turn over, or died) is followed
// again the same way; when the continuation's `turn.resumed` withdraws events the page had drawn
// (the drop rule), the turn is drawn again without them.
//
// Replies are markdown (markdown.js: sanitised, drawn again on each frame while they stream).
// Signing out (or a refused token) clears every view, list and stored id.
"use strict";

const $ = (id) => document.getElementById(id);
const store = window.sessionStorage;
const EVENT_TYPES = [
  "turn.started", "node.started", "node.ended", "message.delta", "message.completed",
  "tool_call.requested", "tool_call.completed", "policy.decision", "approval.required",
  "context.degraded", "context.compacted", "usage", "plan.created", "plan.step.started",
  "plan.step.completed", "turn.resumed", "turn.ended",
];
const DEMO_CONFIG = {
  model: {provider: "scripted", chunk_delay_ms: 40, script: [
    {text: "Let me check.", tool_calls: [
      {name: "echo", arguments: {text: "hello"}},
      {name: "calculator", arguments: {expression: "6*7"}}]},
    {text: "The answer is 42."}]},
  system_prompt: "You are a careful assistant.",
  tools: ["builtin:echo", "builtin:calculator"],
  policies: [{id: "calc-approval", point: "tool", tool: "calculator",
              verdict: "requires_approval", reason: "arithmetic needs a human"}],
};
const state = {
  token: store.getItem("token"), agentId: store.getItem("agent"), sessionId: store.getItem("session"),
  session: null, sessions: [], prices: {}, active: null,
};
const views = new Map();
const NARROW = window.matchMedia("(max-width: 760px)");

// ---- HTTP -------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

async function problemOf(response) {
  try {
    const problem = await response.json();
    return new ApiError(`${problem.title} (${response.status}): ${problem.detail}`, response.status);
  } catch {
    return new ApiError(`The service answered HTTP ${response.status}`, response.status);
  }
}

async function api(method, path, body, accept = "application/json", signal = undefined) {
  const headers = {Accept: accept};
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError("Cannot reach the service: is it running?", 0);
  }
  if (!response.ok) throw await problemOf(response);
  return response;
}

async function json(method, path, body) {
  const response = await api(method, path, body);
  return response.status === 204 ? null : response.json();
}

// Reads an SSE body from fetch (turn and decision responses) and hands each event's data on;
// returns the stream's `retry:` hint in ms (null without one). A dropped connection ends it too.
async function readSse(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let retry = null;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch {
      return retry;
    }
    if (chunk.done) return retry;
    buffer += chunk.value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const lines = buffer.slice(0, end).split("\n");
      buffer = buffer.slice(end + 2);
      const hint = lines.find((l) => l.startsWith("retry:"));
      if (hint && /^\d+$/.test(hint.slice(6).trim())) retry = Number(hint.slice(6).trim());
      const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

// After a fetch-read stream of a turn: if it ended without `turn.ended`, wait the server's hint and
// follow the turn from the last event drawn.
async function finish(view, retry) {
  const signal = state.active?.signal;
  if (!view || ended(view) || signal?.aborted) return;
  await new Promise((resolve) => setTimeout(resolve, retry ?? 1000));
  if (!signal?.aborted) await follow(view);
}

// The turn the page is streaming now: the Stop button cancels it; opening another session or
// signing out stops reading it (the turn itself goes on).
async function track(view, run) {
  const controller = new AbortController();
  const active = {view, signal: controller.signal, abort: () => controller.abort()};
  state.active = active;
  setRunning(active);
  try {
    await run(active);
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    if (state.active === active) {
      state.active = null;
      setRunning(null);
    }
  }
}

async function stop() {
  const view = state.active?.view;
  if (!view) return;
  $("stop").disabled = true;
  await json("POST", `/turns/${view.turnId}/cancel`);
}

// ---- errors and sign-in -----------------------------------------------------------------------

function showError(error) {
  const box = $("error");
  box.textContent = error.message || String(error);
  box.hidden = false;
  if (error.status === 401) signOut(false);
}

function clearError() { $("error").hidden = true; }

function guarded(action) {
  return async (event) => {
    if (event) event.preventDefault();
    clearError();
    try { await action(event); } catch (error) { showError(error); }
  };
}

function claims(token) {
  try {
    return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    return {};
  }
}

async function signIn(token) {
  resetWorkspace();
  state.token = token.trim();
  await json("GET", "/agents?limit=1");
  store.setItem("token", state.token);
  await showWorkspace();
}

function signOut(clear = true) {
  store.clear();
  resetWorkspace();
  state.token = null;
  if (clear) clearError();
  showSignIn();
}

// Everything the previous user saw or chose goes: the views, the lists, the ids.
function resetWorkspace() {
  if (state.active) state.active.abort();
  Object.assign(state, {agentId: null, sessionId: null, session: null, sessions: [], active: null});
  views.clear();
  $("transcript").replaceChildren();
  $("sessions").replaceChildren();
  $("agent-select").replaceChildren();
  $("session-filter").value = "";
  $("message").value = "";
  $("token").value = "";
  $("chat-title").textContent = "No session open";
  $("who").textContent = "";
  showSessionActions(null);
  setComposer(false);
  setRunning(null);
}

async function showSignIn() {
  $("workspace").hidden = true;
  $("sign-out").hidden = true;
  $("menu").hidden = true;
  $("who").textContent = "";
  $("sign-in").hidden = false;
  const options = await (await fetch("/web/sign-in")).json().catch(() => ({local: false}));
  $("local-form").querySelectorAll("input, button").forEach((node) => { node.hidden = !options.local; });
  $("local-form").querySelectorAll("label, .pair").forEach((node) => { node.hidden = !options.local; });
  $("local-hint").textContent = options.local
    ? "This service generated its own secret: on this machine one click is enough."
    : (options.reason || "");
  (options.local ? $("local-sign-in") : $("token")).focus();
}

async function localSignIn() {
  const body = {tenant_id: $("local-tenant").value.trim(), sub: $("local-sub").value.trim()};
  const response = await fetch("/web/local-token", {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
  });
  if (!response.ok) throw await problemOf(response);
  await signIn((await response.json()).token);
}

// ---- agents and sessions ----------------------------------------------------------------------

async function showWorkspace() {
  const who = claims(state.token);
  $("who").textContent = `${who.sub || "?"} @ ${who.tenant_id || "?"}`;
  $("sign-in").hidden = true;
  $("sign-out").hidden = false;
  $("workspace").hidden = false;
  const prices = await json("GET", "/web/prices").catch(() => ({models: {}}));
  state.prices = prices.models;
  await loadAgents();
  setSide(!state.sessionId);
  if (state.sessionId) await openSession(state.sessionId);
}

// On a phone the agents and sessions are a panel the header's button opens over the chat.
function setSide(open) {
  $("menu").hidden = !NARROW.matches;
  $("menu").setAttribute("aria-expanded", String(open));
  $("workspace").classList.toggle("side-open", open);
}

async function loadAgents() {
  const page = await json("GET", "/agents?limit=200");
  const select = $("agent-select");
  select.replaceChildren(...page.items.map((a) => new Option(`${a.name} (v${a.version})`, a.id)));
  if (!page.items.length) {
    select.append(new Option("no agents yet: create one below", ""));
    $("new-agent").open = true;
  }
  if (state.agentId && page.items.some((a) => a.id === state.agentId)) select.value = state.agentId;
  state.agentId = select.value || null;
  store.setItem("agent", state.agentId || "");
  await loadSessions();
}

async function loadSessions() {
  $("new-session").disabled = !state.agentId;
  state.sessions = [];
  if (state.agentId) {
    const agentId = state.agentId;
    const page = await json("GET", `/sessions?agent_id=${agentId}&limit=100`);
    if (agentId !== state.agentId) return;  // another agent was chosen meanwhile
    state.sessions = page.items.sort((a, b) => Date.parse(b.last_active_at) - Date.parse(a.last_active_at));
  }
  drawSessions();
}

function titleOf(session) { return session.title || "New conversation"; }

function drawSessions() {
  const filter = $("session-filter").value.trim().toLowerCase();
  const shown = state.sessions.filter((s) => !filter || titleOf(s).toLowerCase().includes(filter));
  $("sessions").replaceChildren(...shown.map((session) => {
    const when = el("time", {datetime: session.last_active_at, class: "when"}, ago(session.last_active_at));
    const button = el("button", {type: "button", "data-session": session.id},
      el("span", {class: "title"}, titleOf(session)), when,
      session.status === "open" ? "" : el("span", {class: "closed"}, ` · ${session.status}`));
    if (session.id === state.sessionId) button.setAttribute("aria-current", "true");
    button.addEventListener("click", guarded(() => openSession(session.id)));
    return el("li", {}, button);
  }));
  if (!shown.length) {
    $("sessions").append(el("li", {class: "empty"}, filter ? "No session matches" : "No sessions yet"));
  }
}

function ago(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

function showSessionActions(session) {
  $("rename").hidden = !session;
  $("close-session").hidden = !session || session.status !== "open";
  $("rename-form").hidden = true;
  $("chat-title").hidden = false;
}

function showTitle(session) {
  $("chat-title").textContent = titleOf(session);
  $("chat-title").title = `session ${session.id} · agent v${session.agent_version}`;
}

async function refreshSession() {
  if (!state.sessionId) return;
  const session = await json("GET", `/sessions/${state.sessionId}`);
  if (session.id !== state.sessionId) return;
  state.session = session;
  showTitle(session);
  showSessionActions(session);
  await loadSessions();
}

function startRename() {
  $("rename-input").value = state.session.title || "";
  $("chat-title").hidden = true;
  $("rename").hidden = true;
  $("rename-form").hidden = false;
  $("rename-input").focus();
  $("rename-input").select();
}

async function rename() {
  const title = $("rename-input").value.trim();
  if (!title) throw new Error("A title cannot be empty");
  state.session = await json("PATCH", `/sessions/${state.sessionId}`, {title});
  showTitle(state.session);
  showSessionActions(state.session);
  await loadSessions();
  $("rename").focus();
}

function cancelRename() {
  showSessionActions(state.session);
  $("rename").focus();
}

async function closeSession() {
  await json("DELETE", `/sessions/${state.sessionId}`);
  await refreshSession();
  setComposer(false);
}

async function createAgent() {
  let config;
  try {
    config = JSON.parse($("agent-config").value);
  } catch (error) {
    throw new Error(`The configuration is not valid JSON: ${error.message}`);
  }
  const agent = await json("POST", "/agents", {name: $("agent-name").value, config});
  state.agentId = agent.id;
  $("new-agent").open = false;
  await loadAgents();
}

async function createSession() {
  const session = await json("POST", "/sessions", {agent_id: state.agentId});
  await openSession(session.id);
  await loadSessions();
  $("message").focus();
}

async function openSession(sessionId) {
  const session = await json("GET", `/sessions/${sessionId}`);
  if (state.active) state.active.abort();
  state.sessionId = session.id;
  state.session = session;
  store.setItem("session", session.id);
  showTitle(session);
  showSessionActions(session);
  for (const button of document.querySelectorAll("[data-session]")) {
    button.setAttribute("aria-current", String(button.dataset.session === session.id));
  }
  const transcript = $("transcript");
  transcript.replaceChildren();
  views.clear();
  setSide(false);
  const [messages, turns] = await Promise.all([
    json("GET", `/sessions/${session.id}/messages?limit=200&include=superseded`),
    json("GET", `/sessions/${session.id}/turns?limit=200`),
  ]);
  if (state.sessionId !== session.id) return;
  const latest = turns.items[0];
  const resume = latest && (stored(latest.id) || ["running", "interrupted"].includes(latest.status));
  const usage = new Map(turns.items.map((turn) => [turn.id, turn.usage]));
  const blocks = new Map();
  for (const message of messages.items) {
    if (resume && message.turn_id === latest.id) continue;
    if (!blocks.has(message.turn_id)) {
      const list = el("ol", {class: "turn-events"});
      blocks.set(message.turn_id, transcript.appendChild(el("li", {class: "turn", "data-turn": message.turn_id}, list)));
    }
    blocks.get(message.turn_id).firstChild.append(messageItem(message));
  }
  for (const [turnId, block] of blocks) {
    const tokens = usage.get(turnId);
    if (tokens) block.firstChild.append(el("li", {class: "usage"}, usageText(tokens)));
  }
  const view = resume ? viewFor(latest.id, latest.input) : null;
  if (view) blocks.set(latest.id, view.root);
  versions(messages.items, blocks);
  const open = session.status === "open";
  for (const [turnId, block] of blocks) decorate(block, turnId, open && latest && turnId === latest.id);
  setComposer(open);
  stickToEnd(true);
  if (view && (latest.last_seq > view.lastSeq || latest.status === "running")) await track(view, () => follow(view));
}

// An answer regenerated in place keeps its earlier versions (their messages are `superseded`):
// each version's block gets "‹ 2/3 ›", and only the one chosen shows (the live one at first).
function versions(messages, blocks) {
  const replacedBy = new Map();
  for (const m of messages) if (m.superseded_by_turn_id) replacedBy.set(m.turn_id, m.superseded_by_turn_id);
  const live = (turnId) => { let t = turnId; while (replacedBy.has(t)) t = replacedBy.get(t); return t; };
  const groups = new Map();
  for (const turnId of blocks.keys()) {
    const head = live(turnId);
    if (!groups.has(head)) groups.set(head, []);
    groups.get(head).push(turnId);
  }
  for (const group of groups.values()) {
    if (group.length < 2) continue;
    group.forEach((turnId, index) => {
      const block = blocks.get(turnId);
      block.hidden = index !== group.length - 1;
      block.dataset.version = String(index + 1);
      const go = (step) => () => {
        const target = blocks.get(group[index + step]);
        block.hidden = true;
        target.hidden = false;
        target.querySelector(step < 0 ? "[data-step='-1']" : "[data-step='1']")?.focus();
      };
      const back = el("button", {type: "button", class: "secondary", "data-step": "-1", "aria-label": "Previous version"}, "‹");
      const next = el("button", {type: "button", class: "secondary", "data-step": "1", "aria-label": "Next version"}, "›");
      back.disabled = index === 0;
      next.disabled = index === group.length - 1;
      back.addEventListener("click", go(-1));
      next.addEventListener("click", go(1));
      block.firstChild.append(el("li", {class: "versions"}, back,
        el("span", {class: "version-label"}, `${index + 1}/${group.length}`), next));
    });
  }
}

// Edit on each user message; Regenerate under the latest answer once its turn ended.
function decorate(block, turnId, latest) {
  const user = block.querySelector(".msg-user");
  if (user && state.session?.status === "open" && !user.querySelector(".edit")) {
    const edit = el("button", {type: "button", class: "secondary edit", "aria-label": "Edit message"}, "Edit");
    edit.addEventListener("click", () => startEdit(user, turnId));
    user.append(edit);
  }
  if (latest && !block.hidden && !block.querySelector(".regenerate")) {
    const again = el("button", {type: "button", class: "secondary regenerate"}, "Regenerate");
    again.addEventListener("click", guarded(() => regenerate(turnId)));
    block.firstChild.append(el("li", {class: "turn-actions"}, again));
  }
}

function lastTurnId() {
  const blocks = $("transcript").querySelectorAll(":scope > li.turn[data-turn]");
  return blocks.length ? blocks[blocks.length - 1].dataset.turn : null;
}

function startEdit(user, turnId) {
  const latest = lastTurnId() === turnId;
  const text = user.querySelector(".text")?.textContent ?? "";
  const id = `edit-${turnId}`;
  const area = el("textarea", {id, rows: "3"});
  area.value = text;
  const save = el("button", {type: "submit"}, latest ? "Save and regenerate" : "Save in a new branch");
  const cancel = el("button", {type: "button", class: "secondary"}, "Cancel");
  const form = el("form", {class: "edit-form"}, el("label", {for: id}, "Edit your message"), area,
    el("div", {class: "actions"}, save, cancel));
  const restore = () => { form.replaceWith(user); user.querySelector(".edit")?.focus(); };
  form.addEventListener("submit", guarded(async () => {
    const input = area.value.trim();
    if (!input) throw new Error("A message cannot be empty");
    await (latest ? regenerate(turnId, input) : editInABranch(turnId, input));
  }));
  cancel.addEventListener("click", restore);
  area.addEventListener("keydown", (event) => { if (event.key === "Escape") restore(); });
  user.replaceWith(form);
  area.focus();
}

// The latest turn, made again in place (its messages are kept as an earlier version).
async function regenerate(turnId, input) {
  if (state.active) return;
  const sessionId = state.sessionId;
  const body = input === undefined ? {} : {input};
  const asked = input ?? (await json("GET", `/turns/${turnId}`)).input;
  await track(null, async (active) => {
    const response = await api("POST", `/turns/${turnId}/regenerate`, body, "text/event-stream", active.signal);
    const retry = await readSse(response, (event) => {
      active.view = active.view || viewFor(event.turn_id, asked);
      setRunning(active);
      onEvent(active.view, event);
    });
    await finish(active.view, retry);
  });
  if (state.sessionId === sessionId) await openSession(sessionId);
}

// An earlier message edited: a fork that keeps the conversation up to the message before it,
// where the edited text is sent. The original session stays as it was.
async function editInABranch(turnId, input) {
  const page = await json("GET", `/sessions/${state.sessionId}/messages?limit=200`);
  const at = page.items.findIndex((m) => m.turn_id === turnId && m.role === "user");
  const before = page.items.slice(0, Math.max(at, 0)).reverse().find((m) => m.role !== "tool");
  const session = before
    ? await json("POST", `/sessions/${state.sessionId}/fork`, {at_message_id: before.id})
    : await json("POST", "/sessions", {agent_id: state.session.agent_id, agent_version: state.session.agent_version});
  await openSession(session.id);
  await loadSessions();
  $("message").value = input;
  await send();
}

function messageItem(message) {
  if (message.role === "tool") {
    return el("li", {class: "tool"}, el("strong", {}, message.name), el("div", {class: "result"}, "result: ",
      el("code", {}, message.content)));
  }
  if (message.role === "assistant") {
    if (!message.content) {
      return el("li", {class: "tool"}, ...(message.tool_calls || []).map((c) => el("span", {}, "→ ", el("strong", {}, c.name), " ")));
    }
    const item = el("li", {class: "msg-assistant"});
    Markdown.render(item, message.content);
    return item;
  }
  return el("li", {class: "msg-user"}, el("span", {class: "text"}, message.content));
}

// Tokens of a turn, and what they cost when the model's price is known (GET /web/prices).
function usageText(usage) {
  const tokens = `${usage.input_tokens.toLocaleString()} in · ${usage.output_tokens.toLocaleString()} out tokens`;
  const name = state.session?.snapshot?.model?.name;
  const price = name && state.prices[name];
  if (!price) return tokens;
  const cost = (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6;
  return `${tokens} · $${cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2)}`;
}

// ---- one turn, drawn from its events ----------------------------------------------------------

function stored(turnId) { return JSON.parse(store.getItem(`turn:${turnId}`) || "null"); }

function viewFor(turnId, input) {
  if (views.has(turnId)) return views.get(turnId);
  const saved = stored(turnId) || {input, events: []};
  const view = {turnId, input: saved.input ?? input, events: [], lastSeq: 0, bubble: null, text: "", tools: new Map(),
                cards: new Map(), decisions: null, usage: null,
                root: el("li", {class: "turn", "data-turn": turnId}), list: el("ol", {class: "turn-events"})};
  view.root.append(view.list);
  $("transcript").append(view.root);
  views.set(turnId, view);
  clear(view);
  for (const event of saved.events) draw(view, event);
  return view;
}

function clear(view) {
  view.list.replaceChildren();
  if (view.input) view.list.append(el("li", {class: "msg-user"}, el("span", {class: "text"}, view.input)));
  view.bubble = null;
  view.text = "";
  view.tools.clear();
  view.cards.clear();
  view.decisions = null;
  view.usage = null;
}

function ended(view) { return view.events.length > 0 && view.events[view.events.length - 1].type === "turn.ended"; }

// The drop rule at `turn.resumed` (app/core/drop_rule.py says it for the Python clients): the
// events drawn after the last stored one are withdrawn, and so is a model reply still streaming,
// which the continuation makes again.
function withdrawn(events, resumed) {
  const gone = new Set();
  let streaming = [];
  for (const event of events) {
    if (resumed.last_durable_seq < event.seq && event.seq < resumed.seq) gone.add(event.seq);
    else if (event.type === "message.delta") streaming.push(event.seq);
    else if (event.type === "message.completed" || event.type === "turn.ended") streaming = [];
  }
  for (const seq of streaming) gone.add(seq);
  return gone;
}

function withdraw(view, resumed) {
  const gone = withdrawn(view.events, resumed);
  if (!gone.size) return;
  view.events = view.events.filter((event) => !gone.has(event.seq));
  clear(view);
  for (const event of view.events) render(view, event);
}

let saveTimer = null;
function save(view) {
  store.setItem(`turn:${view.turnId}`, JSON.stringify({input: view.input, events: view.events}));
}
function saveSoon(view) {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => save(view), 150);
}
window.addEventListener("pagehide", () => { for (const view of views.values()) save(view); });

function draw(view, event) {
  if (event.seq <= view.lastSeq) return;
  view.lastSeq = event.seq;
  if (event.type === "turn.resumed") withdraw(view, event);
  view.events.push(event);
  render(view, event);
}

function render(view, event) {
  const add = (node) => { view.list.append(node); return node; };
  switch (event.type) {
    case "turn.started":
      if (event.resumed_by) add(el("li", {class: "status"}, "resumed after the decision"));
      break;
    case "message.delta":
      view.bubble = view.bubble || add(el("li", {class: "msg-assistant", "aria-busy": "true"}));
      view.text += event.text;
      paintSoon(view.bubble, view.text);
      break;
    case "message.completed": {
      const text = event.text || view.text;
      const bubble = view.bubble || (text ? add(el("li", {class: "msg-assistant"})) : null);
      if (bubble) {
        paint(bubble, text);
        bubble.removeAttribute("aria-busy");
      }
      view.bubble = null;
      view.text = "";
      break;
    }
    case "usage":
      view.usage = view.usage || {input_tokens: 0, output_tokens: 0};
      view.usage.input_tokens += event.input_tokens;
      view.usage.output_tokens += event.output_tokens;
      break;
    case "tool_call.requested":
      if (view.tools.has(event.tool_call_id)) break;  // a continuation naming a call of its batch again
      view.tools.set(event.tool_call_id, add(el("li", {class: "tool"},
        "→ ", el("strong", {}, event.name), " ", el("code", {class: "args"}, JSON.stringify(event.arguments)))));
      break;
    case "tool_call.completed": {
      const item = view.tools.get(event.tool_call_id) || add(el("li", {class: "tool"}, el("strong", {}, event.name)));
      view.tools.set(event.tool_call_id, item);
      item.querySelector(".result")?.remove();
      item.append(el("div", {class: "result"}, event.is_error ? "error: " : "result: ", el("code", {}, String(event.result))));
      break;
    }
    case "policy.decision":
      fold(view, event, add);
      if (event.point === "human") settleCard(view, event.tool_call_id, event.verdict);
      break;
    case "approval.required":
      view.cards.set(event.tool_call_id, add(approvalCard(view, event)));
      break;
    case "context.degraded":
      add(el("li", {class: "status"}, `context degraded (${event.component}): ${event.error}`));
      break;
    case "turn.resumed":
      add(el("li", {class: "status"}, `continued on another replica (${event.reason})`));
      break;
    case "turn.ended": {
      if (view.bubble) view.bubble.removeAttribute("aria-busy");
      view.bubble = null;
      view.text = "";
      const error = event.error ? ` · ${event.error.code}: ${event.error.message}` : "";
      const label = event.status === "interrupted" ? "waiting for approval" : event.status;
      add(el("li", {class: `status ${event.status}`, "data-status": event.status}, `turn ${label}${error}`));
      if (view.usage && event.status !== "interrupted") add(el("li", {class: "usage"}, usageText(view.usage)));
      if (event.output !== undefined && event.output !== null) add(outputView(event.output));
      break;
    }
    default:
      break;
  }
}

function approvalCard(view, event) {
  const id = `args-${event.approval_id}`;
  const args = el("textarea", {id, rows: "3", spellcheck: "false"});
  args.value = JSON.stringify(event.arguments, null, 2);
  const reasonId = `reason-${event.approval_id}`;
  const reason = el("input", {id: reasonId, maxlength: "5000", autocomplete: "off"});
  const decide = (decision) => guarded(async () => {
    let edited;
    if (decision === "approve" && args.value.trim() !== JSON.stringify(event.arguments, null, 2)) {
      try { edited = JSON.parse(args.value); } catch (error) { throw new Error(`Arguments are not valid JSON: ${error.message}`); }
    }
    card.querySelectorAll("button, textarea, input").forEach((node) => { node.disabled = true; });
    try {
      await track(view, () => decideApproval(view, event.approval_id, decision, edited, reason.value.trim()));
    } catch (error) {
      card.querySelectorAll("button, textarea, input").forEach((node) => { node.disabled = false; });
      throw error;
    }
  });
  const approve = el("button", {type: "button"}, "Approve");
  const deny = el("button", {type: "button", class: "deny"}, "Deny");
  approve.addEventListener("click", decide("approve"));
  deny.addEventListener("click", decide("deny"));
  const held = typeof event.result === "string";  // a tool_result rule holds what the tool returned
  const shown = held
    ? [el("p", {}, "The tool ran; this is what the model sees if you approve:"),
       el("pre", {class: "held-result", tabindex: "0", "aria-label": "the tool's result"}, event.result)]
    : [el("label", {for: id}, "Arguments (edit before approving to change them)"), args];
  const card = el("li", {class: "approval", "data-approval": event.approval_id},
    el("strong", {}, held ? "Approval needed for a result: " : "Approval needed: "), `${event.name}`,
    event.reason ? ` · ${event.reason}` : "", ...shown,
    el("label", {for: reasonId}, "Reason (optional, kept with the decision)"), reason,
    el("div", {class: "actions"}, approve, deny));
  return card;
}

function settleCard(view, toolCallId, verdict) {
  const card = view.cards.get(toolCallId);
  if (!card) return;
  card.querySelectorAll("button, textarea, input").forEach((node) => { node.disabled = true; });
  card.dataset.decided = verdict;
}

async function decideApproval(view, approvalId, decision, args, reason) {
  const body = {decision, ...(args === undefined ? {} : {arguments: args}), ...(reason ? {reason} : {})};
  const response = await api("POST", `/approvals/${approvalId}`, body, "text/event-stream", state.active?.signal);
  if (response.status === 202) {
    view.list.append(el("li", {class: "status"}, "decision recorded; other approvals of this step still wait"));
    return;
  }
  await finish(view, await readSse(response, (event) => onEvent(view, event)));
}

function onEvent(view, event) {
  draw(view, event);
  saveSoon(view);
  scrollDown();
  if (event.type === "turn.ended" && event.status !== "interrupted") {
    for (const block of $("transcript").querySelectorAll(".turn-actions")) block.remove();
    decorate(view.root, view.turnId, true);
    refreshSession().catch(showError);
  }
}

// The policy's decisions of a turn fold into one line ("3 calls allowed by policy") that opens to
// the receipts; a denial keeps the line in the deny colour.
function fold(view, event, add) {
  if (!view.decisions) {
    const list = el("ul", {class: "receipts"});
    const summary = el("summary", {});
    view.decisions = {counts: new Map(), summary, list, box: add(el("li", {class: "policy"},
      el("details", {}, summary, list)))};
  }
  const {counts, summary, list, box} = view.decisions;
  counts.set(foldKey(event), (counts.get(foldKey(event)) || 0) + 1);
  summary.textContent = [...counts].map(([[noun, what], n]) => `${n} ${noun}${n > 1 ? "s" : ""} ${what}`).join(" · ");
  if (event.verdict === "deny") box.classList.add("deny");
  list.append(el("li", {"data-verdict": event.verdict},
    `${event.point}: ${event.verdict}${event.decided_by ? ` by ${event.decided_by}` : ""}`,
    event.rule_id ? ` · rule ${event.rule_id}` : "", event.reason ? ` · ${event.reason}` : ""));
}

const VERDICTS = {allow: "allowed", deny: "denied", requires_approval: "held for approval", approve: "approved"};
const FOLD_KEYS = new Map();
// [noun, what] of a decision, one array per distinct pair (a Map key by identity).
function foldKey(event) {
  const noun = event.point === "tool" || event.point === "human" ? "call" : "prompt check";
  const what = `${VERDICTS[event.verdict] || event.verdict} by ${event.point === "human" ? event.decided_by || "a person" : "policy"}`;
  const id = `${noun}|${what}`;
  if (!FOLD_KEYS.has(id)) FOLD_KEYS.set(id, [noun, what]);
  return FOLD_KEYS.get(id);
}

// A streaming reply is drawn again at most once a frame: the whole text, as markdown.
const painting = new Map();
function paintSoon(node, text) {
  if (!painting.has(node)) {
    requestAnimationFrame(() => {
      const latest = painting.get(node);
      painting.delete(node);
      if (latest !== undefined) paint(node, latest);
    });
  }
  painting.set(node, text);
}
function paint(node, text) {
  painting.delete(node);
  Markdown.render(node, text);
  scrollDown();
}

// Follows a turn from the last event drawn, through an EventSource (a browser cannot set its
// headers, hence the stream token). The browser reconnects by itself with Last-Event-ID; once the
// short-lived token is refused the page asks for a new one, a bounded number of times.
async function follow(view, attempts = 5) {
  const signal = state.active?.signal;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (signal?.aborted) return;
    const {token} = await json("POST", `/turns/${view.turnId}/stream-token`);
    const url = `/turns/${view.turnId}/events?access_token=${encodeURIComponent(token)}&after=${view.lastSeq}`;
    const ended = await new Promise((resolve) => {
      const source = new EventSource(url);
      signal?.addEventListener("abort", () => { source.close(); resolve(true); });
      // An `interrupted` end is followed by the resumed run when a decision came since: keep reading.
      const settle = async (event) => {
        if (event.status === "interrupted") {
          const turn = await json("GET", `/turns/${view.turnId}`).catch(() => ({status: "interrupted"}));
          if (turn.status !== "interrupted" || turn.last_seq > event.seq) return;
        }
        source.close();
        resolve(true);
      };
      const listener = (message) => {
        const event = JSON.parse(message.data);
        onEvent(view, event);
        if (event.type === "turn.ended") settle(event);
      };
      for (const type of EVENT_TYPES) source.addEventListener(type, listener);
      source.onerror = () => { if (source.readyState === EventSource.CLOSED) resolve(false); };
    });
    if (ended) return;
    await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
  }
  throw new Error("Lost the turn's stream; reload the page to pick it up again");
}

// The turn a message started, when its stream broke before the first event named it.
async function startedTurn(input) {
  const latest = (await json("GET", `/sessions/${state.sessionId}/turns?limit=1`)).items[0];
  return latest && latest.input === input ? viewFor(latest.id, input) : null;
}

// A turn's structured result (the agent's `output_schema`), folded: the answer's text stays above it.
function outputView(output) {
  const details = el("details", {class: "output"}, el("summary", {}, "Structured output"));
  details.append(el("pre", {}, JSON.stringify(output, null, 2)));
  return el("li", {class: "output-item"}, details);
}

// The files chosen with "Attach", uploaded (`POST /files`) when the message is sent: images as
// `image` parts, the rest as `file` parts, after the text.
async function uploadAttachments() {
  const parts = [];
  for (const file of $("attach").files) {
    const form = new FormData();
    form.append("file", file, file.name);
    const headers = state.token ? {Authorization: `Bearer ${state.token}`} : {};
    const response = await fetch("/files", {method: "POST", headers, body: form});
    if (!response.ok) throw await problemOf(response);
    const stored = await response.json();
    parts.push({type: stored.content_type.startsWith("image/") ? "image" : "file", file_id: stored.id, name: stored.name});
  }
  return parts;
}

function showAttachments() {
  const names = [...$("attach").files].map((file) => file.name);
  $("attached").textContent = names.length ? `Attached: ${names.join(", ")}` : "";
}

async function send() {
  const text = $("message").value.trim();
  if (!text || !state.sessionId || state.active) return;
  const sessionId = state.sessionId;
  stickToEnd(true);
  await track(null, async (active) => {
    const files = await uploadAttachments();
    const input = files.length ? `${text} 📎 ${files.map((f) => f.name).join(", ")}` : text;
    const body = files.length
      ? {input: [{type: "text", text}, ...files.map(({type, file_id}) => ({type, file_id}))]}
      : {input: text};
    const response = await api("POST", `/sessions/${sessionId}/turns`, body, "text/event-stream", active.signal);
    $("message").value = "";
    $("attach").value = "";
    showAttachments();
    const retry = await readSse(response, (event) => {
      active.view = active.view || viewFor(event.turn_id, input);
      setRunning(active);
      onEvent(active.view, event);
    });
    await finish(active.view || await startedTurn(input), retry);
  });
  $("message").focus();
}

// ---- small helpers ----------------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children.filter((child) => child !== null && child !== undefined && child !== ""));
  return node;
}

function setComposer(enabled) {
  $("message").disabled = !enabled;
  $("send").disabled = !enabled || Boolean(state.active);
}

function setRunning(active) {
  $("stop").hidden = !active;
  $("stop").disabled = !active?.view;
  $("send").hidden = Boolean(active);
  $("send").disabled = Boolean(active) || $("message").disabled;
}

// Auto-scroll follows the newest event while the reader is at the end; scrolled up, it stays put
// and "Jump to latest" offers the way back.
let atEnd = true;
function stickToEnd(value) {
  atEnd = value;
  $("jump").hidden = true;
  if (value) scrollDown();
}

function scrollDown() {
  const transcript = $("transcript");
  if (atEnd) {
    transcript.scrollTop = transcript.scrollHeight;
  } else if (transcript.scrollHeight > transcript.clientHeight) {
    $("jump").hidden = false;
  }
}

function onScroll() {
  const transcript = $("transcript");
  atEnd = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 24;
  if (atEnd) $("jump").hidden = true;
}

document.addEventListener("DOMContentLoaded", () => {
  $("agent-config").value = JSON.stringify(DEMO_CONFIG, null, 2);
  $("token-form").addEventListener("submit", guarded(() => signIn($("token").value)));
  $("local-form").addEventListener("submit", guarded(localSignIn));
  $("sign-out").addEventListener("click", () => signOut());
  $("menu").addEventListener("click", () => setSide($("menu").getAttribute("aria-expanded") !== "true"));
  NARROW.addEventListener("change", () => { if (state.token) setSide(!state.sessionId); });
  $("session-filter").addEventListener("input", drawSessions);
  $("rename").addEventListener("click", startRename);
  $("rename-form").addEventListener("submit", guarded(rename));
  $("rename-cancel").addEventListener("click", cancelRename);
  $("rename-input").addEventListener("keydown", (event) => { if (event.key === "Escape") cancelRename(); });
  $("close-session").addEventListener("click", guarded(closeSession));
  $("stop").addEventListener("click", guarded(stop));
  $("jump").addEventListener("click", () => { stickToEnd(true); $("message").focus(); });
  $("transcript").addEventListener("scroll", onScroll, {passive: true});
  $("agent-select").addEventListener("change", guarded(async (event) => {
    state.agentId = event.target.value || null;
    store.setItem("agent", state.agentId);
    await loadSessions();
  }));
  $("agent-form").addEventListener("submit", guarded(createAgent));
  $("new-session").addEventListener("click", guarded(createSession));
  $("send-form").addEventListener("submit", guarded(send));
  $("attach").addEventListener("change", showAttachments);
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("send-form").requestSubmit();
    } else if (event.key === "Escape" && state.active) {
      event.preventDefault();
      $("stop").click();
    }
  });
  (state.token ? guarded(showWorkspace)() : showSignIn());
});
