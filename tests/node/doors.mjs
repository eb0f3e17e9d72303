// Drives agent-runtime's MCP and A2A doors with the real JavaScript clients: @modelcontextprotocol/sdk's
// Client over StreamableHTTPClientTransport and @a2a-js/sdk's ClientFactory over JSON-RPC. Each lists or
// reads the agent, runs a turn that stops at a gated call, gets the approval in its own protocol,
// answers it and reads the result.
// Usage: node doors.mjs BASE_URL AGENT_ID TOOL_NAME (bearer token in AGENT_RUNTIME_TOKEN); prints one JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";

const [base, agentId, toolName] = process.argv.slice(2);
const token = process.env.AGENT_RUNTIME_TOKEN;
const headers = { Authorization: `Bearer ${token}` };

function authFetch(url, init = {}) {
  const merged = new Headers(init.headers);
  merged.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers: merged });
}

async function approve(url) {
  const response = await fetch(url, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json", Accept: "application/json", Prefer: "respond-async" },
    body: JSON.stringify({ decision: "approve" }),
  });
  if (!response.ok) throw new Error(`decision failed: ${response.status} ${await response.text()}`);
  return response.status;
}

async function mcp() {
  const client = new Client({ name: "doors-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } });
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => ({ name: t.name, required: t.inputSchema.required }));
  const session = `js-${Date.now()}`;
  const progress = [];
  const args = { input: "what is 6 times 7?", session };
  const first = await client.callTool({ name: toolName, arguments: args }, undefined, {
    onprogress: (p) => progress.push(p.message),
  });
  const approvals = first.structuredContent.approvals;
  const decided = await approve(approvals[0].url);
  const second = await client.callTool({ name: toolName, arguments: args }, undefined, {
    onprogress: (p) => progress.push(p.message),
  });
  await client.close();
  return {
    tools, decided, progress,
    first: { status: first.structuredContent.status, turnId: first.structuredContent.turn_id, approvals },
    second: { text: second.content[0].text, isError: second.isError ?? false, structured: second.structuredContent },
  };
}

function textOf(message) {
  return (message?.parts || []).filter((p) => p.kind === "text").map((p) => p.text).join("");
}

async function a2a() {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
  });
  const client = await new ClientFactory(options).createFromUrl(`${base}/a2a/${agentId}/.well-known/agent-card.json`, "");
  const contextId = `js-${Date.now()}`;
  const message = { kind: "message", role: "user", messageId: `m-${Date.now()}`, contextId,
                    parts: [{ kind: "text", text: "what is 6 times 7?" }] };
  const streamed = [];
  let taskId = null;
  for await (const event of client.sendMessageStream({ message })) {
    taskId ??= event.kind === "task" ? event.id : event.taskId;
    streamed.push({ kind: event.kind, state: event.status?.state, final: event.final, text: textOf(event.status?.message),
                    data: event.status?.message?.parts?.find((p) => p.kind === "data")?.data });
  }
  const waiting = streamed[streamed.length - 1];
  const decisions = waiting.data.approvals.map((a) => ({ approval_id: a.approval_id, decision: "approve" }));
  const answer = { kind: "message", role: "user", messageId: `m2-${Date.now()}`, contextId, taskId,
                   parts: [{ kind: "data", data: { decisions } }] };
  const done = await client.sendMessage({ message: answer });
  const fetched = await client.getTask({ id: taskId });
  const replayed = [];
  for await (const event of client.resubscribeTask({ id: taskId })) {
    replayed.push({ kind: event.kind, state: event.status?.state, final: event.final, text: textOf(event.status?.message) });
  }
  let cancelError = null;
  try { await client.cancelTask({ id: taskId }); } catch (error) { cancelError = { name: error.name, message: error.message }; }
  return {
    streamed, taskId,
    done: { kind: done.kind, state: done.status?.state, answer: textOf(done.artifacts?.[0]) },
    fetched: { state: fetched.status.state, contextId: fetched.contextId },
    replayed, cancelError,
  };
}

const report = { mcp: await mcp(), a2a: await a2a() };
console.log(JSON.stringify(report));
