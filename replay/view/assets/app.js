// traj view: the browser side. Everything shown comes from a trace an agent
// wrote, so nothing here ever parses text as HTML: every node is built with
// createElement and every string goes in through textContent or an
// attribute. The server's Content-Security-Policy forbids inline script and
// style as a second wall.
"use strict";

(function () {
  const ROW = 26;        // timeline row height (px), as in app.css
  const PAGE = 200;      // timeline rows fetched at once
  const POLL_MS = 2000;  // how often an open page looks for new parts
  const SVGNS = "http://www.w3.org/2000/svg";
  // Suite and trajectory colours; red and green are kept for the marks
  // (regression, first pass), so no line is mistaken for one.
  const COLORS = ["#2f6fd6", "#d9822b", "#7a3fb8", "#0f8b8d", "#8c6d1f", "#d6336c", "#495057", "#5c7cfa", "#e8590c", "#1098ad", "#ae3ec9", "#5f3dc4"];

  // el builds an element: el("td", {class: "num"}, "text", child…).
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "onclick") e.addEventListener("click", v);
      else if (k === "oninput") e.addEventListener("input", v);
      else if (k === "onchange") e.addEventListener("change", v);
      else if (k === "onkeydown") e.addEventListener("keydown", v);
      else e.setAttribute(k, String(v));
    }
    for (const k of kids) add(e, k);
    return e;
  }
  function add(parent, ...ks) {
    for (const k of ks) {
      if (k === undefined || k === null || k === false) continue;
      if (Array.isArray(k)) { add(parent, ...k); continue; }
      parent.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return parent;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "onclick") e.addEventListener("click", v);
      else e.setAttribute(k, String(v));
    }
    for (const k of kids) {
      if (typeof k === "string") e.appendChild(document.createTextNode(k));
      else if (k) e.appendChild(k);
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

  async function api(path) {
    const r = await fetch(path, { credentials: "same-origin", cache: "no-store" });
    const body = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
    if (!r.ok) throw new Error(body.error || (r.status + " " + r.statusText));
    return body;
  }
  const enc = encodeURIComponent;

  function prettyJSON(s) { try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s; } }
  // gapPts is a public − fresh gap in signed percentage points.
  function gapPts(x) { return (x > 0 ? "+" : "") + (100 * x).toFixed(1) + " pts"; }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%"; }
  // srcName says where a score comes from: a stored evaluation, traj's
  // ground truth during the run, or (only when neither exists) the agent's
  // own run_tests calls.
  const SOURCES = { evaluation: "evaluation", ground_truth: "ground truth", run_tests: "agent's run_tests" };
  function srcName(s) { return s ? SOURCES[s] || s : "–"; }
  function money(x) { return x === null || x === undefined ? "–" : "$" + x.toFixed(x < 1 ? 4 : 2); }
  function dur(s) {
    if (s === null || s === undefined) return "–";
    if (s < 60) return s.toFixed(0) + "s";
    if (s < 3600) return (s / 60).toFixed(1) + "m";
    return (s / 3600).toFixed(1) + "h";
  }
  function clock(ms) {
    if (!ms) return "";
    return new Date(ms).toISOString().substring(11, 19);
  }
  function kilo(x) { return x >= 1e6 ? (x / 1e6).toFixed(1) + "M" : x >= 1e3 ? (x / 1e3).toFixed(1) + "k" : String(x); }
  function num(x) { return x === null || x === undefined ? "–" : x.toLocaleString("en-US"); }
  function status(text) { document.getElementById("status").textContent = text || ""; }
  function crumbs(...parts) {
    const c = clear(document.getElementById("crumbs"));
    parts.forEach((p, i) => { if (i) add(c, " / "); add(c, p); });
  }
  // lineageLine says where a trajectory came from (a fork or a rerun);
  // the source is a link when the store holds it. With id, a fork's line
  // also links to the compare page of the fork and its source.
  function lineageLine(l, id) {
    if (!l) return null;
    const src = l.in_store ? el("a", { href: "#/t/" + enc(l.source), class: "lineage-source" }, l.source) : el("b", { class: "lineage-source" }, l.source);
    const where = l.store ? " in " + l.store : "";
    if (l.kind === "fork") {
      return el("div", { class: "lineage", "data-kind": "fork", "data-source": l.source, "data-part": l.part }, "forked from ", src, where, " at part " + l.part,
        id && l.in_store ? [" · ", el("a", { href: "#/compare?ids=" + enc(l.source) + "," + enc(id), class: "lineage-compare" }, "compare with its source")] : null);
    }
    return el("div", { class: "lineage", "data-kind": "rerun", "data-source": l.source }, "rerun of ", src, where,
      l.rerun ? el("span", { class: "rerun-summary" }, ": " + l.rerun) : null);
  }
  function endBadge(s) {
    const cls = s.running ? "badge running" : (s.end_reason === "solved" ? "badge solved" : "badge");
    return el("span", { class: cls }, s.end_reason || "–");
  }

  // ---------- routing ----------
  let page = null; // the current page's stop function
  function route() {
    if (page) { page(); page = null; }
    const h = location.hash.replace(/^#/, "") || "/";
    const [path, query] = h.split("?");
    const q = new URLSearchParams(query || "");
    const app = clear(document.getElementById("app"));
    app.className = "";
    status("");
    const seg = path.split("/").filter(Boolean).map(decodeURIComponent);
    if (seg[0] === "t" && seg[1]) page = trajectoryPage(app, seg[1], parseInt(seg[2] || q.get("part") || "0", 10), q.get("tab"));
    else if (seg[0] === "compare") page = comparePage(app, (q.get("ids") || "").split(",").filter(Boolean));
    else page = storePage(app);
  }
  window.addEventListener("hashchange", route);
  document.addEventListener("DOMContentLoaded", route);

  // ---------- store page ----------
  function storePage(app) {
    crumbs("store");
    const picked = new Set();
    let rows = [], sortKey = "id", sortDir = 1, filter = "";
    const filterBox = el("input", { type: "search", id: "filter", placeholder: "filter: id, model, agent, task, end…", size: 40,
      oninput: (e) => { filter = e.target.value.toLowerCase(); draw(); } });
    const cmpBtn = el("button", { id: "compare", disabled: true, onclick: () => { location.hash = "#/compare?ids=" + [...picked].map(enc).join(","); } }, "Compare selected");
    let groupBy = "";
    const groupSel = el("select", { id: "group-by", onchange: (e) => { groupBy = e.target.value; draw(); } },
      [["", "no grouping"], ["model", "group by model"], ["agent", "group by harness"], ["task", "group by task"], ["experiment", "group by experiment"]].map(([v, l]) => el("option", { value: v }, l)));
    const MAX_COMPARE = 60;
    let shownIds = [];
    const allBtn = el("button", { id: "compare-all", disabled: true, onclick: () => { location.hash = "#/compare?ids=" + shownIds.map(enc).join(","); } }, "Compare all shown");
    const title = el("h1", {}, "Trajectories");
    const storeLine = el("div", { class: "muted" });
    const groupsBox = el("div", { id: "groups-box" });
    const table = el("table", { id: "trajectories" });
    add(app, title, storeLine, el("div", { class: "toolbar" }, filterBox, groupSel, cmpBtn, allBtn, el("span", { class: "muted", id: "count" })), groupsBox, table);
    // drawGroups summarizes the shown rows per group: n, mean ± sd of
    // the score, best, solved, median parts and hours to 50 % and 90 %.
    function drawGroups(shown) {
      clear(groupsBox);
      if (!groupBy) return;
      const groups = new Map();
      for (const r of shown) { const k = r[groupBy] || "–"; if (!groups.has(k)) groups.set(k, []); groups.get(k).push(r); }
      const median = (xs) => { xs = xs.filter((x) => x !== undefined && x !== null).sort((a, b) => a - b); if (!xs.length) return null; const m = xs.length >> 1; return xs.length % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2; };
      const body = [];
      for (const [k, rs] of [...groups].sort((a, b) => a[0] < b[0] ? -1 : 1)) {
        const sc = rs.map((r) => r.score).filter((x) => x !== null && x !== undefined);
        const mean = sc.length ? sc.reduce((a, b) => a + b, 0) / sc.length : null;
        const sd = sc.length > 1 ? Math.sqrt(sc.reduce((a, b) => a + (b - mean) ** 2, 0) / (sc.length - 1)) : null;
        const best = sc.length ? Math.max(...sc) : null;
        const solved = rs.filter((r) => r.end_reason === "solved" || r.solved_at).length;
        const mp = (m) => median(rs.map((r) => r.milestones ? r.milestones[m] : null));
        const mh = (m) => median(rs.map((r) => r.milestone_hours ? r.milestone_hours[m] : null));
        const md = (m) => median(rs.map((r) => r.milestone_dollars ? r.milestone_dollars[m] : null));
        const at = (m) => { const p = mp(m), h = mh(m), d = md(m); return p === null ? "–" : [num(Math.round(p)), h !== null ? el("span", { class: "muted" }, " · " + h.toFixed(1) + " h") : null, d !== null ? el("span", { class: "muted" }, " · " + money(d)) : null]; };
        const sources = [...new Set(rs.map((r) => r.score_source).filter(Boolean))].map(srcName).join(", ");
        const ids = rs.map((r) => r.id);
        body.push(el("tr", { class: "group", "data-group": k },
          el("td", {}, el("a", { class: "group-filter", onclick: () => { filterBox.value = k; filter = k.toLowerCase(); draw(); } }, k)),
          el("td", { class: "num n" }, rs.length), el("td", { class: "num mean" }, mean === null ? "–" : pct(mean) + (sd !== null ? " ± " + (100 * sd).toFixed(1) : "")),
          el("td", { class: "num" }, pct(best)), el("td", { class: "num solved" }, solved + "/" + rs.length), el("td", { class: "num" }, at("0.5")), el("td", { class: "num" }, at("0.9")),
          el("td", { class: "muted" }, sources),
          el("td", {}, ids.length >= 2 && ids.length <= MAX_COMPARE ? el("a", { href: "#/compare?ids=" + ids.map(enc).join(",") }, "compare") : null)));
      }
      add(groupsBox, el("table", { id: "groups" }, el("tr", {}, el("th", {}, groupBy === "agent" ? "harness" : groupBy), el("th", { class: "num" }, "n"), el("th", { class: "num" }, "mean ± sd"), el("th", { class: "num" }, "best"),
        el("th", { class: "num" }, "solved"), el("th", { class: "num" }, "median parts · hours · $ to 50%"), el("th", { class: "num" }, "to 90%"), el("th", {}, "score source"), el("th", {}, "")), body));
    }
    // sparkline draws a row's score curve in a small SVG.
    function sparkline(pts) {
      if (!pts || !pts.length) return "";
      const W = 80, H = 18, x0 = pts[0][0], x1 = Math.max(pts[pts.length - 1][0], x0 + 1);
      let d = "";
      pts.forEach((p, i) => { const x = (p[0] - x0) / (x1 - x0) * W, y = H - 1 - p[1] * (H - 2); d += (i ? " H" + x.toFixed(1) + " V" : "M" + x.toFixed(1) + " ") + y.toFixed(1); });
      return svg("svg", { class: "spark", viewBox: "0 0 " + W + " " + H, width: W, height: H }, svg("path", { d, fill: "none", stroke: "#2f6fd6", "stroke-width": 1.2 }));
    }
    const cols = [
      ["", null], ["id", "id"], ["agent", "agent"], ["model", "model"], ["task", "task"], ["curve", null], ["parts", "parts", "num"],
      ["end", "end_reason"], ["score", "score", "num"], ["best", "best", "num"], ["solved at", "solved_at", "num"], ["source", "score_source"], ["cost", "cost", "num"], ["duration", "duration_s", "num"],
    ];
    function val(r, k) { const v = r[k]; return v === null || v === undefined ? -Infinity : v; }
    function draw() {
      clear(table);
      const head = el("tr", {}, cols.map(([label, key, cls]) => el("th", {
        class: (key ? "sortable " : "") + (cls || ""), onclick: key ? () => { sortDir = sortKey === key ? -sortDir : 1; sortKey = key; draw(); } : null,
      }, label + (key === sortKey ? (sortDir > 0 ? " ▲" : " ▼") : ""))));
      add(table, el("thead", {}, head));
      const shown = rows.filter((r) => !filter || [r.id, r.agent, r.model, r.task, r.end_reason, r.score_source, r.experiment].join(" ").toLowerCase().includes(filter));
      drawGroups(shown);
      shownIds = shown.map((r) => r.id);
      allBtn.disabled = shownIds.length < 2 || shownIds.length > MAX_COMPARE;
      allBtn.textContent = "Compare all shown (" + shownIds.length + ")";
      shown.sort((a, b) => { const x = val(a, sortKey), y = val(b, sortKey); return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
      const body = el("tbody");
      for (const r of shown) {
        const box = el("input", { type: "checkbox", "data-id": r.id, onchange: (e) => { if (e.target.checked) picked.add(r.id); else picked.delete(r.id); cmpBtn.disabled = picked.size < 2; } });
        box.checked = picked.has(r.id);
        add(body, el("tr", { class: "pick", "data-id": r.id },
          el("td", {}, box),
          el("td", {}, el("a", { href: "#/t/" + enc(r.id), class: "traj-link" }, r.id), lineageLine(r.lineage), r.error ? el("div", { class: "bad" }, r.error) : null, r.warning ? el("div", { class: "warn" }, r.warning) : null),
          el("td", {}, r.agent || "–"), el("td", {}, r.model || "–"), el("td", {}, r.task || "–"), el("td", {}, sparkline(r.spark)),
          el("td", { class: "num" }, num(r.parts)), el("td", {}, endBadge(r)),
          el("td", { class: "num" }, pct(r.score), r.suspect_part ? el("div", { class: "warn suspect", title: "cases whose program did what a program ignoring its input does" }, "suspect @" + r.suspect_part) : null,
            r.fresh_gap !== null && r.fresh_gap !== undefined ? el("div", { class: "muted fresh-gap", title: "public − fresh gap at part " + r.fresh_gap_part }, "gap " + gapPts(r.fresh_gap)) : null),
          el("td", { class: "num" }, r.best === null || r.best === undefined ? "–" : [pct(r.best), el("span", { class: "muted" }, " @" + r.best_part)]),
          el("td", { class: "num" }, r.solved_at ? el("a", { href: "#/t/" + enc(r.id) + "/" + r.solved_at }, "part " + r.solved_at) : "–"),
          el("td", { class: "muted src" }, srcName(r.score_source)),
          el("td", { class: "num" }, money(r.cost)), el("td", { class: "num" }, dur(r.duration_s))));
      }
      add(table, body);
      document.getElementById("count").textContent = shown.length + " of " + rows.length + " shown";
      if (!rows.length) add(table, el("tr", {}, el("td", { class: "empty", colspan: cols.length }, "No trajectories in this store yet.")));
    }
    let stopped = false, timer = null;
    async function load() {
      try {
        const d = await api("/api/trajectories");
        if (stopped) return;
        storeLine.textContent = d.store;
        rows = d.trajectories;
        draw();
        status(d.pending ? "indexing " + d.pending + " trajectories…" : "updated " + new Date().toLocaleTimeString());
        if (!stopped) timer = setTimeout(load, d.pending ? 1000 : 5000);
        return;
      } catch (e) { status("error: " + e.message); }
      if (!stopped) timer = setTimeout(load, 5000);
    }
    load();
    return () => { stopped = true; clearTimeout(timer); };
  }

  // ---------- charts ----------
  // chart draws staircase lines of series [{name, color, points: [[x, y]]}]
  // and marks [{x, part, kind, tests, count, label, onclick}] into box. It
  // stays usable at 10,000 parts: drag across the plot to zoom (the button
  // resets), marks closer than a few pixels merge into one with a count,
  // a line shows opts.cursor (the selected part), hovering reads every
  // shown series at that x, and a legend entry hides or shows its series.
  // opts.xlabel(x) names an x in the readout. State (zoom, hidden series)
  // lives on box so redraws keep it.
  function chart(box, series, marks, opts) {
    clear(box);
    box._redraw = () => chart(box, series, marks, opts);
    const hidden = box._hidden || (box._hidden = new Set());
    const W = Math.max(box.clientWidth || 800, 300), H = opts.height || 200;
    const L = 44, R = 10, T = 10, B = 26;
    let xmin = Infinity, xmax = -Infinity;
    for (const s of series) for (const p of s.points) { xmin = Math.min(xmin, p[0]); xmax = Math.max(xmax, p[0]); }
    for (const m of marks || []) { xmin = Math.min(xmin, m.x); xmax = Math.max(xmax, m.x); }
    if (opts.xmax !== undefined) xmax = Math.max(xmax, opts.xmax);
    if (opts.xmin !== undefined) xmin = Math.min(xmin, opts.xmin);
    if (!isFinite(xmin)) { add(box, el("div", { class: "empty" }, opts.empty || "No scores yet.")); return; }
    if (xmax === xmin) xmax = xmin + 1;
    const full = [xmin, xmax];
    if (box._zoom) [xmin, xmax] = box._zoom;
    const X = (x) => L + (x - xmin) / (xmax - xmin) * (W - L - R);
    const inv = (px) => xmin + (px - L) / (W - L - R) * (xmax - xmin);
    const Y = (y) => T + (1 - y) * (H - T - B);
    const root = svg("svg", { viewBox: "0 0 " + W + " " + H, height: H, role: "img" });
    const clipId = "clip-" + (box.id || "chart");
    root.appendChild(svg("defs", {}, svg("clipPath", { id: clipId }, svg("rect", { x: L, y: 0, width: W - L - R, height: H }))));
    for (const y of [0, 0.25, 0.5, 0.75, 1]) {
      root.appendChild(svg("line", { x1: L, x2: W - R, y1: Y(y), y2: Y(y), class: "grid" }));
      root.appendChild(svg("text", { x: L - 6, y: Y(y) + 4, "text-anchor": "end" }, (y * 100) + "%"));
    }
    root.appendChild(svg("line", { x1: L, x2: W - R, y1: Y(0), y2: Y(0), class: "axis" }));
    const ticks = W < 500 ? 2 : 5;
    for (let i = 0; i <= ticks; i++) {
      const x = xmin + (xmax - xmin) * i / ticks;
      root.appendChild(svg("text", { x: X(x), y: H - 8, "text-anchor": i === 0 ? "start" : i === ticks ? "end" : "middle" }, opts.xfmt(x)));
    }
    const lines = svg("g", { "clip-path": "url(#" + clipId + ")" });
    const shown = series.filter((s) => !hidden.has(s.name) && !hidden.has(s.group));
    // Bands: the spread of repeats ([x, low, high] per point) under the
    // lines, hidden with the series they belong to.
    for (const b of opts.bands || []) {
      if (hidden.has(b.name) || b.points.length < 2) continue;
      const up = b.points.map((p, i) => (i ? "L" : "M") + X(p[0]).toFixed(1) + " " + Y(p[2]).toFixed(1)).join(" ");
      const down = b.points.slice().reverse().map((p) => "L" + X(p[0]).toFixed(1) + " " + Y(p[1]).toFixed(1)).join(" ");
      lines.appendChild(svg("path", { d: up + " " + down + " Z", fill: b.color, "fill-opacity": 0.15, stroke: "none", class: "band-area" + (b.cls ? " " + b.cls : "") }));
    }
    for (const s of shown) {
      if (!s.points.length) continue;
      let d = "";
      s.points.forEach((p, i) => {
        d += (i ? " H" + X(p[0]).toFixed(1) + " V" : "M" + X(p[0]).toFixed(1) + " ") + Y(p[1]).toFixed(1);
      });
      const last = s.points[s.points.length - 1];
      if (opts.xmax !== undefined && last[0] < full[1]) d += " H" + X(full[1]).toFixed(1);
      const attrs = { d, fill: "none", stroke: s.color, "stroke-width": s.width || 1.5, opacity: s.opacity || 1, "stroke-dasharray": s.dash || "none", class: "line" };
      if (s.id) attrs["data-id"] = s.id;
      lines.appendChild(svg("path", attrs, svg("title", {}, s.name)));
    }
    root.appendChild(lines);
    if (opts.cursor && opts.cursor >= xmin && opts.cursor <= xmax) {
      root.appendChild(svg("line", { x1: X(opts.cursor), x2: X(opts.cursor), y1: T, y2: Y(0), class: "cursor" }));
    }
    // Vertical marks (a fork point): a line, a short text, a tooltip.
    for (const v of opts.vmarks || []) {
      if (v.x < xmin || v.x > xmax) continue;
      root.appendChild(svg("g", { class: "fork-mark" + (v.cls ? " " + v.cls : ""), "data-part": v.part },
        svg("line", { x1: X(v.x), x2: X(v.x), y1: T, y2: Y(0) }),
        svg("text", { x: X(v.x) + 3, y: T + 10 }, v.text),
        svg("title", {}, v.label)));
    }
    // The hover and drag surface lies under the marks, so marks stay
    // clickable.
    const surface = svg("rect", { x: L, y: T, width: W - L - R, height: Y(0) - T, class: "surface" });
    const hoverLine = svg("line", { x1: 0, x2: 0, y1: T, y2: Y(0), class: "hover hidden" });
    const band = svg("rect", { x: 0, y: T, width: 0, height: Y(0) - T, class: "band hidden" });
    root.appendChild(surface); root.appendChild(hoverLine); root.appendChild(band);
    // Marks within BUCKET pixels of each other merge: one shape per kind
    // and bucket, its count beside it, every part and test in its tooltip.
    const BUCKET = 6;
    const buckets = new Map();
    for (const m of marks || []) {
      if (m.x < xmin || m.x > xmax) continue;
      const key = m.kind + ":" + Math.floor(X(m.x) / BUCKET);
      const b = buckets.get(key);
      if (!b) buckets.set(key, { kind: m.kind, x: m.x, parts: [m.part], count: m.count || 1, labels: [m.label], first: m });
      else { b.parts.push(m.part); b.count += m.count || 1; if (b.labels.length < 12) b.labels.push(m.label); }
    }
    for (const b of buckets.values()) {
      const x = X(b.x);
      const many = b.parts.length > 1;
      const label = (many ? b.parts.length + " parts, " + b.count + (b.kind === "regression" ? " broke" : b.kind === "label" ? " failure labels" : " first passed") + ":\n" : "") + b.labels.join("\n") + (b.parts.length > b.labels.length ? "\n…" : "");
      const g = svg("g", { class: "mark mark-" + b.kind, "data-part": b.parts[0], "data-count": b.parts.length, onclick: b.first.onclick });
      if (b.kind === "regression") g.appendChild(svg("path", { d: `M${x - 5} ${T} L${x + 5} ${T} L${x} ${T + 8} Z` }));
      else if (b.kind === "label") g.appendChild(svg("path", { d: `M${x} ${T + 12} L${x + 5} ${T + 17} L${x} ${T + 22} L${x - 5} ${T + 17} Z` }));
      else g.appendChild(svg("circle", { cx: x, cy: Y(0) - 4, r: 3.5 }));
      if (many) g.appendChild(svg("text", { x: x + 6, y: b.kind === "regression" ? T + 8 : Y(0) - 8, class: "mark-count" }, String(b.parts.length)));
      g.appendChild(svg("title", {}, label));
      root.appendChild(g);
    }
    box.appendChild(root);
    const readout = el("div", { class: "readout muted" }, "\u00a0");
    const at = (pts, x) => { let v = null; for (const p of pts) { if (p[0] > x) break; v = p[1]; } return v; };
    const pxOf = (e) => { const r = root.getBoundingClientRect(); return (e.clientX - r.left) * W / r.width; };
    let drag = null;
    surface.addEventListener("mousedown", (e) => { drag = pxOf(e); e.preventDefault(); });
    root.addEventListener("mousemove", (e) => {
      const px = Math.min(Math.max(pxOf(e), L), W - R);
      hoverLine.setAttribute("x1", px); hoverLine.setAttribute("x2", px); hoverLine.classList.remove("hidden");
      const x = inv(px);
      readout.textContent = [opts.xlabel ? opts.xlabel(x) : opts.xfmt(x)].concat(shown.filter((s) => !s.nolegend).map((s) => {
        const v = at(s.points, x); return s.name + " " + (v === null ? "–" : pct(v));
      })).join(" · ");
      if (drag !== null) {
        band.setAttribute("x", Math.min(drag, px)); band.setAttribute("width", Math.abs(px - drag)); band.classList.remove("hidden");
      }
    });
    root.addEventListener("mouseleave", () => { hoverLine.classList.add("hidden"); });
    window.addEventListener("mouseup", function up(e) {
      window.removeEventListener("mouseup", up);
      if (drag === null) return;
      const px = Math.min(Math.max(pxOf(e), L), W - R), a = drag;
      drag = null;
      if (Math.abs(px - a) < 5) { band.classList.add("hidden"); return; }
      box._zoom = [inv(Math.min(a, px)), inv(Math.max(a, px))];
      box._redraw();
    });
    const reset = box._zoom ? el("button", { class: "zoom-reset", onclick: () => { box._zoom = null; box._redraw(); } }, "reset zoom") : null;
    add(box, el("div", { class: "legend" }, series.filter((s) => !s.nolegend).map((s) => {
      const sw = el("i", { class: s.dash ? "dashed" : null }); sw.style.background = s.color;
      return el("button", { class: "series" + (hidden.has(s.name) ? " off" : ""), title: "show or hide", onclick: () => {
        if (hidden.has(s.name)) hidden.delete(s.name); else hidden.add(s.name);
        box._redraw();
      } }, sw, s.name);
    }), (marks || []).length ? el("span", { class: "muted" }, el("b", { class: "key-regression" }, "▼"), " regression ", el("b", { class: "key-first" }, "●"), " first pass ", el("b", { class: "key-label" }, "◆"), " failure label (click to open; a number is how many parts share the pixel)") : null,
    reset, readout));
  }

  // ---------- trajectory page ----------
  function trajectoryPage(app, id, startPart, startTab) {
    app.className = "fixed";
    crumbs(el("a", { href: "#/" }, "store"), id);
    const st = { id, meta: null, total: 0, pages: new Map(), loading: new Map(), sel: 0, tab: startTab || "part", by: "part", follow: false, stopped: false, version: "" };
    const head = el("div");
    const chartBox = el("div", { class: "chart", id: "curve" });
    const byPart = el("button", { class: "on", id: "by-part", onclick: () => { st.by = "part"; chartBox._zoom = null; byPart.className = "on"; byTime.className = ""; drawCurve(); } }, "by part");
    const byTime = el("button", { id: "by-time", onclick: () => { st.by = "time"; chartBox._zoom = null; byTime.className = "on"; byPart.className = ""; drawCurve(); } }, "by time");
    const jumpBox = el("input", { type: "number", id: "jump", min: 1, placeholder: "part #", onkeydown: (e) => { if (e.key === "Enter") jump(parseInt(jumpBox.value, 10)); } });
    // Search runs on the server over every part's recorded text, tool
    // input and output; a hit opens its part.
    const hitsBox = el("div", { class: "hits hidden", id: "hits" });
    // Filters narrow a search, or alone list the parts that pass them.
    const refilter = () => search(searchBox.value);
    const onlyCommitted = el("input", { type: "checkbox", id: "only-committed", onchange: refilter });
    const onlyTests = el("input", { type: "checkbox", id: "only-run-tests", onchange: refilter });
    const onlyErrors = el("input", { type: "checkbox", id: "only-errors", onchange: refilter });
    const kindSel = el("select", { id: "filter-kind", onchange: refilter }, ["", "text", "reasoning", "tool", "patch"].map((k) => el("option", { value: k }, k || "any kind")));
    const toolSel = el("select", { id: "filter-tool", onchange: refilter }, el("option", { value: "" }, "any tool"));
    const toolKindSel = el("select", { id: "filter-tool-kind", onchange: refilter }, el("option", { value: "" }, "any tool kind"));
    const sessSel = el("select", { id: "filter-session", onchange: refilter }, el("option", { value: "" }, "any session"));
    function fillFilters(m) {
      const keep = (sel, values, label) => {
        const cur = sel.value;
        clear(sel); add(sel, el("option", { value: "" }, label), values.map((v) => el("option", { value: v[0] }, v[1])));
        sel.value = cur;
      };
      keep(toolSel, (m.tools || []).map((t) => [t, t]), "any tool");
      keep(toolKindSel, (m.tool_kinds || []).map((t) => [t, t]), "any tool kind");
      keep(sessSel, m.sessions.map((x) => [x.id, (x.depth ? "sub-agent: " : "root: ") + (x.title || x.id)]), "any session");
    }
    const searchBox = el("input", { type: "search", id: "search", placeholder: "search parts…", size: 18, onkeydown: (e) => { if (e.key === "Enter") search(searchBox.value); if (e.key === "Escape") hitsBox.classList.add("hidden"); } });
    async function search(q) {
      clear(hitsBox);
      const filters = (onlyCommitted.checked ? "&committed=1" : "") + (onlyTests.checked ? "&run_tests=1" : "") + (onlyErrors.checked ? "&error=1" : "") +
        (kindSel.value ? "&kind=" + enc(kindSel.value) : "") + (toolSel.value ? "&tool=" + enc(toolSel.value) : "") + (toolKindSel.value ? "&tool_kind=" + enc(toolKindSel.value) : "") + (sessSel.value ? "&session=" + enc(sessSel.value) : "");
      if (!q && !filters) { hitsBox.classList.add("hidden"); return; }
      hitsBox.classList.remove("hidden");
      let d;
      try { d = await api("/api/t/" + enc(id) + "/search?q=" + enc(q) + filters); } catch (e) { add(hitsBox, el("div", { class: "bad" }, e.message)); return; }
      add(hitsBox, el("div", { class: "muted" }, d.total + " parts match" + (d.total > d.hits.length ? " (first " + d.hits.length + " shown)" : ""), " ", el("a", { onclick: () => hitsBox.classList.add("hidden") }, "close")),
        d.hits.map((h) => el("div", { class: "hit", "data-part": h.part, onclick: () => jump(h.part) }, el("b", {}, "part " + h.part), " ", el("span", { class: "mono" }, h.snippet))));
    }
    const followBox = el("input", { type: "checkbox", id: "follow", onchange: (e) => { st.follow = e.target.checked; if (st.follow) jump(st.total); } });
    const tl = el("div", { class: "timeline", id: "timeline" });
    const spacer = el("div", { class: "spacer" });
    tl.appendChild(spacer);
    const detail = el("div", { class: "detail", id: "detail" });
    add(app, head,
      el("div", { class: "toolbar" }, el("b", {}, "Score"), byPart, byTime, el("span", { class: "muted", id: "curve-source" })),
      chartBox,
      el("div", { class: "split" },
        el("div", { class: "timeline-wrap" },
          el("div", { class: "toolbar" }, el("b", {}, "Parts"), jumpBox, el("button", { id: "go", onclick: () => jump(parseInt(jumpBox.value, 10)) }, "Go"),
            el("label", { class: "muted" }, followBox, " follow new parts"), el("span", { class: "muted", id: "total" })),
          el("div", { class: "toolbar" }, searchBox, kindSel, toolSel, toolKindSel, sessSel, el("label", { class: "muted" }, onlyErrors, " errors"),
            el("label", { class: "muted" }, onlyCommitted, " committed"), el("label", { class: "muted" }, onlyTests, " run_tests")),
          el("div", { class: "muted keys" }, "keys: j/k part · n/p checkpoint · [/] score change"),
          hitsBox,
          tl),
        detail));
    let curve = null;
    let sweeps = [];

    function drawHead(m) {
      clear(head);
      add(head, el("h1", {}, m.id, " ", endBadge(m)),
        el("div", { class: "summary" },
          el("span", {}, "agent ", el("b", {}, m.agent || "–")), el("span", {}, "model ", el("b", {}, m.model || "–")),
          el("span", {}, "task ", el("b", {}, m.task || "–")), el("span", {}, "parts ", el("b", { id: "parts-count" }, num(m.parts))),
          el("span", {}, "turns ", el("b", {}, num(m.turns))), el("span", { id: "score" }, "score ", el("b", {}, pct(m.score)), m.score_source ? el("span", { class: "muted", id: "score-source", "data-source": m.score_source }, " (" + srcName(m.score_source) + ")") : ""),
          m.best !== null && m.best !== undefined ? el("span", {}, "best ", el("b", {}, pct(m.best)), " at part ", el("a", { onclick: () => jump(m.best_part) }, m.best_part)) : null,
          m.solved_at ? el("span", {}, "solved at part ", el("a", { onclick: () => jump(m.solved_at) }, m.solved_at)) : null,
          m.suspect_part ? el("span", { class: "warn", id: "suspect", title: "cases whose program did what a program ignoring its input does" }, "suspect from part ", el("a", { onclick: () => jump(m.suspect_part) }, m.suspect_part), m.fixed_like ? " (" + m.fixed_like + " fixed-like)" : "") : null,
          m.fresh_gap !== null && m.fresh_gap !== undefined ? el("span", { id: "fresh-gap", title: "public suites' pass rate minus the generated fresh suite's: a compiler that fits the tests rather than the language" }, "public − fresh ", el("b", {}, gapPts(m.fresh_gap)), " at part ", el("a", { onclick: () => jump(m.fresh_gap_part) }, m.fresh_gap_part)) : null,
          el("span", {}, "cost ", el("b", {}, money(m.cost))), el("span", {}, "tokens ", el("b", {}, m.tokens ? num(m.tokens.input + m.tokens.output + m.tokens.reasoning + m.tokens.cache_read + m.tokens.cache_write) : "–")),
          el("span", {}, "duration ", el("b", {}, dur(m.duration_s))),
          m.sessions.length > 1 ? el("span", {}, "sessions ", el("b", {}, m.sessions.length)) : null),
        m.lineage ? Object.assign(lineageLine(m.lineage, m.id), { id: "lineage" }) : null,
        m.warning ? el("div", { class: "warn" }, m.warning) : null);
      document.getElementById("total").textContent = num(m.parts) + " parts";
    }
    function drawCurve() {
      if (!curve) return;
      const t0 = st.meta ? st.meta.first_time : 0;
      const xi = st.by === "part" ? 0 : 1;
      const xv = (p) => st.by === "part" ? p[xi] : (p[xi] - t0) / 1000;
      const series = [{ name: "overall", color: "#1d232b", width: 2.2, points: curve.points.map((p) => [xv(p), p[2]]) }];
      Object.keys(curve.suites).sort().forEach((name, i) => {
        series.push({ name, color: COLORS[i % COLORS.length], opacity: 0.8, points: curve.suites[name].map((p) => [xv(p), p[2]]) });
      });
      if (curve.agent && curve.agent.length) {
        series.push({ name: "agent's run_tests (its claim, not the score)", color: "#8a94a3", dash: "4 3", opacity: 0.9, points: curve.agent.map((p) => [xv(p), p[2]]) });
      }
      const marks = curve.marks.map((m) => ({
        x: st.by === "part" ? m.part : (m.time - t0) / 1000, part: m.part, kind: m.kind,
        count: m.count,
        label: m.kind === "label" ? "part " + m.part + " " + m.tests.join(", ") : (m.kind === "regression" ? "part " + m.part + " broke " : "part " + m.part + " first passed ") + m.count + ": " + m.tests.join(", ") + (m.count > m.tests.length ? " …" : ""),
        onclick: () => jump(m.part),
      }));
      const cursor = st.sel ? (st.by === "part" ? st.sel : (rowAt(st.sel) ? (rowAt(st.sel).time - t0) / 1000 : undefined)) : undefined;
      const xlabel = (x) => {
        if (st.by !== "part") return "after " + dur(x);
        const n = Math.max(1, Math.round(x)), r = rowAt(n);
        return "part " + n + (r && r.time ? " · " + clock(r.time) + (t0 ? " (+" + dur((r.time - t0) / 1000) + ")" : "") : "");
      };
      const xmax = st.by === "part" ? st.total : (st.meta ? (st.meta.last_time - t0) / 1000 : undefined);
      const l = st.meta && st.meta.lineage;
      const vmarks = l && l.kind === "fork" && l.part > 0 && st.by === "part" ? [{ x: l.part, part: l.part, text: "fork at " + l.part, label: "forked from " + l.source + " at part " + l.part + ": parts 1–" + l.part + " are its" }] : [];
      // Fork sweeps of this trajectory (by part only): the value of its
      // state at each swept part, a band from the worst fork to the best
      // under the curve, their mean, and a mark at the decisive part.
      const bands = [];
      if (st.by === "part") {
        sweeps.forEach((s, i) => {
          const rows = s.rows.filter((r) => r.counted > 0), name = "sweep " + s.name + ": value of the state (" + s.repeats + " forks a part)";
          const color = ["#d97706", "#7c3aed", "#0891b2"][i % 3];
          // Held flat, as the curves: a part's value holds until the next swept part.
          const held = (lo, hi) => rows.flatMap((r, j) => j + 1 < rows.length ? [[r.part, lo(r), hi(r)], [rows[j + 1].part, lo(r), hi(r)]] : [[r.part, lo(r), hi(r)]]);
          bands.push({ name, color, cls: "sweep", points: held(() => 0, (r) => r.mean) });
          bands.push({ name, color, cls: "sweep-spread", points: held((r) => r.min, (r) => r.max) });
          series.push({ name, color, dash: "2 2", width: 1.8, points: rows.map((r) => [r.part, r.mean]) });
          const d = s.decisive;
          if (d) vmarks.push({ x: d.part, part: d.part, cls: "decisive", text: "decisive " + d.part, label: "sweep " + s.name + ": the value of the state falls by " + Math.round(d.drop * 100) + " points from part " + d.before + " to part " + d.part });
        });
      }
      chart(chartBox, series, marks, { height: 170, cursor, xlabel, vmarks, bands, xmin: st.by === "part" ? 1 : 0, xmax, xfmt: st.by === "part" ? (x) => "part " + Math.round(x) : (x) => dur(x), empty: "No scores: no run_tests results in the trace and no evaluation (run traj replay evaluate)." });
      document.getElementById("curve-source").textContent = curve.source ? "from " + srcName(curve.source) : "";
    }

    // The timeline is virtual: only the rows in view exist, fetched a page
    // at a time by part number; the spacer has the height of all rows.
    function setTotal(n) {
      st.total = n;
      spacer.style.height = (n * ROW) + "px";
    }
    function pageOf(part) { return Math.floor((part - 1) / PAGE); }
    // fetchPage loads page p of rows once; it returns the load in flight.
    function fetchPage(p) {
      if (st.pages.has(p)) return Promise.resolve();
      if (st.loading.has(p)) return st.loading.get(p);
      const load = (async () => {
        try {
          const d = await api("/api/t/" + enc(id) + "/parts?from=" + (p * PAGE + 1) + "&n=" + PAGE);
          if (d.rows.length === PAGE) st.pages.set(p, d.rows); // a short last page is fetched again as parts arrive
          else st.partial = { p, rows: d.rows };
        } catch (e) { status("error: " + e.message); }
        st.loading.delete(p);
        drawRows();
      })();
      st.loading.set(p, load);
      return load;
    }
    function rowAt(part) {
      const p = pageOf(part);
      const rows = st.pages.get(p) || (st.partial && st.partial.p === p ? st.partial.rows : null);
      return rows ? rows[(part - 1) % PAGE] : null;
    }
    function drawRows() {
      const top = tl.scrollTop, h = tl.clientHeight || 600;
      const first = Math.max(1, Math.floor(top / ROW) + 1 - 10), last = Math.min(st.total, Math.ceil((top + h) / ROW) + 10);
      const want = new Set();
      for (let part = first; part <= last; part++) want.add(pageOf(part));
      for (const p of want) if (!st.pages.has(p)) fetchPage(p);
      const frag = document.createDocumentFragment();
      let drawn = 0;
      for (let part = first; part <= last; part++) {
        const r = rowAt(part);
        const div = el("div", { class: "row" + (part === st.sel ? " sel" : ""), "data-part": part });
        div.style.top = ((part - 1) * ROW) + "px";
        if (!r) { add(div, el("span", { class: "n" }, part), el("span", { class: "muted" }, "…")); frag.appendChild(div); continue; }
        if (r.error) div.classList.add("err");
        const before = part > 1 ? rowAt(part - 1) : null;
        if (before && before.turn !== r.turn) div.classList.add("turn-start");
        const ind = el("span", { class: "ind" });
        ind.style.width = (r.depth * 16) + "px";
        add(div, el("span", { class: "n" }, r.part), el("span", { class: "t" }, clock(r.time)), el("span", { class: "el" }, st.meta && st.meta.first_time && r.time ? "+" + dur((r.time - st.meta.first_time) / 1000) : ""), ind,
          r.depth > 0 ? el("span", { class: "badge sub", title: "sub-agent session " + r.session }, "sub") : null,
          el("span", { class: "k k-" + r.kind, title: r.tool_kind || "" }, r.tool ? r.tool : r.kind),
          el("span", { class: "title" }, r.title),
          r.changed ? el("span", { class: "chg", title: r.changed + " files changed" }, "✎" + r.changed) : null,
          r.calls ? el("span", { class: "calls", title: "run_tests calls" }, "▶" + r.calls) : null,
          r.tokens ? el("span", { class: "tok", title: num(r.tokens) + " tokens" + (r.cost ? ", " + money(r.cost) : "") }, kilo(r.tokens)) : null);
        div.addEventListener("click", () => select(part));
        frag.appendChild(div);
        drawn++;
      }
      clear(spacer).appendChild(frag);
      // First paint of the timeline, for the benchmark: milliseconds since
      // the page started loading.
      if (drawn && window.trajViewFirstRows === undefined) window.trajViewFirstRows = performance.now();
    }
    tl.addEventListener("scroll", () => window.requestAnimationFrame(drawRows));

    function setHash() {
      const h = "#/t/" + enc(id) + "/" + st.sel + (st.tab !== "part" ? "?tab=" + st.tab : "");
      if (location.hash !== h) history.replaceState(null, "", h);
    }
    // jump scrolls the timeline to part n and opens it; it resolves when
    // the part's detail is drawn (tests and the benchmark wait on it).
    function jump(n) {
      if (!n || n < 1) return Promise.resolve();
      n = Math.min(n, st.total);
      const h = tl.clientHeight || 600;
      tl.scrollTop = Math.max(0, (n - 1) * ROW - h / 3);
      drawRows();
      return Promise.all([fetchPage(pageOf(n)), select(n)]);
    }
    function select(n) {
      st.sel = n;
      drawCurve();
      for (const r of spacer.querySelectorAll(".row.sel")) r.classList.remove("sel");
      const r = spacer.querySelector('.row[data-part="' + n + '"]');
      if (r) r.classList.add("sel");
      setHash();
      return showTab();
    }
    function tabs() {
      const t = el("div", { class: "tabs" });
      for (const [key, label] of [["part", "Part"], ["diff", "Diff"], ["code", "Code"], ["tests", "Tests"], ["calls", "Model calls"]]) {
        add(t, el("button", { class: st.tab === key ? "on" : "", id: "tab-" + key, onclick: () => { st.tab = key; setHash(); showTab(); } }, label));
      }
      return t;
    }
    async function showTab() {
      const n = st.sel;
      clear(detail);
      detail.removeAttribute("data-part");
      detail.removeAttribute("data-tab");
      add(detail, tabs());
      const body = el("div", { id: "detail-body" }, el("p", { class: "muted" }, "Loading…"));
      add(detail, body);
      try {
        if (st.tab === "tests") await showTests(body);
        else if (st.tab === "calls") await showCalls(body, 0);
        else if (!n) { clear(body); add(body, el("p", { class: "muted" }, "Pick a part in the timeline, a mark on the curve, or type a part number.")); }
        else if (st.tab === "diff") await showDiff(body, n);
        else if (st.tab === "code") await showCode(body, n);
        else await showPart(body, n);
      } catch (e) { clear(body); add(body, el("p", { class: "bad" }, e.message)); }
      if (st.sel === n) { detail.setAttribute("data-part", n); detail.setAttribute("data-tab", st.tab); }
    }

    async function showPart(body, n) {
      const d = await api("/api/t/" + enc(id) + "/parts/" + n);
      if (st.sel !== n) return;
      clear(body);
      const sess = st.meta ? st.meta.sessions.find((s) => s.id === d.session) : null;
      add(body, el("h2", {}, "Part " + d.part + " · ", el("span", { class: "k-" + d.kind }, d.tool || d.kind), d.tool_kind ? el("span", { class: "muted", id: "tool-kind" }, " (" + d.tool_kind + ")") : null),
        el("dl", { class: "kv" },
          el("dt", {}, "time"), el("dd", {}, d.timestamp || "–"),
          el("dt", {}, "turn"), el("dd", {}, d.turn),
          el("dt", {}, "session"), el("dd", {}, d.session || "–", d.depth > 0 ? el("span", { class: "badge sub" }, " sub-agent of " + (d.parent_session || "?")) : null, sess && sess.title ? " — " + sess.title : null,
            d.spawned_by ? [" · run by ", el("a", { class: "spawned-by", onclick: () => jump(d.spawned_by) }, "part " + d.spawned_by)] : null),
          d.sub_agent ? [el("dt", {}, "sub-agent"), el("dd", { class: "sub-agent" }, d.sub_agent.id, d.sub_agent.title ? " — " + d.sub_agent.title : "",
            d.sub_agent.first_part ? [": parts ", el("a", { onclick: () => jump(d.sub_agent.first_part) }, d.sub_agent.first_part), "–", el("a", { onclick: () => jump(d.sub_agent.last_part) }, d.sub_agent.last_part)] : " (no parts recorded)")] : null,
          d.status ? [el("dt", {}, "status"), el("dd", { class: d.status === "error" ? "bad" : "" }, d.status)] : null,
          el("dt", {}, "commit"), el("dd", { class: "mono" }, d.git_commit || "–"),
          d.usage ? [el("dt", {}, "tokens"), el("dd", {}, "input " + num(d.usage.input) + ", output " + num(d.usage.output) + ", reasoning " + num(d.usage.reasoning) + ", cache read " + num(d.usage.cache_read) + ", cache write " + num(d.usage.cache_write))] : null,
          d.cost_usd !== undefined && d.cost_usd !== null ? [el("dt", {}, "cost"), el("dd", {}, money(d.cost_usd))] : null));
      const fx = el("div", { class: "effect", id: "effect" });
      add(body, fx);
      showEffect(fx, n);
      if (d.prompt) add(body, el("h2", {}, "Prompt"), el("pre", { class: "prompt" }, d.prompt));
      for (const a of d.before) if (a.text) add(body, el("h2", {}, a.kind || "before"), el("pre", { class: "aside" }, a.text));
      if (d.text) add(body, el("h2", {}, d.kind === "reasoning" ? "Reasoning" : "Text"), el("pre", { class: "agent-text", id: "agent-text" }, d.text));
      const a = d.action;
      if (a) add(body, actionBlock(a, d));
      else if (d.input) add(body, el("h2", {}, "Input"), el("pre", { class: "tool-input" }, d.input));
      // A run_tests output is its result as JSON: the case table below
      // shows it; the JSON stays behind a toggle.
      if (d.output && d.calls.length && d.output.trimStart().startsWith("{")) add(body, el("details", {}, el("summary", {}, "tool output (JSON)"), el("pre", { class: "tool-output" }, d.output)));
      else if (d.output) add(body, el("h2", {}, a && a.kind === "command" ? "Output" : "Result"), el("pre", { class: "tool-output" }, d.output));
      if (d.tool_error) add(body, el("h2", { class: "bad" }, "Error"), el("pre", {}, d.tool_error));
      if (a && d.input) add(body, el("details", {}, el("summary", {}, "tool input (JSON)"), el("pre", { class: "tool-input" }, d.input)));
      for (const c of d.calls) add(body, testsBlock(c));
      const cp = d.checkpoint;
      if (cp && cp.committed) {
        add(body, el("h2", {}, "Files changed (" + cp.changed_files.length + ")"),
          el("ul", { class: "files" }, cp.changed_files.map((f) => el("li", {}, el("a", { onclick: () => openFile(n, f) }, f)))),
          el("button", { id: "open-diff", onclick: () => { st.tab = "diff"; setHash(); showTab(); } }, "Show diff"));
      }
      if (d.model_calls.length) {
        add(body, el("h2", {}, "Model calls"), el("table", {}, el("tr", {}, el("th", {}, "model"), el("th", { class: "num" }, "input"), el("th", { class: "num" }, "output"), el("th", { class: "num" }, "cache read"), el("th", { class: "num" }, "cost"), el("th", { class: "num" }, "seconds"), el("th", {}, "finish")),
          d.model_calls.map((m) => el("tr", {}, el("td", {}, (m.provider ? m.provider + "/" : "") + m.model), el("td", { class: "num" }, m.tokens ? num(m.tokens.input) : "–"), el("td", { class: "num" }, m.tokens ? num(m.tokens.output) : "–"),
            el("td", { class: "num" }, m.tokens ? num(m.tokens.cache_read) : "–"), el("td", { class: "num" }, money(m.cost)), el("td", { class: "num" }, m.completed && m.created ? ((m.completed - m.created) / 1000).toFixed(1) : "–"), el("td", { class: m.error ? "bad" : "" }, m.error || m.finish || "")))));
      }
      if (d.gateway_calls.length) add(body, el("h2", {}, "Model gateway record"), callTable(d.gateway_calls));
      if (d.raw) add(body, el("details", {}, el("summary", {}, "raw part" + (d.raw_truncated ? " (clipped)" : "")), el("pre", {}, d.raw)));
    }

    // actionBlock draws what a tool did: an edit as a diff, a write as the
    // file, a command as a shell line, a sub-agent as a link to its parts.
    function actionBlock(a, d) {
      const box = el("div", { class: "action action-" + a.kind, id: "action" });
      if (a.kind === "edit") {
        const pre = el("pre", { class: "diff", id: "action-diff" });
        for (const l of a.diff || []) pre.appendChild(el("span", { class: l.op === "+" ? "add" : l.op === "-" ? "del" : l.op === "@" ? "hunk" : "ctx" }, l.op === "@" ? "@@ " + l.text + " @@" : l.op + l.text));
        add(box, el("h2", {}, "Edit ", el("span", { class: "mono" }, a.path || "?")), pre, a.truncated ? el("p", { class: "warn" }, "diff clipped") : null,
          a.too_large ? el("p", { class: "warn" }, "too large to diff: shown as the old lines removed and the new added") : null);
      } else if (a.kind === "write") {
        add(box, el("h2", {}, "Wrote ", el("span", { class: "mono" }, a.path || "?")), codeBlock({ lines: a.lines, text: a.text || "" }, "action-file"), a.truncated ? el("p", { class: "warn" }, "file clipped") : null);
      } else if (a.kind === "command") {
        add(box, el("h2", {}, "Command", a.description ? el("span", { class: "muted" }, " — " + a.description) : null,
          a.exit_code !== undefined && a.exit_code !== null ? el("span", { class: a.exit_code === 0 ? "good" : "bad", id: "exit-code" }, " · exit " + a.exit_code) : null),
          el("pre", { class: "command", id: "action-command" }, "$ " + a.command));
      } else if (a.kind === "task") {
        const sa = d.sub_agent;
        add(box, el("h2", {}, "Sub-agent", a.description ? el("span", { class: "muted" }, " — " + a.description) : null),
          sa && sa.first_part ? el("p", {}, el("a", { class: "sub-agent-link", id: "sub-agent-link", onclick: () => jump(sa.first_part) }, "open its session (parts " + sa.first_part + "–" + sa.last_part + ")")) : el("p", { class: "muted" }, "its session recorded no parts"),
          a.prompt ? el("pre", { class: "prompt" }, a.prompt) : null);
      }
      return box;
    }

    // testsBlock is one run_tests call: its counts, a failed build, then
    // its cases, failing first, with expected against actual.
    function testsBlock(c) {
      const box = el("div", { class: "run-tests" });
      add(box, el("h2", {}, "run_tests ", el("span", { class: "mono" }, c.path), " ", c.ok ? el("span", { class: c.failed ? "bad" : "good" }, c.passed + "/" + c.total + " passed") : el("span", { class: "bad" }, "no result"),
        el("span", { class: "muted" }, " · " + (c.duration_ms / 1000).toFixed(1) + " s")));
      if (c.error) add(box, el("pre", { class: "bad" }, c.error));
      if (c.build) add(box, el("div", { class: "bad" }, "build failed (exit " + c.build.exit_code + ")" + (c.build.error ? ": " + c.build.error : "")), c.build.stderr_tail ? el("pre", {}, c.build.stderr_tail) : null);
      for (const v of c.voided || []) add(box, el("div", { class: "bad" }, "suite " + v.suite + " voided: " + v.reason));
      if (c.cases && c.cases.length) {
        const exp = (x) => [x.expect_reject ? "reject" : null, x.expected_exit_code !== undefined && x.expected_exit_code !== null ? "exit " + x.expected_exit_code : null, x.expected_stdout !== undefined && x.expected_stdout !== null ? "stdout " + JSON.stringify(x.expected_stdout) : null].filter(Boolean).join(", ");
        const act = (x) => "exit " + x.actual_exit_code + (x.expected_stdout !== undefined && x.expected_stdout !== null ? ", stdout " + JSON.stringify(x.actual_stdout) : "");
        add(box, el("div", { class: "table-wrap" }, el("table", { class: "cases" },
          el("tr", {}, el("th", {}, "case"), el("th", {}, ""), el("th", {}, "phase"), el("th", {}, "expected"), el("th", {}, "actual"), el("th", {}, "stderr / error")),
          c.cases.map((x) => el("tr", { class: x.passed ? "pass" : "fail" }, el("td", { class: "mono" }, x.name), el("td", { class: x.passed ? "good" : "bad" }, x.passed ? "pass" : "fail"), el("td", {}, x.phase),
            el("td", { class: "mono" }, x.passed ? "" : exp(x)), el("td", { class: "mono" }, x.passed ? "" : act(x)),
            el("td", { class: "mono" }, x.error ? el("div", { class: "bad" }, x.error) : null, x.stderr_tail && !x.passed ? el("pre", { class: "tail" }, x.stderr_tail) : null))))),
          c.more_cases ? el("p", { class: "muted" }, c.more_cases + " more cases not listed") : null);
      }
      return box;
    }

    // callTable lists model calls of the gateway's record; a row opens the
    // call's response below the table.
    function callTable(rows) {
      const out = el("div");
      const resp = el("div");
      const partLink = (c) => c.parts_before !== undefined && c.parts_before !== null ? el("a", { onclick: () => jump(c.parts_before + 1) }, "part " + (c.parts_before + 1)) : "–";
      add(out, el("table", { class: "gateway-calls" },
        el("tr", {}, el("th", { class: "num" }, "#"), el("th", {}, "started"), el("th", {}, "model"), el("th", { class: "num" }, "status"), el("th", { class: "num" }, "latency s"),
          el("th", { class: "num" }, "input"), el("th", { class: "num" }, "output"), el("th", { class: "num" }, "cost"), el("th", {}, "for"), el("th", {}, "")),
        rows.map((c) => el("tr", {}, el("td", { class: "num" }, c.seq), el("td", {}, (c.started_at || "").substring(11, 19)), el("td", {}, c.model || "–"),
          el("td", { class: "num " + (c.status >= 400 ? "bad" : "") }, c.status), el("td", { class: "num" }, (c.latency_ms / 1000).toFixed(2)),
          el("td", { class: "num" }, c.tokens ? num(c.tokens.input) : "–"), el("td", { class: "num" }, c.tokens ? num(c.tokens.output) : "–"), el("td", { class: "num" }, money(c.cost)),
          el("td", {}, partLink(c)),
          el("td", {}, el("a", { class: "open-call", onclick: async () => {
            clear(resp);
            try {
              const d = await api("/api/t/" + enc(id) + "/calls/" + c.seq);
              const r = d.reply;
              add(resp, el("h2", {}, "Model call " + d.seq + (d.model ? " · " + d.model : "")),
                el("div", { class: "muted" }, (d.latency_ms / 1000).toFixed(2) + " s" + (d.first_byte_ms ? " (first byte " + (d.first_byte_ms / 1000).toFixed(2) + " s)" : "") +
                  (d.tokens ? " · input " + num(d.tokens.input) + ", output " + num(d.tokens.output) + ", cache read " + num(d.tokens.cache_read) : "") + (d.cost ? " · " + money(d.cost) : "") +
                  " · request " + num(d.request.bytes) + " bytes, sha256 " + d.request.sha256), d.error ? el("pre", { class: "bad" }, d.error) : null,
                r ? el("div", { class: "call-reply" },
                  r.reasoning ? [el("h2", {}, "Reasoning"), el("pre", { class: "reply-reasoning" }, r.reasoning)] : null,
                  r.text ? [el("h2", {}, "Text"), el("pre", { class: "reply-text" }, r.text)] : null,
                  (r.tool_calls || []).map((c) => [el("h2", {}, "Tool call ", el("span", { class: "mono" }, c.name)), el("pre", { class: "reply-tool" }, prettyJSON(c.arguments))])) : null,
                el("details", { open: r ? null : true }, el("summary", {}, "raw response" + (d.truncated ? " (clipped)" : "")), el("pre", { class: "call-response" }, d.response)));
            } catch (e) { add(resp, el("p", { class: "bad" }, e.message)); }
          } }, "response"))))), resp);
      return out;
    }

    async function showCalls(body, from) {
      const d = await api("/api/t/" + enc(id) + "/calls?from=" + from + "&n=200");
      clear(body);
      if (!d.recorded) { add(body, el("p", { class: "muted" }, "No model gateway record for this trajectory (model_calls.jsonl): the per-part model calls the harness reported are in each part's view.")); return; }
      add(body, el("h2", {}, "Model calls " + (d.from + 1) + "–" + (d.from + d.rows.length) + " of " + num(d.total)),
        el("div", { class: "toolbar" },
          el("button", { disabled: d.from === 0, onclick: () => showCalls(body, Math.max(0, d.from - 200)) }, "◀ earlier"),
          el("button", { disabled: d.from + d.rows.length >= d.total, onclick: () => showCalls(body, d.from + 200) }, "later ▶")),
        callTable(d.rows));
    }

    async function showDiff(body, n) {
      const d = await api("/api/t/" + enc(id) + "/diff/" + n);
      if (st.sel !== n) return;
      clear(body);
      if (d.none) { add(body, el("p", { class: "muted", id: "no-diff" }, "Part " + n + ": " + d.none + ".")); return; }
      add(body, el("h2", {}, "Part " + n + " diff"), el("div", { class: "muted mono" }, d.before.substring(0, 12) + " → " + d.after.substring(0, 12)),
        el("ul", { class: "files" }, d.files.map((f) => el("li", { class: "diff-file" }, el("span", { class: "badge" }, f.status), " ", f.from ? f.from + " → " : "", f.path, f.binary ? " (binary)" : "", f.too_large ? el("span", { class: "warn too-large" }, " (too large to diff)") : null))));
      if (d.too_large) add(body, el("p", { class: "warn", id: "too-large" }, "Some files are too large to diff: their changes are not shown line by line (the diff's work is bounded, as git's is)."));
      const pre = el("pre", { class: "diff", id: "patch" });
      const lines = d.patch.split("\n");
      const LIMIT = 4000;
      for (const line of lines.slice(0, LIMIT)) {
        let cls = "ctx";
        if (line.startsWith("diff --git") || line.startsWith("+++") || line.startsWith("---") || line.startsWith("index ")) cls = "meta";
        else if (line.startsWith("@@")) cls = "hunk";
        else if (line.startsWith("+")) cls = "add";
        else if (line.startsWith("-")) cls = "del";
        pre.appendChild(el("span", { class: cls }, line));
      }
      add(body, pre);
      if (lines.length > LIMIT || d.truncated) add(body, el("p", { class: "warn" }, "Diff clipped (" + lines.length + " lines" + (d.truncated ? ", over 2 MB" : "") + ")."));
    }

    // The code tab shows the tree and a file side by side at the part's
    // commit: the file with line numbers, highlighted, the lines this part
    // added marked, and the parts whose checkpoints changed it as links.
    // st.codeDir and st.codeFile keep the place when another part opens.
    async function showCode(body, n, dir) {
      if (dir === undefined) dir = st.codeDir || "";
      const d = await api("/api/t/" + enc(id) + "/tree/" + n + "?path=" + enc(dir));
      if (st.sel !== n) return;
      st.codeDir = d.path;
      clear(body);
      const list = el("ul", { class: "files", id: "tree" });
      for (const e of d.entries) {
        const full = (d.path ? d.path + "/" : "") + e.name;
        add(list, el("li", { class: full === st.codeFile ? "open" : null }, e.type === "dir"
          ? el("a", { onclick: () => showCode(body, n, full) }, "📁 " + e.name + "/")
          : el("a", { onclick: () => openFile(n, full) }, e.name), e.size ? el("span", { class: "muted" }, "  " + num(e.size) + " B") : null));
      }
      if (!d.entries.length) add(list, el("li", { class: "muted" }, "(empty)"));
      const filePane = el("div", { class: "file-pane", id: "file-pane" }, el("p", { class: "muted" }, "Pick a file."));
      add(body, el("h2", {}, "Code at part " + n), el("div", { class: "code-split", id: "code-split" },
        el("div", { class: "tree-pane" }, pathCrumb(n, d.path), list), filePane));
      if (st.codeFile) await openFile(n, st.codeFile);
    }
    function pathCrumb(n, path) {
      const c = el("div", { class: "crumb mono" });
      const body = () => document.getElementById("detail-body");
      add(c, el("a", { onclick: () => showCode(body(), n, "") }, "/"));
      const segs = path ? path.split("/") : [];
      segs.forEach((s, i) => {
        const sub = segs.slice(0, i + 1).join("/");
        add(c, el("a", { onclick: () => showCode(body(), n, sub) }, s), "/");
      });
      return c;
    }
    // openFile shows path at part n beside the tree (building the tab
    // first when another tab is open).
    async function openFile(n, path) {
      st.codeFile = path;
      let pane = document.getElementById("file-pane");
      if (!pane || st.tab !== "code") {
        st.tab = "code"; setHash();
        const i = path.lastIndexOf("/");
        st.codeDir = i > 0 ? path.substring(0, i) : "";
        return showTab();
      }
      for (const li of document.querySelectorAll("#tree li")) li.classList.toggle("open", li.querySelector("a") && (st.codeDir ? st.codeDir + "/" : "") + li.querySelector("a").textContent === path);
      clear(pane); add(pane, el("p", { class: "muted" }, "Loading…"));
      try {
        const d = await api("/api/t/" + enc(id) + "/file/" + n + "?path=" + enc(path));
        if (st.sel !== n) return;
        clear(pane);
        const f = d.file;
        const here = f.changed_at.indexOf(n) >= 0;
        add(pane, el("div", { class: "mono file-name" }, f.path), el("div", { class: "muted" }, num(f.size) + " bytes" + (f.truncated ? " (first 1 MB shown)" : "") +
            (f.added.length ? " · " + f.added.length + (f.added.length === 1 ? " line" : " lines") + " added at this part (marked)" : "") +
            (f.added_too_large ? " · too large to diff: added lines not marked" : "")),
          el("div", { class: "changed-at", id: "changed-at" }, "changed at parts: ", f.changed_at.length ? f.changed_at.map((p, i) => [i ? ", " : "", p === n ? el("b", {}, p) : el("a", { "data-part": p, onclick: () => { st.tab = "code"; st.codeFile = path; jump(p); } }, p)]) : "none recorded",
            f.more_changes ? " …" : "", here ? null : el("span", { class: "muted" }, " (not at this part)")),
          f.binary ? el("p", { class: "muted" }, "Binary file.") : codeBlock(f));
      } catch (e) { clear(pane); add(pane, el("p", { class: "bad" }, e.message)); }
      detail.setAttribute("data-part", n); detail.setAttribute("data-tab", "code");
    }

    // showEffect says what part n did to the score: before → after at its
    // checkpoint (with the source), the tests or suites that first passed,
    // broke or were fixed there, and the nearest score changes.
    async function showEffect(box, n) {
      let e;
      try { e = await api("/api/t/" + enc(id) + "/effect/" + n); } catch (err) { add(box, el("span", { class: "bad" }, err.message)); return; }
      if (st.sel !== n) return;
      st.effect = e;
      if (!e.source) { add(box, el("span", { class: "muted" }, "No score known for this trajectory.")); return; }
      const testLinks = (names) => names.map((t, i) => [i ? ", " : "", el("a", { class: "mono", onclick: () => { st.testFilter = t; st.tab = "tests"; setHash(); showTab(); } }, t)]);
      add(box, el("div", {}, "score ", el("span", { class: "muted" }, "(" + srcName(e.source) + ")"), " ",
        el("b", { class: "before" }, pct(e.before)), " → ", el("b", { class: "after" }, pct(e.after)),
        e.evaluated ? el("span", { class: "muted" }, " at this part's checkpoint") : el("span", { class: "muted" }, " (no result at this part; the score standing)")),
      e.first_passed.length ? el("div", { class: "good first-passed" }, "first passed: ", testLinks(e.first_passed)) : null,
      e.broken.length ? el("div", { class: "bad broken" }, "broke: ", testLinks(e.broken)) : null,
      e.fixed.length ? el("div", { class: "fixed" }, "fixed: ", testLinks(e.fixed)) : null,
      el("div", { class: "muted" }, e.prev_change ? el("a", { class: "prev-change", onclick: () => jump(e.prev_change) }, "◀ score changed at part " + e.prev_change) : "no earlier score change",
        " · ", e.next_change ? el("a", { class: "next-change", onclick: () => jump(e.next_change) }, "next change at part " + e.next_change + " ▶") : "no later score change"));
    }

    // codeBlock shows a file with line numbers; highlighted by the server's
    // tokens ([class, text]) when it sent them, styled by app.css classes.
    function codeBlock(f, id) {
      const pre = el("pre", { class: "file code" + (f.lines ? " hl" : ""), id: id || "file" });
      const lines = f.lines || f.text.split("\n").map((t) => [["", t]]);
      const added = new Set(f.added || []);
      const frag = document.createDocumentFragment();
      lines.forEach((toks, i) => {
        const line = el("span", { class: "line" + (added.has(i + 1) ? " added" : "") }, el("span", { class: "ln" }, String(i + 1)));
        for (const [c, t] of toks) line.appendChild(c ? el("span", { class: "t-" + c }, t) : document.createTextNode(t));
        line.appendChild(document.createTextNode("\n"));
        frag.appendChild(line);
      });
      pre.appendChild(frag);
      return pre;
    }

    // showTests shows the score per suite (latest, and standing at the
    // selected part) and, from an evaluation, each test's history with its
    // state at the selected part; the tests table sorts by any column.
    async function showTests(body) {
      const n = st.sel;
      const d = await api("/api/t/" + enc(id) + "/tests" + (n ? "?part=" + n : ""));
      clear(body);
      if (!d.source) { add(body, el("p", { class: "muted" }, "No test results: the trace has no ground truth or run_tests results and the trajectory has no evaluation (run traj replay evaluate).")); return; }
      const link = (p) => el("a", { onclick: () => jump(p) }, p);
      const links = (ps) => ps && ps.length ? ps.map((p, i) => [i ? ", " : "", link(p)]) : "–";
      const at = d.part ? d.at_part || {} : null;
      add(body, el("h2", {}, "Score per suite ", el("span", { class: "muted", id: "tests-source", "data-source": d.source }, "(from " + srcName(d.source) + ")"),
          d.part ? el("span", { class: "muted", id: "tests-at" }, " · at part " + d.part + ": " + pct(d.overall_at_part) + " overall") : null),
        el("div", { class: "table-wrap" }, el("table", { id: "suites" }, el("tr", {}, el("th", {}, "suite"), at ? el("th", { class: "num" }, "at part " + d.part) : null, el("th", { class: "num" }, "latest passed"), el("th", { class: "num" }, "total"), el("th", { class: "num" }, "latest rate"), el("th", {}, "latest at part")),
          d.suites.map((s) => el("tr", {}, el("td", { class: "mono" }, s.suite), at ? el("td", { class: "num at-part" }, s.suite in at ? pct(at[s.suite]) : "–") : null, el("td", { class: "num" }, num(s.passed)), el("td", { class: "num" }, num(s.total)), el("td", { class: "num" }, pct(s.rate)), el("td", {}, link(s.part)))))));
      if (d.tests.length) {
        // A test's state at part n: the newest of its first pass, breaks
        // and fixes at or before n.
        const passingAt = (t) => {
          let last = 0, pass = false;
          if (t.first_pass && t.first_pass <= n) { last = t.first_pass; pass = true; }
          for (const b of t.broken_at || []) if (b <= n && b >= last) { last = b; pass = false; }
          for (const f of t.fixed_at || []) if (f <= n && f > last) { last = f; pass = true; }
          return pass;
        };
        let filter = (st.testFilter || "").toLowerCase();
        let sortKey = st.testSort || "test", sortDir = st.testSortDir || 1;
        const box = el("input", { type: "search", placeholder: "filter tests", value: st.testFilter || null, oninput: (e) => { filter = e.target.value.toLowerCase(); draw(); } });
        st.testFilter = "";
        const table = el("table", { id: "tests" });
        const LIMIT = 1500;
        const keyOf = {
          test: (t) => t.test, first: (t) => t.first_pass || Infinity, broken: (t) => (t.broken_at || []).length, fixed: (t) => (t.fixed_at || []).length,
          at: (t) => n ? (passingAt(t) ? 1 : 0) : 0, end: (t) => t.passing_at_end ? 1 : 0,
        };
        const cols = [["test", "test"], ["first", "first passed at"], ["broken", "broken at"], ["fixed", "fixed at"]].concat(n ? [["at", "at part " + n]] : [], [["end", "at the end"]]);
        const draw = () => {
          clear(table);
          add(table, el("tr", {}, cols.map(([k, label]) => el("th", { class: "sortable", "data-key": k, onclick: () => { sortDir = sortKey === k ? -sortDir : 1; sortKey = k; st.testSort = k; st.testSortDir = sortDir; draw(); } },
            label + (k === sortKey ? (sortDir > 0 ? " ▲" : " ▼") : "")))));
          const shown = d.tests.filter((t) => !filter || t.test.toLowerCase().includes(filter));
          const kf = keyOf[sortKey] || keyOf.test;
          shown.sort((a, b) => { const x = kf(a), y = kf(b); return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
          for (const t of shown.slice(0, LIMIT)) {
            const now = n ? passingAt(t) : null;
            add(table, el("tr", { "data-test": t.test }, el("td", { class: "mono" }, t.test), el("td", {}, t.first_pass ? link(t.first_pass) : "never"), el("td", { class: "bad" }, links(t.broken_at)), el("td", {}, links(t.fixed_at)),
              n ? el("td", { class: "at-part " + (now ? "good" : "bad") }, now ? "passing" : "failing") : null,
              el("td", { class: t.passing_at_end ? "good" : "bad" }, t.passing_at_end ? "passing" : "failing")));
          }
          if (shown.length > LIMIT) add(table, el("tr", {}, el("td", { class: "muted", colspan: cols.length }, (shown.length - LIMIT) + " more: filter to narrow")));
        };
        draw();
        add(body, el("h2", {}, "Tests (from the evaluation)"), el("div", { class: "toolbar" }, box, el("span", { class: "muted" }, d.tests.length + " tests · click a column to sort")), el("div", { class: "table-wrap" }, table));
      }
      if (d.paths.length) {
        add(body, el("h2", {}, "The agent's run_tests calls ", el("span", { class: "muted" }, d.source === "run_tests" ? "(the only results known: the agent's claim)" : "(its own claim, not the score)")), el("table", {}, el("tr", {}, el("th", {}, "path"), el("th", { class: "num" }, "calls"), el("th", {}, "best"), el("th", {}, "first call"), el("th", {}, "last")),
          d.paths.map((p) => el("tr", {}, el("td", { class: "mono" }, p.path), el("td", { class: "num" }, p.calls), el("td", {}, p.best_passed + "/" + p.total + " at part ", link(p.best_part)),
            el("td", {}, link(p.first_part)), el("td", {}, p.last_passed + " at part ", link(p.last_part))))));
      }
    }

    async function refresh(first) {
      try {
        const m = await api("/api/t/" + enc(id));
        if (st.stopped) return;
        const changed = m.version !== st.version;
        st.meta = m;
        if (changed) {
          st.version = m.version;
          drawHead(m);
          fillFilters(m);
          const grew = m.parts !== st.total;
          setTotal(m.parts);
          st.partial = null;
          // Rows and curve load side by side: the timeline does not wait
          // for the curve.
          if (grew && st.follow) jump(st.total);
          else drawRows();
          curve = await api("/api/t/" + enc(id) + "/curve");
          sweeps = await api("/api/t/" + enc(id) + "/sweeps").catch(() => []);
          drawCurve();
        }
        if (first) {
          document.body.setAttribute("data-ready", "1");
          if (startPart) jump(startPart);
          else showTab();
        }
        status(m.running ? "recording: updates as parts arrive" : "");
      } catch (e) { status("error: " + e.message); if (first) { clear(app); add(app, el("p", { class: "bad" }, e.message)); } }
      if (!st.stopped && (first || (st.meta && st.meta.running))) st.timer = setTimeout(() => refresh(false), POLL_MS);
    }
    async function checkpoint(dir) {
      const d = await api("/api/t/" + enc(id) + "/nav/" + (st.sel || 0) + "?dir=" + dir);
      if (d.part) jump(d.part);
    }
    function onKey(e) {
      if (e.target && (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA")) return;
      const fx = st.effect && st.effect.part === st.sel ? st.effect : null;
      switch (e.key) {
        case "j": jump(Math.min((st.sel || 0) + 1, st.total)); break;
        case "k": jump(Math.max((st.sel || 2) - 1, 1)); break;
        case "n": checkpoint("next"); break;
        case "p": checkpoint("prev"); break;
        case "]": if (fx && fx.next_change) jump(fx.next_change); break;
        case "[": if (fx && fx.prev_change) jump(fx.prev_change); break;
        default: return;
      }
      e.preventDefault();
    }
    document.addEventListener("keydown", onKey);
    window.trajView = { jump, select, state: st };
    refresh(true);
    return () => { st.stopped = true; clearTimeout(st.timer); window.trajView = null; document.removeEventListener("keydown", onKey); };
  }

  // ---------- compare page ----------
  // Runs of the same harness, model and task are repeats: they share a
  // colour, and with two or more the chart draws their mean and a band
  // from the lowest to the highest. Trajectories are rows everywhere, so
  // 20 or more fit the width; suites are small multiples.
  function repeatKey(s) { return [s.agent || "?", s.model || "?", s.task || "?"].join(" · "); }
  function stairAt(pts, x) { let v = null; for (const p of pts) { if (p[0] > x) break; v = p[1]; } return v; }
  // groupBands turns runs [{group, color, points}] into a mean line and a
  // band per group with two or more runs, sampled at 120 x positions.
  function groupBands(runs) {
    const groups = new Map();
    for (const r of runs) { if (!groups.has(r.group)) groups.set(r.group, []); groups.get(r.group).push(r); }
    const means = [], bands = [];
    for (const [g, rs] of groups) {
      if (rs.length < 2) continue;
      let lo = Infinity, hi = -Infinity;
      for (const r of rs) for (const p of r.points) { lo = Math.min(lo, p[0]); hi = Math.max(hi, p[0]); }
      if (!isFinite(lo)) continue;
      const pts = [], band = [];
      for (let i = 0; i <= 120; i++) {
        const x = lo + (hi - lo) * i / 120;
        const vs = rs.map((r) => stairAt(r.points, x) ?? 0);
        pts.push([x, vs.reduce((a, b) => a + b, 0) / vs.length]);
        band.push([x, Math.min(...vs), Math.max(...vs)]);
      }
      means.push({ name: g + " (mean of " + rs.length + ")", group: g, color: rs[0].color, width: 2.6, points: pts });
      bands.push({ name: g + " (mean of " + rs.length + ")", color: rs[0].color, points: band });
    }
    return { means, bands };
  }
  // fromPart keeps a curve's points ([part, time, rate]) after part p,
  // starting at p with the rate it had there: a fork's own curve, its
  // parts up to the fork point being its source's.
  function fromPart(pts, p) {
    const out = [];
    pts.forEach((q, i) => {
      if (q[0] <= p) return;
      if (!out.length && i > 0) out.push([p, pts[i - 1][1], pts[i - 1][2]]);
      out.push(q);
    });
    if (!out.length && pts.length) { const last = pts[pts.length - 1]; out.push([p, last[1], last[2]]); }
    return out;
  }
  function comparePage(app, ids) {
    crumbs(el("a", { href: "#/" }, "store"), "compare");
    if (ids.length < 1) { add(app, el("p", {}, "Pick trajectories on the store page to compare.")); return () => {}; }
    let by = "part", data = null;
    const box = el("div", { class: "chart", id: "compare-curve" });
    const btn = (key, label) => el("button", { id: "x-" + key, class: key === by ? "on" : "", onclick: (e) => { by = key; for (const b of e.target.parentNode.querySelectorAll("button")) b.className = b === e.target ? "on" : ""; box._zoom = null; draw(); } }, label);
    const multiples = el("div", { class: "multiples", id: "compare-suites" });
    const tables = el("div");
    const title = el("h1", {}, "Compare " + ids.length + " trajectories");
    add(app, title, el("div", { class: "toolbar" }, el("b", {}, "Overall pass rate by"), btn("part", "part"), btn("time", "elapsed time"), btn("cost", "cost"),
      el("span", { class: "muted" }, "repeats (same harness, model, task) share a colour: mean line, band from lowest to highest; a fork starts at its fork point, over its source (dashed)")), box,
      el("h2", {}, "Per suite"), multiples, tables);
    function xOf(t) {
      if (by === "part") return (p) => p[0];
      if (by === "time") return (p) => (p[1] - t.start_ms) / 3.6e6;
      return (p) => stairAt(t.cost_at, p[0]) || 0;
    }
    const xfmt = () => by === "part" ? (x) => "part " + Math.round(x) : by === "time" ? (x) => x.toFixed(x < 10 ? 1 : 0) + " h" : (x) => money(x);
    // A fork whose source is on the page is drawn from its fork point
    // only, in a group of its own (a fork is not a repeat of its source);
    // the source is drawn whole, dashed.
    function forkOf(t) {
      const l = t.summary.lineage;
      return l && l.kind === "fork" && l.part > 0 && data.trajectories.some((u) => u.summary.id === l.source) ? l : null;
    }
    function isSource(t) { return data.trajectories.some((u) => { const l = forkOf(u); return l && l.source === t.summary.id; }); }
    function groupKey(t) { const l = forkOf(t); return repeatKey(t.summary) + (l ? " · fork of " + l.source + " at part " + l.part : ""); }
    function seriesName(t) { const l = forkOf(t); return t.summary.id + (l ? " (fork of " + l.source + " at part " + l.part + ")" : isSource(t) ? " (source)" : ""); }
    function forkMarks() {
      if (by !== "part") return [];
      return data.trajectories.filter(forkOf).map((t) => {
        const l = forkOf(t);
        return { x: l.part, part: l.part, text: "fork at " + l.part, label: t.summary.id + " forked from " + l.source + " at part " + l.part };
      });
    }
    function runs(pick) {
      const keys = [...new Set(data.trajectories.map(groupKey))];
      return data.trajectories.map((t) => {
        const k = groupKey(t), xo = xOf(t), l = forkOf(t);
        const many = data.trajectories.filter((u) => groupKey(u) === k).length > 1;
        const pts = l ? fromPart(pick(t), l.part) : pick(t);
        return { name: seriesName(t), group: k, color: COLORS[keys.indexOf(k) % COLORS.length], width: many ? 1 : 2, opacity: many ? 0.55 : 1, nolegend: many,
          dash: !many && isSource(t) ? "6 4" : undefined, id: t.summary.id, fork: l ? l.part : undefined, points: pts.map((p) => [xo(p), p[2]]) };
      });
    }
    function draw() {
      if (!data) return;
      const rs = runs((t) => t.curve.points);
      const { means, bands } = groupBands(rs);
      chart(box, rs.concat(means), [], { height: 280, bands, vmarks: forkMarks(), xmin: by === "part" ? 1 : 0, xfmt: xfmt() });
      clear(multiples);
      const suites = [...new Set(data.trajectories.flatMap((t) => Object.keys(t.curve.suites)))].sort();
      for (const name of suites) {
        const cell = el("div", { class: "chart small" });
        add(multiples, el("div", { class: "multiple" }, el("div", { class: "mono small-title" }, name), cell));
        const srs = runs((t) => t.curve.suites[name] || []).map((r) => Object.assign(r, { nolegend: true }));
        const g = groupBands(srs);
        chart(cell, srs.concat(g.means.map((m) => Object.assign(m, { nolegend: true }))), [], { height: 120, bands: g.bands, vmarks: forkMarks(), xmin: by === "part" ? 1 : 0, xfmt: xfmt(), id: "suite-" + name });
      }
    }
    (async () => {
      try {
        data = await api("/api/compare?ids=" + ids.map(enc).join(","));
      } catch (e) { add(app, el("p", { class: "bad" }, e.message)); return; }
      draw();
      const ts = data.trajectories;
      title.textContent = "Compare " + ts.length + " trajectories";
      const keys = [...new Set(ts.map(groupKey))];
      const sw = (t) => { const i = el("i", { class: "swatch" }); i.style.background = COLORS[keys.indexOf(groupKey(t)) % COLORS.length]; return i; };
      add(tables, el("h2", {}, "Trajectories"), el("table", { id: "compare-summary" },
        el("tr", {}, el("th", {}, "trajectory"), el("th", {}, "harness · model · task"), el("th", { class: "num" }, "parts"), el("th", {}, "end"), el("th", { class: "num" }, "score"), el("th", {}, "source"), el("th", { class: "num" }, "best"), el("th", { class: "num" }, "solved at"), el("th", { class: "num" }, "cost"), el("th", { class: "num" }, "duration"),
          data.milestones.map((m) => el("th", { class: "num" }, "→" + pct(m)))),
        ts.map((t) => { const s = t.summary; return el("tr", {}, el("td", { class: "id" }, sw(t), el("a", { href: "#/t/" + enc(s.id) }, s.id), lineageLine(s.lineage),
          t.source_of ? el("div", { class: "muted source-of" }, "shown as the source of " + t.source_of) : null), el("td", { class: "muted" }, repeatKey(s)), el("td", { class: "num" }, num(s.parts)), el("td", {}, endBadge(s)), el("td", { class: "num" }, pct(s.score)), el("td", { class: "muted" }, srcName(s.score_source)), el("td", { class: "num" }, pct(s.best)), el("td", { class: "num" }, s.solved_at ? "part " + s.solved_at : "–"), el("td", { class: "num" }, money(s.cost)), el("td", { class: "num" }, dur(s.duration_s)),
          data.milestones.map((m) => { const p = t.curve.milestones[String(m)]; const h = s.milestone_hours ? s.milestone_hours[String(m)] : undefined;
            const d = s.milestone_dollars ? s.milestone_dollars[String(m)] : undefined;
            return el("td", { class: "num" }, p ? [el("a", { href: "#/t/" + enc(s.id) + "/" + p }, "part " + p), h !== undefined || d !== undefined ? el("div", { class: "muted" }, [h !== undefined ? h.toFixed(1) + " h" : null, d !== undefined ? money(d) : null].filter(Boolean).join(" · ")) : null] : "never"); })); })),
        el("p", { class: "muted" }, "→N%: the first part reaching that overall pass rate, the hours and dollars it took."));
      document.body.setAttribute("data-ready", "1");
    })();
    window.addEventListener("resize", draw);
    return () => window.removeEventListener("resize", draw);
  }
})();
