// agent-runtime's chat page: plain JavaScript over the service's own HTTP API, no build step.
//
// A turn is drawn from its events. The events a page has shown are kept in sessionStorage per
// turn, so after a reload the page draws them again and follows the turn from the last one it
// kept (`?after=SEQ` on an EventSource authorised by a stream token): nothing lost, nothing twice.
// A stream that ends without `turn.ended` (a replica handed the turn over, or died) is followed
// again the same way; when the continuation's `turn.resumed` withdraws events the page had drawn
// (the drop rule), the turn is drawn again without them.
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
const state = {token: store.getItem("token"), agentId: store.getItem("agent"), sessionId: store.getItem("session")};
const views = new Map();

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

async function api(method, path, body, accept = "application/json") {
  const headers = {Accept: accept};
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
  } catch {
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
  if (!view || ended(view)) return;
  await new Promise((resolve) => setTimeout(resolve, retry ?? 1000));
  await follow(view);
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
  state.token = token.trim();
  await json("GET", "/agents?limit=1");
  store.setItem("token", state.token);
  await showWorkspace();
}

function signOut(clear = true) {
  store.clear();
  Object.assign(state, {token: null, agentId: null, sessionId: null});
  if (clear) clearError();
  showSignIn();
}

async function showSignIn() {
  $("workspace").hidden = true;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  $("sign-in").hidden = false;
  const options = await (await fetch("/web/sign-in")).json().catch(() => ({local: false}));
  $("local-sign-in").hidden = !options.local;
  $("local-hint").textContent = options.local
    ? "This service generated its own secret: on this machine one click is enough."
    : (options.reason || "");
  (options.local ? $("local-sign-in") : $("token")).focus();
}

// ---- agents and sessions ----------------------------------------------------------------------

async function showWorkspace() {
  const who = claims(state.token);
  $("who").textContent = `${who.sub || "?"} @ ${who.tenant_id || "?"}`;
  $("sign-in").hidden = true;
  $("sign-out").hidden = false;
  $("workspace").hidden = false;
  await loadAgents();
  if (state.sessionId) await openSession(state.sessionId);
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
  const list = $("sessions");
  list.replaceChildren();
  $("new-session").disabled = !state.agentId;
  if (!state.agentId) return;
  const page = await json("GET", `/sessions?agent_id=${state.agentId}&limit=50`);
  for (const session of page.items) {
    const button = el("button", {type: "button", "data-session": session.id},
      `${new Date(session.created_at).toLocaleString()} · ${session.id.slice(0, 8)}${session.status === "open" ? "" : " (closed)"}`);
    if (session.id === state.sessionId) button.setAttribute("aria-current", "true");
    button.addEventListener("click", guarded(() => openSession(session.id)));
    list.append(el("li", {}, button));
  }
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
}

async function openSession(sessionId) {
  const session = await json("GET", `/sessions/${sessionId}`);
  state.sessionId = session.id;
  store.setItem("session", session.id);
  $("chat-title").textContent = `Session ${session.id.slice(0, 8)} · agent v${session.agent_version}`;
  for (const button of document.querySelectorAll("[data-session]")) {
    button.setAttribute("aria-current", String(button.dataset.session === session.id));
  }
  const transcript = $("transcript");
  transcript.replaceChildren();
  views.clear();
  const [messages, turns] = await Promise.all([
    json("GET", `/sessions/${session.id}/messages?limit=200`),
    json("GET", `/sessions/${session.id}/turns?limit=1`),
  ]);
  const latest = turns.items[0];
  const resume = latest && (stored(latest.id) || ["running", "interrupted"].includes(latest.status));
  for (const message of messages.items) {
    if (!(resume && message.turn_id === latest.id)) transcript.append(messageItem(message));
  }
  setComposer(session.status === "open");
  if (resume) {
    const view = viewFor(latest.id, latest.input);
    if (latest.last_seq > view.lastSeq || latest.status === "running") await follow(view);
  }
  scrollDown();
}

function messageItem(message) {
  if (message.role === "tool") return el("li", {class: "tool"}, `${message.name} → `, el("code", {}, message.content));
  const text = message.content || (message.tool_calls || []).map((c) => `→ ${c.name}`).join(", ");
  return el("li", {class: `msg-${message.role}`}, text);
}

// ---- one turn, drawn from its events ----------------------------------------------------------

function stored(turnId) { return JSON.parse(store.getItem(`turn:${turnId}`) || "null"); }

function viewFor(turnId, input) {
  if (views.has(turnId)) return views.get(turnId);
  const saved = stored(turnId) || {input, events: []};
  const view = {turnId, input: saved.input, events: [], lastSeq: 0, bubble: null, tools: new Map(), cards: new Map(),
                root: el("li", {class: "turn", "data-turn": turnId}), list: el("ol", {class: "transcript"})};
  view.root.append(view.list);
  $("transcript").append(view.root);
  views.set(turnId, view);
  clear(view);
  for (const event of saved.events) draw(view, event);
  return view;
}

function clear(view) {
  view.list.replaceChildren();
  if (view.input) view.list.append(el("li", {class: "msg-user"}, view.input));
  view.bubble = null;
  view.tools.clear();
  view.cards.clear();
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
      view.bubble = view.bubble || add(el("li", {class: "msg-assistant"}));
      view.bubble.append(event.text);
      break;
    case "message.completed":
      if (!view.bubble && event.text) add(el("li", {class: "msg-assistant"}, event.text));
      view.bubble = null;
      break;
    case "tool_call.requested":
      if (view.tools.has(event.tool_call_id)) break;  // a continuation naming a call of its batch again
      view.tools.set(event.tool_call_id, add(el("li", {class: "tool"},
        "→ ", el("strong", {}, event.name), el("pre", {}, JSON.stringify(event.arguments, null, 2)))));
      break;
    case "tool_call.completed": {
      const item = view.tools.get(event.tool_call_id) || add(el("li", {class: "tool"}, el("strong", {}, event.name)));
      view.tools.set(event.tool_call_id, item);
      item.querySelector(".result")?.remove();
      item.append(el("div", {class: "result"}, event.is_error ? "error: " : "result: ", el("code", {}, String(event.result))));
      break;
    }
    case "policy.decision": {
      const who = event.decided_by ? ` by ${event.decided_by}` : "";
      add(el("li", {class: `policy ${event.verdict}`},
        `policy (${event.point}): ${event.verdict}${who}${event.rule_id ? ` · rule ${event.rule_id}` : ""}`
        + `${event.reason ? ` · ${event.reason}` : ""}`));
      if (event.point === "human") settleCard(view, event.tool_call_id, event.verdict);
      break;
    }
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
      view.bubble = null;
      const error = event.error ? ` · ${event.error.code}: ${event.error.message}` : "";
      const label = event.status === "interrupted" ? "waiting for approval" : event.status;
      add(el("li", {class: `status ${event.status}`, "data-status": event.status}, `turn ${label}${error}`));
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
  const decide = (decision) => guarded(async () => {
    let edited;
    if (decision === "approve" && args.value.trim() !== JSON.stringify(event.arguments, null, 2)) {
      try { edited = JSON.parse(args.value); } catch (error) { throw new Error(`Arguments are not valid JSON: ${error.message}`); }
    }
    card.querySelectorAll("button, textarea").forEach((node) => { node.disabled = true; });
    try {
      await decideApproval(view, event.approval_id, decision, edited);
    } catch (error) {
      card.querySelectorAll("button, textarea").forEach((node) => { node.disabled = false; });
      throw error;
    }
  });
  const approve = el("button", {type: "button"}, "Approve");
  const deny = el("button", {type: "button", class: "deny"}, "Deny");
  approve.addEventListener("click", decide("approve"));
  deny.addEventListener("click", decide("deny"));
  const card = el("li", {class: "approval", "data-approval": event.approval_id},
    el("strong", {}, "Approval needed: "), `${event.name}`, event.reason ? ` · ${event.reason}` : "",
    el("label", {for: id}, "Arguments (edit before approving to change them)"), args,
    el("div", {class: "actions"}, approve, deny));
  return card;
}

function settleCard(view, toolCallId, verdict) {
  const card = view.cards.get(toolCallId);
  if (!card) return;
  card.querySelectorAll("button, textarea").forEach((node) => { node.disabled = true; });
  card.dataset.decided = verdict;
}

async function decideApproval(view, approvalId, decision, args) {
  const body = args === undefined ? {decision} : {decision, arguments: args};
  const response = await api("POST", `/approvals/${approvalId}`, body, "text/event-stream");
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
}

// Follows a turn from the last event drawn, through an EventSource (a browser cannot set its
// headers, hence the stream token). The browser reconnects by itself with Last-Event-ID; once the
// short-lived token is refused the page asks for a new one, a bounded number of times.
async function follow(view, attempts = 5) {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const {token} = await json("POST", `/turns/${view.turnId}/stream-token`);
    const url = `/turns/${view.turnId}/events?access_token=${encodeURIComponent(token)}&after=${view.lastSeq}`;
    const ended = await new Promise((resolve) => {
      const source = new EventSource(url);
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

async function send() {
  const input = $("message").value.trim();
  if (!input || !state.sessionId) return;
  setComposer(false);
  try {
    const response = await api("POST", `/sessions/${state.sessionId}/turns`, {input}, "text/event-stream");
    $("message").value = "";
    let view = null;
    const retry = await readSse(response, (event) => {
      view = view || viewFor(event.turn_id, input);
      onEvent(view, event);
    });
    await finish(view || await startedTurn(input), retry);
  } finally {
    setComposer(true);
    $("message").focus();
  }
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
  $("send").disabled = !enabled;
}

function scrollDown() {
  const transcript = $("transcript");
  transcript.scrollTop = transcript.scrollHeight;
}

document.addEventListener("DOMContentLoaded", () => {
  $("agent-config").value = JSON.stringify(DEMO_CONFIG, null, 2);
  $("token-form").addEventListener("submit", guarded(() => signIn($("token").value)));
  $("local-sign-in").addEventListener("click", guarded(async () => {
    const response = await fetch("/web/local-token", {method: "POST"});
    if (!response.ok) throw await problemOf(response);
    await signIn((await response.json()).token);
  }));
  $("sign-out").addEventListener("click", () => signOut());
  $("agent-select").addEventListener("change", guarded(async (event) => {
    state.agentId = event.target.value;
    store.setItem("agent", state.agentId);
    await loadSessions();
  }));
  $("agent-form").addEventListener("submit", guarded(createAgent));
  $("new-session").addEventListener("click", guarded(createSession));
  $("send-form").addEventListener("submit", guarded(send));
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("send-form").requestSubmit();
    }
  });
  (state.token ? guarded(showWorkspace)() : showSignIn());
});
