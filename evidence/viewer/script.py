"""The viewer's one script: the rollouts table and the rollout page, drawn from the index and the detail files.

Plain ES2017, no library. It builds every element with ``createElement`` and puts every value
in with ``textContent`` or a text node: no ``innerHTML``, no ``eval``, no string that a browser
parses as markup, so a row's ``<script>`` is text on the page (``tests/evidence/viewer``
holds the source to that). Links it makes are its own: ``#...`` routes and the run's files,
whose names it encodes. Its state is the address's fragment (``#verdict=unhealthy&sort=-reward``,
``#line=18&at=turn-0``; ``#id=4-0``, the report's link to a rollout, opens the one row with that
rollout id), so the back button, a bookmark and a copied link all work. The page's
Content-Security-Policy allows this script by its hash, and the detail files because it
inserts them (``'strict-dynamic'``).
"""

from __future__ import annotations

__all__ = ["SCRIPT"]

SCRIPT = r"""(function () {
"use strict";
var data = JSON.parse(document.getElementById("viewer-index").textContent);
var F = {};
data.fields.forEach(function (name, i) { F[name] = i; });
var rows = data.rows, codes = data.codes, links = data.links, PAGE = 100, ANY = "\u0000any";
var byLine = {};
rows.forEach(function (row, n) { byLine[row[F.line]] = n; });
var loaded = {}, waiting = {}, lastList = "", order = null;
var app = document.getElementById("app");
Object.defineProperty(window, "evidenceViewer", {value: Object.freeze({chunk: function (k, list) {
  loaded[k] = list;
  (waiting[k] || []).forEach(function (done) { done(); });
  delete waiting[k];
}})});

/* Elements: every value goes in as a text node or an attribute value, never as markup. */
function h(tag, props, children) {
  var e = document.createElement(tag);
  Object.keys(props || {}).forEach(function (key) {
    var value = props[key];
    if (value === null || value === undefined) return;
    if (key === "class") e.className = value;
    else if (key === "onchange") e.addEventListener("change", value);
    else e.setAttribute(key, String(value));
  });
  add(e, children);
  return e;
}
function add(e, c) {
  if (c === null || c === undefined) return;
  if (Array.isArray(c)) c.forEach(function (x) { add(e, x); });
  else if (typeof c === "object") e.appendChild(c);
  else e.appendChild(document.createTextNode(String(c)));
}
function replace(content) {
  while (app.firstChild) app.removeChild(app.firstChild);
  add(app, content);
}
function muted(content) { return h("p", {class: "muted"}, content); }
function shown(value) { return value === null || value === undefined || value === "" ? "(none)" : String(value); }
function flat(value) { return value === null || value === undefined ? "" : Array.isArray(value) ? value[0] + "\u2026" : String(value); }
function clip(value) { var s = String(value); return s.length > 48 ? s.slice(0, 47) + "\u2026" : s; }
/* A value from a row, isolated (bidi) from the text around it. */
function v(value) { return h("span", {class: "v"}, shown(value)); }
function vs(values, sep) {
  return values.map(function (x, i) { return [i ? sep : "", h("span", {class: "v"}, breakable(x))]; });
}
/* snake_case codes may wrap after each underscore */
function breakable(value) {
  return String(value).split("_").map(function (part, i, parts) { return i < parts.length - 1 ? [part + "_", h("wbr")] : part; });
}
function num(value, digits) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "number") return String(value);
  var parts = (Number.isInteger(value) ? String(value) : value.toFixed(digits === undefined ? 2 : digits)).split(".");
  parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return parts.join(".");
}
function ms(value) { return value === null || value === undefined ? "" : num(value, 0) + " ms"; }
function when(seconds) {
  var d = new Date(seconds * 1000);
  if (typeof seconds !== "number" || isNaN(d.getTime())) return shown(seconds);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}
/* An excerpt: the text, or [its start, its length] when the row holds more. */
function text(value, where) {
  if (value === null || value === undefined) return null;
  if (!Array.isArray(value)) return h("pre", {class: "v"}, value);
  return h("div", {class: "excerpt"}, [h("pre", {class: "v"}, value[0]),
    muted("\u2026 the first " + num(value[0].length) + " of " + num(value[1]) + " characters; all of it is in " + where + ".")]);
}
function code(field, row) { return codes[field][row[F[field]]]; }
function codeList(field, row) { return row[F[field]].map(function (i) { return codes[field][i]; }); }
function key(value) { return value === null ? "" : String(value); }
function tokens(row) {
  var p = row[F.prompt_tokens], c = row[F.completion_tokens];
  return p === null && c === null ? null : (p || 0) + (c || 0);
}
function params() { return new URLSearchParams(location.hash.replace(/^#/, "")); }
function route(p) { return "#" + p.toString(); }
function go(change) { var q = params(); q.delete("page"); change(q); location.hash = route(q); }

/* The rollouts table: filters, sorting and pages, all in the address's fragment. */
var FILTERS = [["verdict", "Verdict"], ["agent", "Agent"], ["check", "Check", "checks"], ["gap", "Gap", "gaps"],
  ["status", "Status"], ["atif", "ATIF"]];
var SORTS = {line: function (r) { return r[F.line]; }, reward: function (r) { return r[F.reward]; }, tokens: tokens,
  latency: function (r) { return r[F.latency_ms]; }, turns: function (r) { return r[F.turns]; },
  findings: function (r) { return r[F.findings]; }};

function matches(row, p) {
  for (var i = 0; i < FILTERS.length; i++) {
    var name = FILTERS[i][0], list = FILTERS[i][2];
    if (!p.has(name)) continue;
    var values = list ? codeList(list, row) : [code(name, row)];
    if (values.map(key).indexOf(p.get(name)) < 0) return false;
  }
  var q = p.get("q");
  return (!q || String(row[F.rollout_id] || "").indexOf(q) >= 0) && (!p.has("id") || key(row[F.rollout_id]) === p.get("id"));
}
function selected(p) {
  var found = [];
  rows.forEach(function (row, n) { if (matches(row, p)) found.push(n); });
  var sort = p.get("sort") || "line", down = sort.charAt(0) === "-", by = SORTS[sort.replace(/^-/, "")] || SORTS.line;
  found.sort(function (a, b) {  /* rollouts without the value last, ties in file order */
    var x = by(rows[a]), y = by(rows[b]);
    if (x === null || x === undefined) return y === null || y === undefined ? a - b : 1;
    if (y === null || y === undefined) return -1;
    return x === y ? a - b : (x < y ? -1 : 1) * (down ? -1 : 1);
  });
  return found;
}
function counts(field, list) {
  var seen = {};
  rows.forEach(function (row) {
    (list ? row[F[list]] : [row[F[field]]]).forEach(function (i) { seen[i] = (seen[i] || 0) + 1; });
  });
  return seen;
}
function filterBox(p, filter) {
  var name = filter[0], list = filter[2], seen = counts(name, list);
  var select = h("select", {id: "filter-" + name, name: name, onchange: function () {
    go(function (q) { if (select.value === ANY) q.delete(name); else q.set(name, select.value); });
  }}, h("option", {value: ANY}, "(any)"));
  codes[list || name].forEach(function (value, i) {
    if (seen[i]) select.appendChild(h("option", {value: key(value)}, shown(value) + " (" + seen[i] + ")"));
  });
  select.value = p.has(name) ? p.get(name) : ANY;
  return h("label", null, [filter[1] + " ", select]);
}
function sortHeader(p, by, label) {
  var sort = p.get("sort") || "line", on = sort.replace(/^-/, "") === by, down = sort.charAt(0) === "-";
  var q = params();
  q.set("sort", on ? (down ? by : "-" + by) : (by === "line" ? by : "-" + by));  /* numbers start high first */
  q.delete("page");
  return h("th", {class: "sortable", "data-sort": by, "aria-sort": on ? (down ? "descending" : "ascending") : null},
    h("a", {href: route(q)}, label + (on ? (down ? " \u2193" : " \u2191") : "")));
}
function pageRoute(page) { var q = params(); q.set("page", String(page)); return route(q); }

function showList(p) {
  lastList = location.hash || "#";
  order = selected(p);
  var pages = Math.max(1, Math.ceil(order.length / PAGE));
  var page = Math.min(Math.max(0, parseInt(p.get("page") || "0", 10) || 0), pages - 1), first = page * PAGE;
  var verdicts = counts("verdict");
  var chips = codes.verdict.map(function (value, i) {
    if (!verdicts[i]) return null;
    var q = new URLSearchParams();
    q.set("verdict", key(value));
    return h("a", {class: "verdict", href: route(q), "data-verdict": shown(value)},
      [h("span", {class: "count"}, num(verdicts[i])), shown(value)]);
  });
  var body = h("tbody");
  order.slice(first, first + PAGE).forEach(function (n) { body.appendChild(listRow(rows[n])); });
  var th = function (label) { return h("th", null, label); };
  var head = h("tr", null, [sortHeader(p, "line", "Line"), th("Rollout"), th("Task / rollout"), th("Agent"), th("Status"),
    th("Verdict"), sortHeader(p, "findings", "Findings"), th("Gaps"), th("ATIF"), sortHeader(p, "reward", "Reward"),
    sortHeader(p, "latency", "Latency"), sortHeader(p, "tokens", "Tokens"), sortHeader(p, "turns", "Turns"), th("Calls / tools")]);
  var search = h("input", {id: "filter-q", type: "search", placeholder: "rollout id contains", value: p.get("q") || ""});
  search.addEventListener("change", function () { go(function (q) { if (search.value) q.set("q", search.value); else q.delete("q"); }); });
  var clear = new URLSearchParams();
  if (p.has("sort")) clear.set("sort", p.get("sort"));
  replace([
    h("h1", null, "Rollouts"),
    muted(["Every main attempt of this run, " + num(rows.length) + " in all. ", h("a", {href: links.report}, "Run report"),
      " \u00b7 ", h("a", {href: links.rollouts}, "rollouts.jsonl")]),
    h("div", {class: "verdicts"}, chips),
    h("div", {class: "filters"}, [FILTERS.map(function (f) { return filterBox(p, f); }), h("label", null, ["Rollout id ", search]),
      h("a", {href: route(clear), id: "clear-filters"}, "clear filters")]),
    h("p", {id: "match-count"}, num(order.length) + " of " + num(rows.length) + " rollouts match; rows " +
      (order.length ? first + 1 : 0) + "\u2013" + Math.min(order.length, first + PAGE) + "."),
    h("div", {class: "wide"}, h("table", {id: "rollouts"}, [h("thead", null, head), body])),
    h("p", {class: "pager"}, [page > 0 ? h("a", {href: pageRoute(page - 1), id: "previous-page"}, "\u2190 previous") : null,
      " page " + (page + 1) + " of " + pages + " ",
      page + 1 < pages ? h("a", {href: pageRoute(page + 1), id: "next-page"}, "next \u2192") : null])]);
}
function listRow(row) {
  var line = row[F.line], open = "#line=" + line, verdict = code("verdict", row), agent = shown(code("agent", row));
  var cell = function (content, cls) { return h("td", cls ? {class: cls} : null, content); };
  var tr = h("tr", {"data-line": line, "data-verdict": shown(verdict)}, [
    cell(h("a", {href: open}, String(line)), "num"),
    cell(h("a", {href: open, class: "v rollout-link", title: shown(row[F.rollout_id])}, clip(shown(row[F.rollout_id])))),
    cell([v(clip(shown(row[F.task]))), " / ", v(clip(shown(row[F.rollout])))]),
    h("td", {class: "v", title: agent}, breakable(clip(agent))),
    cell(clip(shown(code("status", row)))),
    cell(h("span", {class: "badge", "data-verdict": shown(verdict)}, clip(shown(verdict)))),
    cell(row[F.findings] ? [num(row[F.findings]) + ": ", vs(codeList("checks", row).map(clip), ", ")] : ""),
    cell(vs(codeList("gaps", row).map(clip), ", ")),
    cell(clip(shown(code("atif", row)))),
    cell(num(row[F.reward], 3), "num"), cell(ms(row[F.latency_ms]), "num"), cell(num(tokens(row)), "num"),
    cell(num(row[F.turns]), "num"), cell(num(row[F.model_calls]) + " / " + num(row[F.tool_calls]), "num")]);
  tr.addEventListener("click", function (event) { if (!event.target.closest("a")) location.hash = open; });
  return tr;
}

/* Detail files: one script element each, loaded when a rollout of it is opened (browsers refuse fetch of file://). */
function chunkOf(n) {
  var lo = 0, hi = data.chunks.length - 1;
  while (lo < hi) {
    var mid = (lo + hi + 1) >> 1;
    if (data.chunks[mid] <= n) lo = mid; else hi = mid - 1;
  }
  return lo;
}
function withDetail(n, done) {
  var k = chunkOf(n), ready = function () { done(loaded[k][n - data.chunks[k]]); };
  if (loaded[k]) return ready();
  if (waiting[k]) { waiting[k].push(ready); return; }
  waiting[k] = [ready];
  var script = document.createElement("script");
  script.src = data.chunk_files[k];
  script.onerror = function () {
    delete waiting[k];
    replace([h("h1", null, "Rollout"), h("p", {class: "warning", id: "load-error"}, "Could not load " + data.chunk_files[k] +
      ", the detail file of this rollout. The viewer's files must sit together: open viewer/index.html from the run " +
      "directory (on disk, or through a static file server), not from a link to that one file.")]);
  };
  document.head.appendChild(script);
}

/* The rollout page. */
function showRollout(p) {
  var line = parseInt(p.get("line"), 10), n = byLine[line];
  if (n === undefined) {
    replace([h("h1", null, "Rollout"), h("p", {class: "warning"}, "No main rollout at line " + p.get("line") + ".")]);
    return;
  }
  replace(muted("Loading rollout\u2026"));
  withDetail(n, function (d) {
    if (params().get("line") !== String(line)) return;
    replace(rolloutPage(n, d));
    var at = p.get("at"), target = at && document.getElementById(at);
    if (target) { target.classList.add("focus"); target.scrollIntoView({block: "start"}); } else window.scrollTo(0, 0);
  });
}
function targetId(t) { return ({turn: "turn-", model_call: "call-", tool_call: "tool-"})[t[0]] + t[1]; }
function targetText(t, d) {
  if (t[0] === "turn") return "turn " + shown(d.turns[t[1]].turn_no) + " (#" + t[1] + ")";
  return (t[0] === "model_call" ? "model call #" : "tool call #") + t[1];
}
function section(title, id, content) { return h("section", {id: "section-" + id}, [h("h2", null, title), content]); }
function dl(facts) {
  var kept = facts.filter(function (f) {
    return f[1] !== null && f[1] !== undefined && f[1] !== "" && !(Array.isArray(f[1]) && !f[1].length);
  });
  return h("dl", null, kept.map(function (f) { return [h("dt", null, f[0]), h("dd", {class: "v"}, f[1])]; }));
}
function table(headers, body) {
  return h("table", null, [h("thead", null, h("tr", null, headers.map(function (x) { return h("th", null, x); }))),
    h("tbody", null, body.map(function (r) { return h("tr", null, r.map(function (c) { return h("td", {class: "v"}, shown(c)); })); }))]);
}
function rolloutPage(n, d) {
  var line = d.line, here = order && order.indexOf(n) >= 0 ? order : rows.map(function (r, i) { return i; }), at = here.indexOf(n);
  var step = function (to, label) {
    return to >= 0 && to < here.length ? h("a", {href: "#line=" + rows[here[to]][F.line], id: label}, label) : null;
  };
  var marks = {};
  d.findings.forEach(function (f, i) {
    (f.targets || []).forEach(function (t) { (marks[targetId(t)] = marks[targetId(t)] || []).push(i); });
  });
  var flags = function (id) {  /* the findings about one turn, model call or tool call, shown on it */
    return (marks[id] || []).map(function (i) {
      var f = d.findings[i];
      return h("p", {class: "flag", "data-check": f.check}, [h("strong", {class: "v"}, f.check), ": ", v(flat(f.detail))]);
    });
  };
  var callsOf = function (turn) { return d.model_calls.filter(function (c) { return c.turn === turn; }); };
  var toolsOf = function (turn) { return d.tool_calls.filter(function (t) { return t.turn === turn; }); };
  var findings = d.findings.map(function (f, i) {
    var where = f.targets === null ? "the rollout" : !f.targets.length ? ["nothing in the trajectory matches ", v(flat(f.locator))]
      : f.targets.map(function (t, j) {
        return [j ? ", " : "", h("a", {href: "#line=" + line + "&at=" + targetId(t), class: "to-subject"}, targetText(t, d))];
      });
    return h("li", {class: "finding", id: "finding-" + i, "data-check": f.check},
      [h("strong", {class: "v"}, f.check), f.subject ? " (" + f.subject + ")" : "", ": ", v(flat(f.detail)), " \u2014 at ", where]);
  });
  var gaps = d.gaps.map(function (g) {
    return [g.origin, g.code, g.meaning || "not a code of the gap registry", g.invocation, flat(g.detail)];
  });
  return [
    h("p", {class: "nav"}, [h("a", {href: lastList || "#", id: "back"}, "\u2190 rollouts"), " ", step(at - 1, "previous"), " ",
      step(at + 1, "next"), " ", h("span", {class: "muted"}, "(" + (at + 1) + " of " + here.length + ")")]),
    h("h1", null, ["Rollout ", v(d.rollout_id), " ", h("span", {class: "badge", id: "verdict", "data-verdict": shown(d.verdict)},
      shown(d.verdict))]),
    d.readable ? null : h("div", {class: "warning"}, ["This line of rollouts.jsonl is no JSON object; its start:",
      text(d.unreadable_line, "rollouts.jsonl")]),
    section("Identity", "identity", dl(identityFacts(d))),
    section("Evidence files", "files", dl(fileFacts(d))),
    section("Verdict: " + shown(d.verdict), "findings", [findings.length ? h("ol", null, findings) : muted("No findings."),
      d.unobserved.length ? muted(["Not observable on this row: ", vs(d.unobserved, ", ")]) : null]),
    section("Gaps", "gaps", gaps.length ? table(["Where", "Code", "Meaning", "Invocation", "Detail"], gaps) : muted("None.")),
    section("Turns", "turns", d.turns.length ? d.turns.map(function (t) {
      return turnBox(t, callsOf(t.index), toolsOf(t.index), flags);
    }) : muted("No turns.")),
    callsOf(null).length || toolsOf(null).length ? section("Calls on no turn", "unplaced",
      [callTable(callsOf(null), flags), toolsOf(null).map(function (t) { return toolBox(t, flags); })]) : null];
}
function identityFacts(d) {
  var ident = d.identity, perf = d.perf;
  return [["Rollout id", d.rollout_id], ["Task id", ident.task_id],
    ["Task / rollout index", shown(ident.task_index) + " / " + shown(ident.rollout_index)],
    ["Attempt index", ident.attempt_index], ["Stage index", ident.stage_index], ["Agent", ident.agent],
    ["Environment server", ident.environment_server], ["Attempt", d.key],
    ["Status", [d.status, d.reason ? [": ", v(flat(d.reason))] : ""]], ["Notes", vs(d.notes.map(flat), "; ")],
    ["Repaired capture", d.repaired ? "yes" : null], ["Failure class", ident.failure_class], ["Reward", num(ident.reward, 3)],
    ["Resolved", ident.resolved === null ? null : String(ident.resolved)], ["Latency", ms(perf.perf_total_latency_ms)],
    ["Tokens (prompt / completion)", num(perf.perf_prompt_tokens) + " / " + num(perf.perf_completion_tokens)],
    ["Turns, model calls, tool calls", d.turns.length + ", " + d.model_calls.length + ", " + d.tool_calls.length +
      (d.has_trajectory ? "" : " (no ng_trajectory)")]];
}
function fileFacts(d) {
  var atif = d.atif, capture = d.capture;
  var atifFact = atif.status === "exported" ? h("a", {href: links.atif + encodeURIComponent(atif.file || ""), id: "atif-link"},
    "atif/" + (atif.file || ""))
    : atif.status === "refused" ? h("span", {id: "atif-refusal"}, ["refused: ", v(flat(atif.refusal))])
    : h("span", {id: "atif-withheld"}, shown(atif.status) + " (no file: the all-or-nothing export failed, see atif/error.txt)");
  return [["Enriched row", [h("a", {href: links.rollouts, id: "row-link"}, "rollouts.jsonl"), ", line " + d.line]],
    ["Input row", [v(d.shard_file || "rollouts file"), ", line " + d.input_line]], ["ATIF", atifFact],
    ["Capture file", d.capture_file ? [v(d.capture_file), " in the job's capture directory (params.json: capture_dir)"]
      : "(no rollout id: no capture file)"],
    ["Captured calls", capture.calls === null ? "(no ng_model_call_capture)"
      : [num(capture.calls), capture.gaps.length ? ["; gaps: ", vs(capture.gaps, ", ")] : ""]]];
}
function turnBox(t, calls, tools, flags) {
  var id = "turn-" + t.index;
  return h("div", {class: "turn", id: id}, [
    h("h3", null, "Turn " + shown(t.turn_no) + " (#" + t.index + ")"),
    muted(["invocation ", v(t.invocation), " \u00b7 " + when(t.timestamp) + " \u00b7 steps " + shown(t.steps) +
      " \u00b7 resolved " + shown(t.resolved) + " \u00b7 model call references: " + shown(t.refs)]),
    flags(id),
    t.question !== null ? [h("h4", null, "Question"), text(t.question, "rollouts.jsonl")] : null,
    t.reasoning !== null ? [h("h4", null, "Reasoning"), text(t.reasoning, "rollouts.jsonl")] : null,
    h("h4", null, "Answer"), t.answer !== null ? text(t.answer, "rollouts.jsonl") : muted("(none)"),
    callTable(calls, flags), tools.map(function (x) { return toolBox(x, flags); })]);
}
function callTable(calls, flags) {
  if (!calls.length) return null;
  var head = ["Model call", "Model", "Status", "Tokens in / out / reasoning / cached", "Duration", "Errors"];
  return h("table", {class: "calls"}, [h("thead", null, h("tr", null, head.map(function (x) { return h("th", null, x); }))),
    h("tbody", null, calls.map(function (c) { return callRows(c, flags); }))]);
}
function callRows(c, flags) {
  var id = "call-" + c.index;
  var status = [c.status_code, c.response_status, c.finish_reason].filter(function (x) { return x !== null; }).join(" ");
  var errors = [c.error_category, c.upstream_status_code !== null ? "upstream " + c.upstream_status_code : null,
    flat(c.local_reason) || null, flat(c.error) || null].filter(function (x) { return x; });
  var used = [c.prompt_tokens, c.completion_tokens, c.reasoning_tokens, c.cached_tokens].map(function (x) {
    return x === null ? "-" : num(x);
  });
  return [h("tr", {id: id, class: c.successful ? "call" : "call failed"}, [
    h("td", null, ["#" + c.index + " ", v(c.id), c.owned ? "" : " (unowned)"]),
    h("td", null, [v(c.model), c.server ? [" via ", v(c.server)] : ""]),
    h("td", null, [c.successful ? "ok " : "failed ", v(status)]),
    h("td", {class: "num"}, used.join(" / ")),
    h("td", {class: "num"}, ms(c.duration_ms) + (c.ttft_ms !== null ? " (first token " + ms(c.ttft_ms) + ")" : "")),
    h("td", null, vs(errors, "; "))]),
    flags(id).length ? h("tr", {class: "flags"}, h("td", {colspan: "6"}, flags(id))) : null];
}
function toolBox(t, flags) {
  var id = "tool-" + t.index;
  return h("div", {class: "tool" + (t.status && t.status !== "completed" ? " failed" : ""), id: id}, [
    h("h4", null, ["Tool call #" + t.index + " ", v(t.name)]),
    muted([v(t.status), t.error_type ? [" (", v(t.error_type), ")"] : "", " \u00b7 ", ms(t.duration_ms) || "no duration",
      " \u00b7 id ", v(t.id), t.call !== null ? " \u00b7 asked for by model call #" + t.call : " \u00b7 no captured call asked for it",
      t.sandbox ? [" \u00b7 sandbox ", v(t.sandbox)] : ""]),
    flags(id),
    h("div", {class: "io"}, [
      h("div", null, [h("h5", null, "Arguments"),
        t.arguments !== null ? text(t.arguments, "rollouts.jsonl (ng_model_call_capture)") : muted("(not captured)")]),
      h("div", null, [h("h5", null, "Output"), t.output !== null ? text(t.output, "rollouts.jsonl") : muted("(none)")])])]);
}

/* #id=<rollout id> (the report's links): that rollout when one row has the id, else the rows that have it. */
function show() {
  var p = params(), found = p.has("id") && !p.has("line") ? selected(p) : [];
  if (found.length === 1) location.replace("#line=" + rows[found[0]][F.line]);
  else if (p.has("line")) showRollout(p);
  else showList(p);
}
window.addEventListener("hashchange", show);
show();
document.documentElement.setAttribute("data-ready", "true");
performance.mark("evidence-viewer-ready");
})();
"""
