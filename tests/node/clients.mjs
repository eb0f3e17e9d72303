// Drives agent-runtime with the real client libraries: @ag-ui/client's HttpAgent and the AI SDK's
// DefaultChatTransport + readUIMessageStream. Each runs a turn that needs an approval, decides it
// through the normal approvals API, then picks the resumed run up through its own protocol.
// Usage: node clients.mjs BASE_URL AGENT_ID (bearer token in AGENT_RUNTIME_TOKEN); prints one JSON.
// With a third argument, SESSION_ID, each client instead replays that session's latest turn (a turn
// continued after a hand-over) through its own protocol, and reports what it ends up holding.
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [base, agentId, sessionId] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${process.env.AGENT_RUNTIME_TOKEN}` };

async function approve(approvalId) {
  const response = await fetch(`${base}/approvals/${approvalId}`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ decision: "approve" }),
  });
  if (!response.ok) throw new Error(`decision failed: ${response.status} ${await response.text()}`);
  return (await response.json()).status;
}

async function agUi() {
  const agent = new HttpAgent({ url: `${base}/ag-ui/agents/${agentId}`, headers, threadId: `ag-ui-${Date.now()}` });
  const types = [];
  const custom = [];
  let finished = null;
  const subscriber = {
    onEvent: ({ event }) => { types.push(event.type); },
    onCustomEvent: ({ event }) => { custom.push({ name: event.name, value: event.value }); },
    onRunFinishedEvent: (params) => { finished = { outcome: params.outcome, interrupts: params.interrupts, result: params.result }; },
  };
  agent.addMessage({ id: "u1", role: "user", content: "what is 6 times 7?" });
  await agent.runAgent({}, subscriber);
  const first = { types: [...types], custom: [...custom], finished };
  const approval = custom.find((c) => c.name === "approval.required");
  const decided = await approve(approval.value.approval_id);
  types.length = 0;
  finished = null;
  // Decided already through the API; answering the interrupt as AG-UI asks just picks the run up.
  const resume = first.finished.interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { decision: "approve" } }));
  await agent.runAgent({ resume }, subscriber);
  const assistant = agent.messages.filter((m) => m.role === "assistant" && typeof m.content === "string" && m.content);
  return {
    first,
    decided,
    resumed: { types: [...types], finished },
    texts: assistant.map((m) => m.content),
    toolResults: agent.messages.filter((m) => m.role === "tool").map((m) => m.content),
    toolCalls: agent.messages.flatMap((m) => (m.toolCalls || []).map((c) => c.function.name)),
  };
}

async function lastOf(stream, message) {
  let last = message;
  for await (const snapshot of readUIMessageStream({ stream, message, terminateOnError: true })) last = snapshot;
  return last;
}

async function aiSdk() {
  const transport = new DefaultChatTransport({ api: `${base}/ai-sdk/agents/${agentId}/chat`, headers });
  const chatId = `ai-sdk-${Date.now()}`;
  const user = { id: "u1", role: "user", parts: [{ type: "text", text: "what is 6 times 7?" }] };
  const stream = await transport.sendMessages({
    trigger: "submit-message", chatId, messageId: undefined, messages: [user], abortSignal: undefined,
  });
  const summary = (message) => message.parts.map((p) => ({
    type: p.type, text: p.text, state: p.state, output: p.output, input: p.input, id: p.id, data: p.data,
  }));
  const first = await lastOf(stream);
  const firstParts = summary(first);
  const firstMetadata = first.metadata;
  const approval = first.parts.find((p) => p.type === "data-approval");
  const decided = await approve(approval.id);
  const resumedStream = await transport.reconnectToStream({ chatId });
  const resumed = await lastOf(resumedStream, structuredClone(first));
  return { firstId: first.id, resumedId: resumed.id, first: firstParts, firstMetadata, resumed: summary(resumed),
           decided, metadata: resumed.metadata };
}

// A replay through AG-UI: no new user message, so the thread's latest turn is streamed again.
async function agUiReplay() {
  const agent = new HttpAgent({ url: `${base}/ag-ui/agents/${agentId}`, headers, threadId: sessionId });
  const types = [];
  const custom = [];
  await agent.runAgent({}, {
    onEvent: ({ event }) => { types.push(event.type); },
    onCustomEvent: ({ event }) => { custom.push({ name: event.name, value: event.value }); },
  });
  const messages = agent.messages.map((m) => ({
    role: m.role, content: m.content, toolCallId: m.toolCallId, toolCalls: (m.toolCalls || []).map((c) => c.function.name),
  }));
  return { types, custom, messages };
}

// What an app does with `data-turn-resumed` (useChat's onData): remove the parts it names.
function withdraw(parts) {
  const kept = [];
  for (const part of parts) {
    if (part.type !== "data-turn-resumed") { kept.push(part); continue; }
    const { text_parts: texts, tool_call_ids: calls } = part.data.withdrawn;
    const drop = (index) => { if (index >= 0) kept.splice(index, 1); };
    for (const text of texts) drop(kept.findLastIndex((p) => p.type === "text" && p.text === text));
    for (const call of calls) drop(kept.findLastIndex((p) => p.toolCallId === call));
    kept.push(part);
  }
  return kept;
}

async function aiSdkReplay() {
  const transport = new DefaultChatTransport({ api: `${base}/ai-sdk/agents/${agentId}/chat`, headers });
  const message = await lastOf(await transport.reconnectToStream({ chatId: sessionId }));
  const parts = withdraw(message.parts);
  return {
    streamed: message.parts.map((p) => p.type),
    resumed: message.parts.find((p) => p.type === "data-turn-resumed")?.data,
    texts: parts.filter((p) => p.type === "text").map((p) => p.text),
    tools: parts.filter((p) => p.type.startsWith("tool-")).map((p) => ({ type: p.type, state: p.state, output: p.output })),
  };
}

try {
  const report = sessionId
    ? { agUi: await agUiReplay(), aiSdk: await aiSdkReplay() }
    : { agUi: await agUi(), aiSdk: await aiSdk() };
  console.log(JSON.stringify(report));
} catch (error) {
  console.error(error && error.stack ? error.stack : String(error));
  process.exit(1);
}
