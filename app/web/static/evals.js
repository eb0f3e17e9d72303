// The evals page: a run's pass rate per check as bars (<meter>), the baseline's beside it, and its
// items with the reasons of their scores. Same token as the chat page (sessionStorage), no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const token = window.sessionStorage.getItem("token");

async function api(path) {
  const response = await fetch(path, {headers: {Authorization: `Bearer ${token}`, Accept: "application/json"}});
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || `HTTP ${response.status}`);
  return body;
}

function cell(row, text, tag = "td") {
  const element = document.createElement(tag);
  element.textContent = text;
  row.append(element);
  return element;
}

function fixed(value) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(2);
}

function bar(row, rate, label) {
  const td = document.createElement("td");
  const meter = document.createElement("meter");
  Object.assign(meter, {min: 0, max: 1, low: 0.5, high: 0.9, optimum: 1, value: rate ?? 0});
  meter.setAttribute("aria-label", label);
  const figure = document.createElement("span");
  figure.className = "rate";
  figure.textContent = rate === undefined ? " –" : ` ${Math.round(rate * 100)}%`;
  td.append(meter, figure);
  row.append(td);
}

function showChecks(run) {
  const versions = [run.summary.candidate, run.summary.baseline].filter(Boolean);
  const head = $("checks-head");
  head.replaceChildren(head.firstElementChild);
  for (const version of versions) cell(head, `v${version.version}`, "th").scope = "col";
  const body = $("checks").tBodies[0];
  body.replaceChildren();
  const names = [...new Set(versions.flatMap((v) => Object.keys(v.checks)))].sort();
  for (const name of names) {
    const row = body.insertRow();
    cell(row, name, "th").scope = "row";
    for (const version of versions) bar(row, version.checks[name]?.pass_rate, `${name}, v${version.version}`);
  }
  const mean = body.insertRow();
  cell(mean, "mean score", "th").scope = "row";
  for (const version of versions) bar(mean, version.mean_score ?? undefined, `mean score, v${version.version}`);
  $("checks").hidden = false;
  const comparison = run.summary.comparison;
  $("comparison").hidden = !comparison;
  if (comparison) {
    $("comparison").textContent =
      `Against v${run.summary.baseline.version}: ${comparison.wins} better, ${comparison.losses} worse, ${comparison.ties} the same.`;
  }
}

function showItems(items) {
  const body = $("items").tBodies[0];
  body.replaceChildren();
  for (const item of items) {
    const row = body.insertRow();
    cell(row, String(item.position));
    cell(row, `v${item.agent_version}`);
    cell(row, item.turn_status || item.status);
    cell(row, fixed(item.score));
    cell(row, item.scores.filter((s) => s.score < 1).map((s) => `${s.type}: ${s.reason}`).join("; "));
  }
  $("items").hidden = false;
}

async function open(run) {
  $("eval-title").textContent = `Eval ${run.id.slice(0, 8)} · v${run.agent_version}` +
    (run.baseline_version ? ` against v${run.baseline_version}` : "");
  $("eval-status").textContent = `${run.status}, ${run.progress.done} of ${run.progress.total} scored, tools ${run.tools}`;
  showChecks(run);
  showItems((await api(`/evals/${run.id}/items?limit=1000`)).items);
  for (const button of document.querySelectorAll("#runs button")) {
    button.setAttribute("aria-current", String(button.dataset.id === run.id));
  }
}

async function load() {
  if (!token) {
    $("signed-out").hidden = false;
    return;
  }
  $("evals").hidden = false;
  const runs = (await api("/evals")).items;
  const list = $("runs");
  list.replaceChildren();
  for (const run of runs) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.id = run.id;
    button.textContent = `${new Date(run.created_at).toLocaleString()} · v${run.agent_version} · ${fixed(run.summary.candidate.mean_score)}`;
    button.addEventListener("click", () => open(run).catch(fail));
    item.append(button);
    list.append(item);
  }
  if (runs.length) await open(runs[0]);
  else $("eval-status").textContent = "No eval runs yet: POST /evals, or agent-runtime eval run.";
}

function fail(error) {
  $("error").textContent = error.message;
  $("error").hidden = false;
}

load().catch(fail);
