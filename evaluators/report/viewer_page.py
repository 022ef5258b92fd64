"""The per-case viewer's page: one HTML document with its CSS and script inline.

It loads the run's cases from `cases.json` on the same server (127.0.0.1) and requests nothing
else: no font, stylesheet, script or image from anywhere, so it works offline. Every text from
the run (replies, reasons, scenario names) is put in the page with textContent, never as markup.
"""

from __future__ import annotations

import html
import json

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>penpal-eval · __RUN__</title>
<style>
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bad: #b3261e; --ok: #1e7b34; --warn: #9a6700;
        --bg: #fff; --soft: #f5f7fa; --pick: #e8f0fe; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       background: var(--bg); }
header { padding: 12px 16px; border-bottom: 1px solid var(--line); }
h1 { font-size: 18px; margin: 0 0 8px; }
.filters { display: flex; flex-wrap: wrap; gap: 12px; }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
select { font: inherit; padding: 3px 6px; min-width: 150px; }
main { display: grid; grid-template-columns: minmax(320px, 38%) 1fr; min-height: calc(100vh - 90px); }
#list { border-right: 1px solid var(--line); overflow: auto; max-height: calc(100vh - 90px); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { position: sticky; top: 0; background: var(--soft); font-size: 12px; }
tbody tr { cursor: pointer; }
tbody tr:hover { background: var(--soft); }
tbody tr.open { background: var(--pick); }
td.num { font-variant-numeric: tabular-nums; }
.kind { display: inline-block; margin: 0 4px 2px 0; padding: 0 5px; border-radius: 3px; font-size: 12px;
        background: #fde7e6; color: var(--bad); }
.kind.missing { background: #fff4d6; color: var(--warn); }
.pass { color: var(--ok); }
#detail { padding: 12px 16px; overflow: auto; max-height: calc(100vh - 90px); }
#count { color: var(--muted); font-size: 12px; padding: 6px 8px; }
.turn { margin: 0 0 18px; }
.user { background: var(--soft); padding: 6px 10px; border-radius: 6px; margin-bottom: 8px; }
.replies { display: grid; gap: 10px; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); }
.reply { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.reply.this { border-color: #4a7bd0; box-shadow: 0 0 0 1px #4a7bd0; }
.reply h3 { margin: 0 0 4px; font-size: 13px; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
.scores { font-size: 12px; color: var(--muted); }
ul { margin: 4px 0; padding-left: 18px; font-size: 12px; }
.judge { font-size: 12px; border-top: 1px dashed var(--line); margin-top: 6px; padding-top: 4px; }
.empty { color: var(--muted); }
</style>
</head>
<body>
<header>
  <h1>penpal-eval · run <span id="run"></span></h1>
  <div class="filters">
    <label>version <select id="f-version"></select></label>
    <label>family <select id="f-family"></select></label>
    <label>flag <select id="f-flag"></select></label>
    <label>failure kind <select id="f-kind"></select></label>
  </div>
</header>
<main>
  <section id="list"><div id="count"></div>
    <table><thead><tr><th>version</th><th>scenario</th><th>family</th><th>overall</th><th>failures</th></tr></thead>
    <tbody id="rows"></tbody></table>
  </section>
  <section id="detail"><p class="empty">Open a case to see its turns, scores, evidence, flags and judge
  reasoning, with the other versions' replies to the same scenario beside it.</p></section>
</main>
<script>
"use strict";
const RUN = __RUN_JSON__;
let DATA = null;
const el = (tag, attrs, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value; else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
};
const num = (value) => (value === null || value === undefined) ? "—" : Number(value).toFixed(2);
const kindOf = (failure) => failure.kind;
const MISSING = new Set(["truncated", "timeout", "transport_error", "scoring_error", "judge_failed", "unscored",
                         "invalid_simulation"]);

function options(select, label, values) {
  select.replaceChildren(el("option", {value: "", text: "all " + label}),
                         ...values.map((value) => el("option", {value, text: value})));
}

function filtered() {
  const pick = (id) => document.getElementById(id).value;
  const [version, family, flag, kind] = ["f-version", "f-family", "f-flag", "f-kind"].map(pick);
  return DATA.cases.filter((c) => (!version || c.version === version) && (!family || c.family === family)
    && (!flag || c.flags.includes(flag)) && (!kind || c.failures.some((f) => kindOf(f) === kind)));
}

function renderList() {
  const shown = filtered();
  document.getElementById("count").textContent = shown.length + " of " + DATA.cases.length + " cases";
  const rows = shown.map((c) => {
    const kinds = el("td", {});
    const seen = [...new Set(c.failures.map((f) => f.label))];
    if (!seen.length) kinds.append(el("span", {class: "pass", text: "passed"}));
    for (const label of seen) {
      const missing = MISSING.has(label.split(":")[0]);
      kinds.append(el("span", {class: missing ? "kind missing" : "kind", text: label}));
    }
    const row = el("tr", {"data-case": c.id}, el("td", {text: c.version}), el("td", {text: c.scenario}),
                   el("td", {text: c.family}), el("td", {class: "num", text: num(c.scores.overall_quality)}), kinds);
    row.addEventListener("click", () => openCase(c.id));
    return row;
  });
  document.getElementById("rows").replaceChildren(...rows);
}

function replyBlock(c, turn, isThis) {
  const box = el("div", {class: isThis ? "reply this" : "reply", "data-version": c.version});
  box.append(el("h3", {text: c.version + (isThis ? " (this case)" : "")}));
  if (!turn) { box.append(el("p", {class: "empty", text: "no reply at this turn"})); return box; }
  box.append(el("p", {class: "text reply-text", text: turn.reply || "(silence)"}));
  const scores = DATA.metrics.map((m) => m.replace(/_/g, " ") + " " + num(turn.scores[m])).join(" · ");
  box.append(el("div", {class: "scores", text: scores}));
  const items = el("ul", {class: "evidence"});
  for (const flag of turn.flags) items.append(el("li", {class: "flag", text: "flag " + flag.name + ": " + flag.text}));
  for (const e of turn.expectations) if (!e.passed)
    items.append(el("li", {text: "expectation failed: " + e.label + " (" + e.detail + ")"}));
  for (const a of turn.assertions) items.append(el("li", {class: "assertion",
    text: "assertion " + (a.passed === true ? "held" : a.passed === false ? "FAILED" : "not verified") + ": "
          + a.assertion + " (" + a.detail + ")" + (a.reasoning ? " — " + a.reasoning : "")}));
  for (const e of turn.evidence) items.append(el("li", {
    text: e.metric.replace(/_/g, " ") + " " + (e.effect >= 0 ? "+" : "") + Number(e.effect).toFixed(2) + " "
          + e.indicator + (e.text ? " — " + e.text : "")}));
  if (items.childElementCount) box.append(items);
  if (turn.judge) {
    const verdict = "judge " + num(turn.judge.overall) + " · " + (turn.judge.verdict || "no verdict")
      + (turn.judge.failure_mode ? ", " + turn.judge.failure_mode : "");
    box.append(el("div", {class: "judge"}, el("strong", {text: verdict}),
                  el("p", {class: "text reasoning", text: turn.judge.reasoning})));
  }
  return box;
}

function openCase(id) {
  const c = DATA.cases.find((item) => item.id === id);
  for (const row of document.querySelectorAll("#rows tr")) row.classList.toggle("open", row.dataset.case === id);
  const others = DATA.versions.filter((v) => v !== c.version)
    .map((v) => DATA.cases.find((item) => item.version === v && item.scenario === c.scenario)).filter(Boolean);
  const detail = document.getElementById("detail");
  const head = el("div", {id: "case-head"}, el("h2", {text: c.scenario + " · " + c.version}),
    el("p", {class: "scores", text: "family " + c.family + (c.safety ? " · safety scenario" : "") + " · overall "
      + num(c.scores.overall_quality) + (c.judge ? " · judge " + num(c.judge.overall) : "")}));
  const failures = el("ul", {id: "case-failures"});
  for (const f of c.failures) failures.append(el("li", {text: f.label + ": " + f.reason}));
  if (c.error) failures.append(el("li", {text: "error: " + c.error}));
  const turns = c.turns.map((turn) => el("div", {class: "turn"},
    el("div", {class: "user"}, el("strong", {text: "user · turn " + (turn.index + 1) + " "}),
       el("span", {class: "text", text: turn.user})),
    el("div", {class: "replies"}, replyBlock(c, turn, true),
       ...others.map((o) => replyBlock(o, o.turns.find((t) => t.index === turn.index && t.user === turn.user)
                                          || o.turns.find((t) => t.index === turn.index), false)))));
  detail.replaceChildren(head, failures, ...turns);
}

async function start() {
  document.getElementById("run").textContent = RUN;
  DATA = await (await fetch("cases.json")).json();
  const unique = (values) => [...new Set(values)].sort();
  options(document.getElementById("f-version"), "versions", DATA.versions);
  options(document.getElementById("f-family"), "families", unique(DATA.cases.map((c) => c.family)));
  options(document.getElementById("f-flag"), "flags", unique(DATA.cases.flatMap((c) => c.flags)));
  options(document.getElementById("f-kind"), "failure kinds", unique(DATA.cases.flatMap((c) => c.failures.map(kindOf))));
  for (const id of ["f-version", "f-family", "f-flag", "f-kind"])
    document.getElementById(id).addEventListener("change", renderList);
  renderList();
  document.body.dataset.ready = "true";
}
start();
</script>
</body>
</html>
"""


def render_page(run_id: str) -> str:
    """The page for one run; the run id is the only value written into it (as JSON and as escaped text)."""
    return (PAGE.replace("__RUN_JSON__", json.dumps(run_id).replace("<", "\\u003c"))
            .replace("__RUN__", html.escape(run_id)))
