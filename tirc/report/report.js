"use strict";
// The tirc report page. Everything it shows comes from the JSON blocks of
// this file: strings from a dump are untrusted, so they reach the DOM only
// through esc() or as text. Long texts and lists render only the rows in
// view (VList), and each tab is built when first opened.
(function () {
  const LINE = 16; // px per text line (report.css: .ln)
  const ROW = 24; // px per table row (report.css: .row)
  const GROW = 26; // px per kernel in the fusion graph
  const LABELS = 150; // most arcs labelled at once: more are a blur of text
  const OVERSCAN = 40;

  function esc(value) {
    return String(value).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }
  function block(id) {
    const el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }
  function bytes(n) {
    n = Number(n);
    if (!isFinite(n)) return "?";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let k = 0;
    while (Math.abs(n) >= 1024 && k < units.length - 1) { n /= 1024; k++; }
    return (k ? n.toFixed(1) : String(n)) + " " + units[k];
  }
  function num(x, digits) {
    const n = Number(x);
    return isFinite(n) ? n.toFixed(digits) : "";
  }
  function link(attrs, text) {
    const a = Object.entries(attrs).map(([k, v]) => ` data-${k}="${esc(v)}"`).join("");
    return `<a href="#" class="link"${a}>${esc(text)}</a>`;
  }
  function push(map, key, value) {
    const list = map.get(key);
    if (list) list.push(value); else map.set(key, [value]);
  }

  const DATA = block("tirc-data");
  const KINDS = { input: "input", op: "graph op", node: "node", fact: "schedule fact", kernel: "kernel",
    refusal: "refused pair", wline: "wrapper line", code: "kernel code", launch: "kernel launch" };

  // A list of rows of one height, of which only those in view are in the DOM.
  class VList {
    constructor(host, count, height, rowHtml, onClick) {
      host.innerHTML = '<div class="vl"><div class="vl-spacer"></div><div class="vl-rows"></div></div>';
      this.el = host.firstChild;
      this.rows = this.el.lastChild;
      this.height = height;
      this.rowHtml = rowHtml;
      this.frame = 0;
      this.setCount(count);
      this.el.addEventListener("scroll", () => this.schedule());
      this.rows.addEventListener("click", (ev) => {
        const row = ev.target.closest("[data-row]");
        if (row && !ev.target.closest("a.link")) onClick(Number(row.dataset.row), ev);
      });
    }
    setCount(count) {
      this.count = count;
      this.el.firstChild.style.height = count * this.height + "px";
    }
    schedule() {
      if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
    }
    render() {
      const view = this.el.clientHeight || 800;
      const first = Math.max(0, Math.floor(this.el.scrollTop / this.height) - OVERSCAN);
      const last = Math.min(this.count, first + Math.ceil(view / this.height) + 2 * OVERSCAN);
      const out = [];
      for (let i = first; i < last; i++) out.push(this.rowHtml(i));
      this.rows.style.transform = `translateY(${first * this.height}px)`;
      this.rows.innerHTML = out.join("");
    }
    scrollTo(row) {
      const view = this.el.clientHeight || 800;
      this.el.scrollTop = Math.max(0, row * this.height - view / 3);
      this.render();
    }
  }

  // ---- The graph shown, and its indexes.
  const state = { g: 0, tab: "overview", sel: null };
  let G = null; // DATA.graphs[state.g]
  let IX = null;

  function indexGraph(g) {
    const graph = DATA.graphs[g];
    const byLoc = graph.locs.map(() => []);
    const byKernel = graph.kernels.map(() => []);
    const byFile = graph.files.map(() => []);
    const byName = new Map();
    graph.items.forEach((it, n) => {
      for (const l of it[6]) byLoc[l].push(n);
      if (it[7] >= 0) byKernel[it[7]].push(n);
      if (it[0] === "refusal" && it[8] >= 0 && it[8] !== it[7]) byKernel[it[8]].push(n);
      byFile[it[1]].push(n);
      for (const part of it[4].split(/, | as /)) push(byName, part, n);
    });
    const sourceIndex = new Map(DATA.sources.map((s, k) => [s.name, k]));
    const locAt = new Map(graph.locs.map((l, n) => [l[0] + ":" + l[1], n]));
    const kernelNamed = new Map();
    graph.kernels.forEach((k, n) => { kernelNamed.set(k.name, n); if (k.python) kernelNamed.set(k.python, n); });
    const buffers = new Map();
    if (graph.memory) graph.memory.buffers.forEach((b, n) => buffers.set(b[0], n));
    return { graph, byLoc, byKernel, byFile, byName, sourceIndex, locAt, kernelNamed, buffers,
      texts: [], lineMaps: [], sources: [], marks: new Map(), views: {} };
  }
  function fileLines(f) {
    if (!IX.texts[f]) {
      const lines = block(`tirc-text-${state.g}-${f}`).split("\n");
      if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
      IX.texts[f] = lines;
    }
    return IX.texts[f];
  }
  function sourceLines(k) {
    if (IX.sources[k] === undefined) {
      const text = DATA.sources[k] && DATA.sources[k].available ? block(`tirc-source-${k}`) : null;
      IX.sources[k] = text === null ? null : text.split("\n");
    }
    return IX.sources[k];
  }
  // Line -> the item on it (the smallest span wins), per file.
  function lineMap(f) {
    if (!IX.lineMaps[f]) {
      const map = new Int32Array(fileLines(f).length + 2).fill(-1);
      for (const n of IX.byFile[f]) {
        const it = G.items[n];
        for (let line = it[2]; line <= it[3] && line < map.length; line++) {
          const old = map[line];
          if (old < 0 || G.items[old][3] - G.items[old][2] > it[3] - it[2]) map[line] = n;
        }
      }
      IX.lineMaps[f] = map;
    }
    return IX.lineMaps[f];
  }
  function where(n) {
    const it = G.items[n];
    const span = it[3] > it[2] ? `${it[2]}-${it[3]}` : `${it[2]}`;
    return `${G.files[it[1]].name}:${span}`;
  }
  function locText(l) { return `${G.locs[l][0]}:${G.locs[l][1]}`; }
  function itemLink(n, text) { return link({ item: n }, text || `${where(n)} ${G.items[n][4]}`); }
  function kernelLink(k) { return k >= 0 ? link({ kernel: k, "kernel-name": G.kernels[k].name }, "@" + G.kernels[k].name) : '<span class="muted">(no kernel)</span>'; }
  function locLink(l) { return link({ loc: l }, locText(l)); }

  // ---- Selection: what the sidebar describes and the views highlight.
  function selection() {
    const sel = state.sel;
    const none = { primary: [], related: [], locs: [], kernels: [] };
    if (!sel) return none;
    if (sel.t === "loc") {
      const related = IX.byLoc[sel.l];
      const kernels = [...new Set(related.map((n) => G.items[n][7]).filter((k) => k >= 0))];
      return { primary: [], related, locs: [sel.l], kernels };
    }
    if (sel.t === "kernel") {
      const related = IX.byKernel[sel.k];
      const primary = sel.focus !== undefined ? [sel.focus] : related.filter((n) => G.items[n][0] === "kernel");
      return { primary, related, locs: G.kernels[sel.k].locs, kernels: [sel.k] };
    }
    const it = G.items[sel.n];
    const related = [];
    if (it[0] === "refusal") {
      for (const k of [it[7], it[8]]) if (k >= 0) related.push(...IX.byKernel[k].filter((n) => G.items[n][0] === "kernel"));
    } else {
      const stage = G.files[it[1]].stage;
      if (stage === "fusion" || stage === "memplan") {
        for (const name of it[4].split(/, | as /)) {
          for (const n of IX.byName.get(name) || []) {
            const st = G.files[G.items[n][1]].stage;
            if (n !== sel.n && (st === "fusion" || st === "memplan")) related.push(n);
          }
        }
      }
    }
    return { primary: [sel.n], related, locs: it[6], kernels: [it[7], it[8]].filter((k) => k >= 0) };
  }
  function computeMarks(s) {
    IX.marks = new Map();
    const mark = (n, level) => {
      const it = G.items[n];
      let m = IX.marks.get(it[1]);
      if (!m) { m = new Uint8Array(fileLines(it[1]).length + 2); IX.marks.set(it[1], m); }
      for (let line = it[2]; line <= it[3] && line < m.length; line++) m[line] = Math.max(m[line], level);
    };
    for (const n of s.related) mark(n, 1);
    for (const n of s.primary) mark(n, 2);
    IX.selLocs = new Set(s.locs);
  }
  function select(sel, jump) {
    state.sel = sel;
    const s = selection();
    computeMarks(s);
    renderSide(s);
    for (const view of Object.values(IX.views)) if (view.refresh) view.refresh(s, jump);
  }
  // A click on an item: a kernel's part selects the kernel, focused on it.
  function selectItem(n, jump) {
    const it = G.items[n];
    if (it[7] >= 0 && it[0] !== "refusal" && it[0] !== "fact") select({ t: "kernel", k: it[7], focus: n }, jump);
    else select({ t: "item", n }, jump);
  }

  // ---- The sidebar.
  function renderSide(s) {
    const side = document.getElementById("side");
    const sel = state.sel;
    if (!sel) {
      side.innerHTML = '<h2>Nothing selected</h2><p class="muted">Click a source line, a line of a dump or of output_code.py, a kernel, a refused pair or a buffer; or search above.</p>';
      return;
    }
    const out = [];
    if (sel.t === "loc") out.push(...sideLoc(sel.l, s));
    else if (sel.t === "kernel") out.push(...sideKernel(sel.k, sel.focus));
    else out.push(...sideItem(sel.n, s));
    side.innerHTML = out.join("");
  }
  function sourceText(l) {
    const [file, line] = G.locs[l];
    const k = IX.sourceIndex.get(file);
    const lines = k === undefined ? null : sourceLines(k);
    if (!lines) return `<p class="muted">${esc(k === undefined ? "source not available" : DATA.sources[k].note)}</p>`;
    return `<div class="srcline">${esc(lines[line - 1] !== undefined ? lines[line - 1] : "")}</div>`;
  }
  function itemsByFile(list) {
    const out = [];
    const byFile = new Map();
    for (const n of list) push(byFile, G.items[n][1], n);
    for (const [f, ns] of [...byFile].sort((a, b) => a[0] - b[0])) {
      out.push(`<h3>${esc(G.files[f].name)}</h3><ul>`);
      for (const n of ns.slice(0, 200)) out.push(`<li>${itemLink(n, `${where(n)} ${G.items[n][4]} ${G.items[n][5]}`)}</li>`);
      if (ns.length > 200) out.push(`<li class="muted">${ns.length - 200} more</li>`);
      out.push("</ul>");
    }
    return out;
  }
  function sideLoc(l, s) {
    const out = [`<h2>${esc(locText(l))}</h2>`, sourceText(l), "<h3>Kernels from this line</h3>"];
    out.push(s.kernels.length ? `<p>${s.kernels.map(kernelLink).join(" ")}</p>` : '<p class="muted">none</p>');
    out.push(...itemsByFile(s.related));
    return out;
  }
  function sideKernel(k, focus) {
    const K = G.kernels[k];
    const out = [`<h2>kernel ${kernelLink(k)}${K.extern ? " (extern call)" : ""}</h2>`];
    if (K.target) out.push(`<p>${esc(K.target)}</p>`);
    if (K.attrs) out.push(`<p class="muted">${esc(K.attrs)}</p>`);
    if (K.python && K.python !== K.name) out.push(`<p>in output_code.py: <code>${esc(K.python)}</code></p>`);
    if (focus !== undefined) out.push(`<p>at ${itemLink(focus)}</p>`);
    out.push("<h3>Source lines</h3>");
    out.push(K.locs.length ? `<ul>${K.locs.map((l) => `<li>${locLink(l)}</li>`).join("")}</ul>` : '<p class="muted">none (its nodes carry no loc)</p>');
    out.push(`<h3>Nodes (${K.nodes.length})</h3><p>${K.nodes.map(esc).join(", ")}</p>`);
    out.push(`<h3>Ops</h3><p>${K.ops.map(esc).join(", ")}</p>`);
    const parts = IX.byKernel[k];
    const labels = { kernel: "in the fusion plan", wline: "launched", code: "code", launch: "launch in output_code.py", node: "node", refusal: "refused pair" };
    for (const kind of ["kernel", "wline", "code", "launch", "node", "refusal"]) {
      const ns = parts.filter((n) => G.items[n][0] === kind);
      if (!ns.length) continue;
      out.push(`<h3>${esc(labels[kind])}</h3><ul data-kind="${kind}">`);
      for (const n of ns.slice(0, 100)) out.push(`<li>${itemLink(n, `${where(n)} ${kind === "refusal" ? G.items[n][4] + " " + G.items[n][5] : G.items[n][4]}`)}</li>`);
      if (ns.length > 100) out.push(`<li class="muted">${ns.length - 100} more</li>`);
      out.push("</ul>");
    }
    out.push(...profileOf(K));
    return out;
  }
  function profileOf(K) {
    const profile = G.manifest && G.manifest.profile;
    if (!profile || !Array.isArray(profile.kernels)) return [];
    const row = profile.kernels.find((r) => r && (r.name === K.name || r.name === K.python));
    if (!row) return [];
    return [`<h3>Profile</h3><p>${esc(num(row.us, 1))} us over ${esc(row.calls)} call(s), ${esc(num(Number(row.share) * 100, 1))}% of the time${row.gbps !== undefined ? ", " + esc(num(row.gbps, 1)) + " GB/s" : ""}</p>`];
  }
  function sideItem(n, s) {
    const it = G.items[n];
    const out = [`<h2>${esc(it[4])}</h2>`, `<p>${esc(KINDS[it[0]] || it[0])} at ${itemLink(n, where(n))}</p>`, `<p>${esc(it[5])}</p>`];
    if (it[0] === "refusal") out.push(`<p>kernels ${kernelLink(it[7])} and ${kernelLink(it[8])}</p>`);
    for (const name of it[4].split(/, | as /)) {
      const b = IX.buffers.get(name);
      if (b !== undefined && (G.files[it[1]].stage === "memplan")) out.push(...bufferInfo(b));
    }
    out.push("<h3>Source lines</h3>");
    out.push(it[6].length ? `<ul>${it[6].map((l) => `<li>${locLink(l)}</li>`).join("")}</ul>` : '<p class="muted">none</p>');
    if (s.related.length) { out.push("<h3>Related</h3>"); out.push(...itemsByFile(s.related)); }
    return out;
  }
  function bufferInfo(b) {
    const M = G.memory;
    const [name, size, start, end, how, from, type] = M.buffers[b];
    const at = (k) => (k >= 0 && k < M.lines.length && M.lines[k] >= 0 ? itemLink(M.lines[k], `line ${k + 1}: ${G.items[M.lines[k]][5]} ${G.items[M.lines[k]][4]}`) : esc(k < 0 ? "the start (an input it owns)" : "the end (returned)"));
    const out = [`<h3>Buffer ${esc(name)}</h3><p>${esc(type)}, ${esc(bytes(size))}</p>`];
    out.push(`<p>${esc(how === "pool" ? "storage of " + from + " (freed earlier)" : how === "in-place" ? "written in place over " + from : how)}, from ${at(start)} to ${at(end)}</p>`);
    return out;
  }

  // ---- Tabs.
  const TABS = [["overview", "Overview"], ["code", "Code"], ["fusion", "Fusion"], ["memory", "Memory"], ["kernels", "Kernels"]];
  const BUILD = {};

  function showTab(tab) {
    state.tab = tab;
    for (const b of document.querySelectorAll("nav.tabs button")) b.classList.toggle("on", b.dataset.tab === tab);
    for (const el of document.querySelectorAll("#view > .tab")) el.hidden = el.dataset.tab !== tab;
    let view = IX.views[tab];
    const started = performance.now();
    if (!view) {
      const host = document.querySelector(`#view > .tab[data-tab="${tab}"]`);
      view = IX.views[tab] = BUILD[tab](host);
      if (view.refresh) view.refresh(selection(), false);
    }
    if (view.shown) view.shown();
    window.tircReport.timings["tab:" + tab] = performance.now() - started;
  }

  BUILD.overview = function (host) {
    const M = G.manifest || {};
    const out = ['<div class="scroll">'];
    const loops = G.kernels.filter((k) => !k.extern).length;
    const refusals = G.refusals.length;
    const cards = [["dumps", G.files.filter((f) => f.kind === "tir").length], ["kernels", loops], ["extern calls", G.kernels.length - loops],
      ["refused pairs", refusals], ["peak memory", G.memory ? bytes(G.memory.peak) : "-"], ["fallback ops", G.fallbacks.ops.length]];
    out.push('<div class="cards">' + cards.map(([k, v]) => `<div class="card"><b>${esc(v)}</b>${esc(k)}</div>`).join("") + "</div>");
    out.push(...timingsTable(M.timings));
    out.push("<h2>Fallback ops</h2>");
    if (G.fallbacks.ops.length) {
      out.push(`<p>Run as extern calls to ATen for want of a lowering: ${G.fallbacks.ops.map(esc).join(", ")}</p><ul>`);
      for (const n of G.fallbacks.items) out.push(`<li>${itemLink(n, `${G.items[n][5]} ${G.items[n][4]}`)} ${kernelLink(G.items[n][7])} ${G.items[n][6].map(locLink).join(" ")}</li>`);
      out.push("</ul>");
    } else out.push('<p class="muted">none</p>');
    out.push(...filesTable(M.files));
    out.push(...choices());
    out.push(...profileTable(M.profile));
    if (DATA.training) out.push(...trainingTable(DATA.training.training));
    out.push(`<h2>manifest.json</h2><details><summary>${G.manifest ? "show" : "no manifest"}</summary><pre class="json">${esc(JSON.stringify(G.manifest, null, 2))}</pre></details>`);
    if (DATA.training) out.push(`<h2>Training manifest</h2><details><summary>show</summary><pre class="json">${esc(JSON.stringify(DATA.training, null, 2))}</pre></details>`);
    out.push("</div>");
    host.innerHTML = out.join("");
    return {};
  };
  function timingsTable(timings) {
    if (!Array.isArray(timings) || !timings.length) return ['<h2>Compile timings</h2><p class="muted">none in the manifest</p>'];
    const rows = timings.filter((t) => t && typeof t.name === "string");
    const total = rows.filter((t) => !t.name.includes(".")).reduce((a, t) => a + (Number(t.seconds) || 0), 0) || 1;
    const out = [`<h2>Compile timings</h2><table class="t timings"><tr><th>stage</th><th class="num">seconds</th><th class="num">share</th><th></th></tr>`];
    for (const t of rows) {
      const share = (Number(t.seconds) || 0) / total;
      const pad = t.name.includes(".") ? "&nbsp;&nbsp;&nbsp;&nbsp;" : "";
      out.push(`<tr><td>${pad}${esc(t.name)}</td><td class="num">${esc(num(t.seconds, 3))}</td><td class="num">${esc(num(share * 100, 1))}%</td><td><span class="bar" style="width:${Math.round(Math.min(1, Math.max(0, share)) * 240)}px"></span></td></tr>`);
    }
    out.push(`<tr><th>total</th><th class="num">${esc(num(total, 3))}</th><th></th><th></th></tr></table>`);
    return out;
  }
  function filesTable(files) {
    if (!Array.isArray(files)) return [];
    const out = ['<h2>Files</h2><table class="t"><tr><th>stage</th><th>file</th><th class="num">buffers</th><th class="num">kernels</th><th class="num">extern calls</th><th class="num">ops</th><th class="num">peak</th><th>fallback ops</th></tr>'];
    for (const f of files) {
      if (!f || typeof f !== "object") continue;
      const fb = Array.isArray(f.fallback_ops) ? f.fallback_ops.join(", ") : "";
      const cell = (x) => `<td class="num">${x === undefined ? "" : esc(x)}</td>`;
      out.push(`<tr><td>${esc(f.stage)}</td><td>${esc(f.file)}</td>${cell(f.buffers)}${cell(f.kernels)}${cell(f.extern_calls)}${cell(f.ops)}${f.peak_bytes === undefined ? "<td></td>" : cell(bytes(f.peak_bytes))}<td>${esc(fb)}</td></tr>`);
    }
    out.push("</table>");
    return out;
  }
  function choices() {
    const out = ["<h2>Autotuning and choices</h2>"];
    const tuned = G.kernels.map((k, n) => [k, n]).filter(([k]) => k.choices);
    if (G.layout) out.push(`<p>layout ${esc(G.layout[0])}: ${esc(G.layout[1])}</p>`);
    const chosen = G.kernels.map((k, n) => [k, n]).filter(([k]) => k.extern && k.target && !G.fallbacks.ops.includes(k.target));
    if (tuned.length) {
      out.push('<table class="t"><tr><th>kernel</th><th>settings</th></tr>');
      for (const [k, n] of tuned) out.push(`<tr><td>${kernelLink(n)}</td><td>${esc(k.choices)}</td></tr>`);
      out.push("</table>");
    }
    if (chosen.length) {
      const count = new Map();
      for (const [k] of chosen) count.set(k.target, (count.get(k.target) || 0) + 1);
      out.push('<table class="t"><tr><th>library call</th><th class="num">calls</th></tr>');
      for (const [t, c] of [...count].sort()) out.push(`<tr><td>${esc(t)}</td><td class="num">${c}</td></tr>`);
      out.push("</table>");
    }
    if (!tuned.length && !G.layout && !chosen.length) out.push('<p class="muted">none in the dumps (no launch configs, splits, layout decision or library calls)</p>');
    return out;
  }
  function profileTable(profile) {
    if (!profile || typeof profile !== "object" || !Array.isArray(profile.kernels)) return [];
    const out = [`<h2>Profile</h2><p>total ${esc(num(profile.total_us, 1))} us</p><table class="t profile"><tr><th>name</th><th>kind</th><th class="num">calls</th><th class="num">us</th><th class="num">share</th><th class="num">bytes</th><th class="num">GB/s</th></tr>`];
    for (const r of profile.kernels) {
      if (!r || typeof r !== "object") continue;
      const k = IX.kernelNamed.get(String(r.name));
      const name = k !== undefined ? kernelLink(k) : esc(r.name);
      out.push(`<tr><td>${name}</td><td>${esc(r.kind === undefined ? "" : r.kind)}</td><td class="num">${esc(r.calls === undefined ? "" : r.calls)}</td><td class="num">${esc(num(r.us, 1))}</td><td class="num">${esc(num(Number(r.share) * 100, 1))}%</td><td class="num">${r.bytes === undefined ? "" : esc(bytes(r.bytes))}</td><td class="num">${esc(num(r.gbps, 1))}</td></tr>`);
    }
    out.push("</table>");
    return out;
  }
  function trainingTable(training) {
    if (!training || typeof training !== "object") return [];
    const out = ["<h2>Training partition</h2>"];
    const peak = training.peak_bytes || {};
    out.push(`<p>saved ${esc(Array.isArray(training.saved) ? training.saved.length : 0)} value(s), ${esc(bytes(training.saved_bytes))}; peak: ${Object.entries(peak).map(([k, v]) => `${esc(k)} ${esc(bytes(v))}`).join(", ")}</p>`);
    if (Array.isArray(training.saved)) {
      out.push('<table class="t"><tr><th>saved value</th><th>shape</th><th>dtype</th><th class="num">bytes</th></tr>');
      for (const v of training.saved) if (v && typeof v === "object") out.push(`<tr><td>${esc(v.name)}</td><td>${esc(JSON.stringify(v.shape))}</td><td>${esc(v.dtype)}</td><td class="num">${esc(v.bytes)}</td></tr>`);
      out.push("</table>");
    }
    return out;
  }

  // -- Code: the user's source and every file side by side.
  BUILD.code = function (host) {
    const panes = [{ key: "src", label: "source" }].concat(G.files.map((f, k) => ({ key: String(k), label: f.name })));
    const toggles = panes.map((p) => `<label><input type="checkbox" data-pane="${esc(p.key)}" checked> ${esc(p.label)}</label>`).join("");
    const options = DATA.sources.map((s, k) => `<option value="${k}">${esc(s.name)}</option>`).join("");
    host.innerHTML = `<div class="toolbar">${toggles}${DATA.sources.length > 1 ? `<label>source <select class="srcsel">${options}</select></label>` : ""}</div><div class="panes"></div>`;
    const row = host.querySelector(".panes");
    const views = new Map();
    let src = DATA.sources.length ? 0 : -1;
    const sec = (key, title, note) => {
      const el = document.createElement("section");
      el.className = "pane";
      el.dataset.file = key;
      el.innerHTML = `<h3>${esc(title)}</h3>${note ? `<div class="note">${esc(note)}</div>` : ""}<div class="pane-body"></div>`;
      row.appendChild(el);
      return el;
    };
    const srcPane = sec("src", "source", null);
    function srcView() {
      const lines = src >= 0 ? sourceLines(src) : null;
      const name = src >= 0 ? DATA.sources[src].name : "";
      srcPane.dataset.file = "src:" + name;
      srcPane.firstChild.textContent = name ? "source: " + name : "source";
      let text = lines;
      if (!text) {
        // Not available: blank lines, so that those the dumps name can still be clicked.
        const last = G.locs.reduce((m, l) => (l[0] === name ? Math.max(m, l[1]) : m), 1);
        text = new Array(last).fill("");
        text[0] = src >= 0 ? `(${DATA.sources[src].note})` : "(no source file named by the dumps)";
      }
      const view = new VList(srcPane.lastChild, text.length, LINE, (i) => {
        const l = IX.locAt.get(name + ":" + (i + 1));
        const cls = l === undefined ? "" : IX.selLocs && IX.selLocs.has(l) ? " it sel" : " it";
        return `<div class="ln${cls}" data-row="${i}" data-line="${i + 1}"><span class="no">${i + 1}</span>${esc(text[i])}</div>`;
      }, (i) => {
        const l = IX.locAt.get(name + ":" + (i + 1));
        if (l !== undefined) select({ t: "loc", l }, true);
      });
      views.set("src", view);
    }
    srcView();
    G.files.forEach((f, k) => {
      const pane = sec(String(k), `${f.name} (${f.stage})`, f.note);
      pane.dataset.file = f.name;
      const lines = fileLines(k);
      const map = lineMap(k);
      const view = new VList(pane.lastChild, lines.length, LINE, (i) => {
        const line = i + 1;
        const m = IX.marks.get(k);
        const level = m ? m[line] : 0;
        const cls = (map[line] >= 0 ? " it" : "") + (level === 2 ? " sel" : level === 1 ? " rel" : "");
        return `<div class="ln${cls}" data-row="${i}" data-line="${line}"><span class="no">${line}</span>${esc(lines[i])}</div>`;
      }, (i) => {
        const n = map[i + 1];
        if (n >= 0) selectItem(n, true);
      });
      views.set(String(k), view);
    });
    host.querySelector(".toolbar").addEventListener("change", (ev) => {
      const t = ev.target;
      if (t.dataset.pane !== undefined) {
        row.querySelector(t.dataset.pane === "src" ? "section.pane:first-child" : `section.pane:nth-child(${Number(t.dataset.pane) + 2})`).hidden = !t.checked;
        views.get(t.dataset.pane).render();
      } else if (t.classList.contains("srcsel")) {
        src = Number(t.value);
        srcView();
        views.get("src").render();
      }
    });
    const api = {
      shown() { for (const v of views.values()) v.render(); },
      refresh(s, jump) {
        if (jump && s.locs.length) {
          const first = G.locs[s.locs[0]];
          const k = IX.sourceIndex.get(first[0]);
          if (k !== undefined && k !== src) { src = k; srcView(); const sel = host.querySelector(".srcsel"); if (sel) sel.value = String(k); }
        }
        for (const [key, view] of views) {
          if (jump && state.tab === "code") {
            const line = key === "src" ? firstSourceLine(s) : firstLine(Number(key), s);
            if (line > 0) { view.scrollTo(line - 1); continue; }
          }
          view.render();
        }
      },
    };
    function firstSourceLine(s) {
      const name = src >= 0 ? DATA.sources[src].name : null;
      const lines = s.locs.filter((l) => G.locs[l][0] === name).map((l) => G.locs[l][1]);
      return lines.length ? Math.min(...lines) : 0;
    }
    function firstLine(f, s) {
      for (const list of [s.primary, s.related]) {
        let best = 0;
        for (const n of list) if (G.items[n][1] === f && (!best || G.items[n][2] < best)) best = G.items[n][2];
        if (best) return best;
      }
      return 0;
    }
    return api;
  };

  // -- Fusion: kernels in launch order, each refused pair an arc between
  // the kernels holding its nodes; and the table of every refused pair.
  function rule(reason) {
    const m = /^\[([^\]]*)\]/.exec(reason);
    return m ? m[1] : "";
  }
  BUILD.fusion = function (host) {
    const refusals = G.refusals;
    const rules = new Map();
    for (const n of refusals) { const r = rule(G.items[n][5]); rules.set(r, (rules.get(r) || 0) + 1); }
    const ruleOptions = [...rules].sort().map(([r, c]) => `<option value="${esc(r)}">[${esc(r)}] (${c})</option>`).join("");
    host.innerHTML = `<div class="toolbar"><span>${G.kernels.length} kernel(s) in launch order; each arc a refused pair, between the kernels of its two nodes; ${refusals.length} refused pair(s)</span><label>rule <select class="rulesel"><option value="">all</option>${ruleOptions}</select></label><label><input type="checkbox" class="labels" checked> rule labels (when at most ${LABELS} arcs are in view)</label></div>` +
      '<div class="fusion"><div class="fusion-graph"></div><div class="fusion-table"><div class="row head"><span class="pair">first node, kernel</span><span class="pair">second node, kernel</span><span class="reason">reason</span></div><div class="pane-body"></div></div></div>';
    const graphHost = host.querySelector(".fusion-graph");
    graphHost.innerHTML = '<div class="vl"><div class="vl-spacer"></div><svg class="fg" xmlns="http://www.w3.org/2000/svg"></svg></div>';
    const scroller = graphHost.firstChild;
    const svg = scroller.lastChild;
    svg.style.position = "absolute";
    svg.style.left = "0";
    const X0 = 250;
    // Arcs between the same two kernels stack outwards.
    const seen = new Map();
    const edges = refusals.map((n) => {
      const it = G.items[n];
      const a = it[7], b = it[8];
      const lo = Math.min(a, b), hi = Math.max(a, b);
      const key = lo + ":" + hi;
      const rank = seen.get(key) || 0;
      seen.set(key, rank + 1);
      const width = lo < 0 ? 0 : Math.min(40 + (hi - lo) * 14, 520) + rank * 10;
      return { n, a, b, lo, hi, width, rule: rule(it[5]) };
    });
    const maxWidth = edges.reduce((m, e) => Math.max(m, e.width), 0);
    const width = X0 + maxWidth + 140;
    scroller.firstChild.style.height = G.kernels.length * GROW + 20 + "px";
    scroller.firstChild.style.width = width + "px";
    let filter = "";
    let frame = 0;
    const y = (k) => k * GROW + GROW / 2;
    function drawGraph() {
      const view = scroller.clientHeight || 800;
      const r0 = Math.max(0, Math.floor(scroller.scrollTop / GROW) - OVERSCAN);
      const r1 = Math.min(G.kernels.length, r0 + Math.ceil(view / GROW) + 2 * OVERSCAN);
      const top = r0 * GROW;
      const height = (r1 - r0) * GROW + 20;
      svg.style.top = top + "px";
      svg.setAttribute("width", width);
      svg.setAttribute("height", height);
      svg.setAttribute("viewBox", `0 ${top} ${width} ${height}`);
      const sel = selection();
      const selKernels = new Set(sel.kernels);
      const selItems = new Set(sel.primary);
      const out = [];
      const inView = edges.filter((e) => e.lo >= 0 && e.hi >= r0 && e.lo < r1 && (!filter || e.rule === filter));
      const labels = host.querySelector(".labels").checked && inView.length <= LABELS;
      for (let k = r0; k < r1; k++) {
        const K = G.kernels[k];
        const cls = "kbox" + (K.extern ? " extern" : "") + (selKernels.has(k) ? " sel" : "");
        const label = `@${K.name} · ${K.nodes.length} node(s) · ${K.extern ? K.target : K.ops.join(" ")}`;
        out.push(`<g class="${cls}" data-kernel="${k}" data-kernel-name="${esc(K.name)}"><rect x="8" y="${k * GROW + 3}" width="${X0 - 16}" height="${GROW - 6}" rx="3"></rect><text x="14" y="${k * GROW + GROW / 2 + 4}">${esc(label.length > 34 ? label.slice(0, 33) + "…" : label)}</text><title>${esc(label)}</title></g>`);
      }
      for (const e of inView) {
        const it = G.items[e.n];
        const ya = y(e.a) - 3, yb = y(e.b) + 3;
        const d = e.lo === e.hi
          ? `M ${X0} ${ya} C ${X0 + 34} ${ya - 12}, ${X0 + 34} ${yb + 12}, ${X0} ${yb}`
          : `M ${X0} ${y(e.a)} C ${X0 + e.width} ${y(e.a)}, ${X0 + e.width} ${y(e.b)}, ${X0} ${y(e.b)}`;
        const lx = X0 + (e.lo === e.hi ? 36 : e.width * 0.75) + 2;
        const ly = (y(e.a) + y(e.b)) / 2 + 4;
        const [na, nb] = it[4].split(", ");
        out.push(`<g class="edge${selItems.has(e.n) ? " sel" : ""}" data-item="${e.n}" data-a="${esc(na)}" data-b="${esc(nb)}" data-ka="${esc(G.kernels[e.a].name)}" data-kb="${esc(G.kernels[e.b].name)}" data-rule="${esc(e.rule)}"><path d="${d}"></path>${labels || selItems.has(e.n) ? `<text x="${lx}" y="${ly}">[${esc(e.rule)}]</text>` : ""}<title>${esc(it[4] + ": " + it[5])}</title></g>`);
      }
      svg.innerHTML = out.join("");
    }
    scroller.addEventListener("scroll", () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; drawGraph(); }); });
    svg.addEventListener("click", (ev) => {
      const edge = ev.target.closest(".edge");
      if (edge) { select({ t: "item", n: Number(edge.dataset.item) }, false); return; }
      const box = ev.target.closest(".kbox");
      if (box) select({ t: "kernel", k: Number(box.dataset.kernel) }, false);
    });
    let shownRows = refusals;
    const table = new VList(host.querySelector(".fusion-table .pane-body"), refusals.length, ROW, (i) => {
      const n = shownRows[i];
      const it = G.items[n];
      const [na, nb] = it[4].split(", ");
      const selected = state.sel && state.sel.t === "item" && state.sel.n === n;
      return `<div class="row refusal${selected ? " sel" : ""}" data-row="${i}" data-item="${n}" data-a="${esc(na)}" data-b="${esc(nb)}"><span class="pair">${esc(na)} ${kernelLink(it[7])}</span><span class="pair">${esc(nb)} ${kernelLink(it[8])}</span><span class="reason" title="${esc(it[5])}">${esc(it[5])}</span></div>`;
    }, (i) => select({ t: "item", n: shownRows[i] }, false));
    host.querySelector(".labels").addEventListener("change", () => drawGraph());
    host.querySelector(".rulesel").addEventListener("change", (ev) => {
      filter = ev.target.value;
      shownRows = filter ? refusals.filter((n) => rule(G.items[n][5]) === filter) : refusals;
      table.setCount(shownRows.length);
      table.render();
      drawGraph();
    });
    return {
      shown() { drawGraph(); table.render(); },
      refresh(s) {
        if (state.tab !== "fusion") return;
        drawGraph();
        table.render();
      },
    };
  };

  // -- Memory: bytes held along the wrapper's lines, the peak, and each
  // buffer's lifetime; a window of the lines, to zoom into a long plan.
  // Positions are in "steps": step k is after the k-th wrapper line (held[k]).
  BUILD.memory = function (host) {
    const M = G.memory;
    if (!M) {
      host.innerHTML = '<div class="scroll"><p class="muted">No memplan dump: the memory plan is in 05-memplan.tir.</p></div>';
      return {};
    }
    const steps = Math.max(1, M.held.length - 1);
    const counts = {};
    for (const b of M.buffers) counts[b[4]] = (counts[b[4]] || 0) + 1;
    const peakLine = M.peakAt - 1;
    const lineText = (k) => `line ${k + 1}: ${G.items[M.lines[k]][5]} ${G.items[M.lines[k]][4]}`;
    const peakItem = peakLine >= 0 && M.lines[peakLine] >= 0 ? itemLink(M.lines[peakLine], lineText(peakLine)) : "the start";
    const manifestPeak = Array.isArray((G.manifest || {}).files) ? G.manifest.files.filter((f) => f && f.peak_bytes !== undefined).map((f) => f.peak_bytes) : [];
    const legend = [["alloc", "#6d8cff"], ["in place", "#3a9a5b"], ["pooled reuse", "#d3a21a"], ["extern result", "#8e5bd6"], ["owned input", "#889"]]
      .map(([k, c]) => `<span style="background:${c}"></span>${esc(k)}`).join("");
    host.innerHTML = `<div class="memory"><div class="summary">peak <b class="peak-bytes">${esc(bytes(M.peak))}</b> (${esc(M.peak)} bytes) after ${peakItem}` +
      `${manifestPeak.length ? `; manifest peak_bytes ${esc(manifestPeak.join(", "))}` : ""}. ${esc(M.buffers.length)} buffer(s): ` +
      `${Object.entries(counts).sort().map(([k, v]) => `${esc(v)} ${esc(k)}`).join(", ")}. <span class="legend">${legend}</span></div>` +
      '<div class="toolbar">zoom <button data-zoom="in">+</button><button data-zoom="out">−</button><button data-zoom="all">all</button><button data-zoom="peak">peak</button> <span class="window"></span></div>' +
      '<div class="row chartrow"><span class="bname">bytes held</span><span class="btrack chart"></span><span class="binfo"></span></div><div class="buffers"></div></div>';
    const chart = host.querySelector(".chart");
    const windowText = host.querySelector(".window");
    let lo = 0, hi = steps, cursor = -1;
    const born = (b) => (b[2] < 0 ? 0 : b[2] + 1);
    const died = (b) => Math.min(steps, b[3] + 1);
    const pct = (k) => ((k - lo) / (hi - lo)) * 100;
    let order = [];
    function drawChart() {
      const top = Math.max(1, M.peak);
      const span = hi - lo;
      const buckets = Math.min(span + 1, 1500);
      const points = ["0,100"];
      for (let b = 0; b < buckets; b++) {
        const k0 = lo + Math.floor((b * (span + 1)) / buckets), k1 = lo + Math.floor(((b + 1) * (span + 1)) / buckets);
        let h = 0;
        for (let k = k0; k < Math.max(k1, k0 + 1); k++) h = Math.max(h, M.held[k]);
        points.push(`${(buckets > 1 ? b / (buckets - 1) : 0) * 1000},${100 - (h / top) * 95}`);
      }
      points.push("1000,100");
      const px = (k) => pct(k) * 10;
      chart.innerHTML = `<svg viewBox="0 0 1000 100" preserveAspectRatio="none"><polygon points="${points.join(" ")}"></polygon>` +
        `<line class="peak" x1="${px(M.peakAt)}" x2="${px(M.peakAt)}" y1="0" y2="100"></line>` +
        `<line class="cursor" x1="${px(cursor)}" x2="${px(cursor)}" y1="0" y2="100"></line><title>bytes held after each wrapper line; the red line marks the peak</title></svg>`;
      windowText.textContent = `steps ${lo}–${hi} of ${steps}`;
    }
    const rows = new VList(host.querySelector(".buffers"), 0, ROW, (i) => {
      const b = M.buffers[order[i]];
      const [name, size, , , how, from] = b;
      const left = pct(born(b));
      const w = Math.max(0.15, pct(died(b)) - left);
      const info = `${bytes(size)}${from ? (how === "in-place" ? ", in place over " : ", storage of ") + from : ""}`;
      return `<div class="row buffer" data-row="${i}" data-buffer="${esc(name)}"><span class="bname">${esc(name)}</span><span class="btrack"><span class="bl ${esc(how)}" style="left:${left}%;width:${w}%"></span><span class="pk" style="left:${pct(M.peakAt)}%"></span></span><span class="binfo">${esc(info)}</span></div>`;
    }, (i) => {
      const b = M.buffers[order[i]];
      const line = b[2] >= 0 ? b[2] : b[3];
      if (M.lines[line] >= 0) select({ t: "item", n: M.lines[line] }, false);
    });
    function draw() {
      order = [];
      M.buffers.forEach((b, k) => { if (born(b) <= hi && died(b) >= lo) order.push(k); });
      rows.setCount(order.length);
      drawChart();
      rows.render();
    }
    function zoom(center, factor) {
      const span = Math.max(8, Math.min(steps, Math.round((hi - lo) * factor)));
      lo = Math.max(0, Math.min(steps - span, Math.round(center - span / 2)));
      hi = Math.min(steps, lo + span);
      draw();
    }
    host.querySelector(".toolbar").addEventListener("click", (ev) => {
      const b = ev.target.closest("button");
      if (!b) return;
      const center = cursor >= 0 ? cursor : (lo + hi) / 2;
      if (b.dataset.zoom === "in") zoom(center, 0.25);
      else if (b.dataset.zoom === "out") zoom(center, 4);
      else if (b.dataset.zoom === "all") { lo = 0; hi = steps; draw(); }
      else if (b.dataset.zoom === "peak") zoom(M.peakAt, Math.min(1, 64 / steps));
    });
    chart.addEventListener("click", (ev) => {
      const box = chart.getBoundingClientRect();
      const k = Math.round(lo + ((ev.clientX - box.left) / box.width) * (hi - lo));
      const line = Math.min(M.lines.length - 1, Math.max(0, k - 1));
      if (M.lines[line] >= 0) selectItem(M.lines[line], false);
    });
    return {
      shown() { draw(); },
      refresh() {
        const sel = state.sel;
        cursor = -1;
        if (sel && sel.t === "item") cursor = M.lines.indexOf(sel.n) + 1 || -1;
        else if (sel && sel.t === "kernel") {
          const k = M.lines.findIndex((n) => n >= 0 && G.items[n][7] === sel.k);
          cursor = k >= 0 ? k + 1 : -1;
        }
        if (state.tab === "memory") drawChart();
      },
    };
  };

  // -- Kernels: one row each.
  BUILD.kernels = function (host) {
    // The profile's time per kernel, when the manifest has one (--profile).
    const profile = G.manifest && G.manifest.profile && Array.isArray(G.manifest.profile.kernels) ? G.manifest.profile.kernels : [];
    const us = new Map();
    for (const r of profile) if (r && IX.kernelNamed.has(String(r.name))) us.set(IX.kernelNamed.get(String(r.name)), r.us);
    host.innerHTML = `<div class="toolbar"><span>kernels in launch order: name, nodes, ops, source lines${us.size ? ", profiled time" : ""}, attributes</span></div><div class="pane-body"></div>`;
    const list = new VList(host.querySelector(".pane-body"), G.kernels.length, ROW, (k) => {
      const K = G.kernels[k];
      const selected = selection().kernels.includes(k);
      const time = us.has(k) ? `<span>${esc(num(us.get(k), 1))} us</span>` : "";
      return `<div class="row kernel${selected ? " sel" : ""}" data-row="${k}" data-kernel-name="${esc(K.name)}" data-locs="${K.locs.length}"><span>${k}</span><span>${kernelLink(k)}</span>${time}<span>${K.nodes.length} node(s)</span><span>${esc(K.extern ? K.target : K.ops.join(", "))}</span><span>${K.locs.slice(0, 6).map(locLink).join(" ")}${K.locs.length > 6 ? " …" : ""}</span><span class="muted">${esc(K.attrs)}</span></div>`;
    }, (k) => select({ t: "kernel", k }, false));
    return { shown() { list.render(); }, refresh() { if (state.tab === "kernels") list.render(); } };
  };

  // ---- Search: buffers, kernels, source lines.
  function search(query) {
    const q = query.trim();
    const out = [];
    if (!q) return out;
    const add = (html) => { if (out.length < 100) out.push(html); };
    const loc = /^(.*?):(\d+)$/.exec(q);
    G.locs.forEach((l, n) => {
      const ok = loc ? l[0].includes(loc[1]) && l[1] === Number(loc[2]) : /^\d+$/.test(q) ? l[1] === Number(q) : l[0].includes(q) && q.includes(".");
      if (ok) add(locLink(n));
    });
    const bare = q.replace(/^[@%]/, "");
    const kernels = G.kernels.map((k, n) => n).filter((n) => !q.startsWith("%") && (G.kernels[n].name === bare || G.kernels[n].python === bare));
    const partial = q.startsWith("@") ? G.kernels.map((k, n) => n).filter((n) => G.kernels[n].name.includes(bare) && !kernels.includes(n)) : [];
    for (const n of kernels.concat(partial)) add(kernelLink(n));
    if (!q.startsWith("@")) {
      const name = "%" + bare;
      const exact = IX.byName.get(name) || [];
      for (const n of exact) add(itemLink(n));
      if (out.length < 100 && bare.length > 1) {
        for (const [key, ns] of IX.byName) {
          if (key !== name && key.startsWith(name)) for (const n of ns) add(itemLink(n));
          if (out.length >= 100) break;
        }
      }
    }
    return out;
  }

  // ---- The page.
  function renderGraph(g) {
    state.g = g;
    G = DATA.graphs[g];
    IX = indexGraph(g);
    state.sel = null;
    IX.selLocs = new Set();
    for (const b of document.querySelectorAll("nav.graphs button")) b.classList.toggle("on", Number(b.dataset.graph) === g);
    const view = document.getElementById("view");
    view.innerHTML = TABS.map(([key]) => `<div class="tab" data-tab="${key}" hidden></div>`).join("");
    renderSide(selection());
    showTab(state.tab);
  }

  function start() {
    window.tircReport = { timings: {}, readyAt: null };
    const app = document.getElementById("app");
    const graphs = DATA.graphs.length > 1 ? `<nav class="graphs">${DATA.graphs.map((g, k) => `<button data-graph="${k}">${esc(g.name || "graph " + k)}</button>`).join("")}</nav>` : "";
    const tabs = `<nav class="tabs">${TABS.map(([k, label]) => `<button data-tab="${k}">${esc(label)}</button>`).join("")}</nav>`;
    app.innerHTML = `<header><h1>tirc report: ${esc(DATA.title || "")}</h1>${graphs}${tabs}<div class="search"><input id="q" type="search" placeholder="search: %buf3, @k2, model.py:12" autocomplete="off"><div id="results"></div></div></header>` +
      '<div class="main"><main id="view"></main><aside id="side"></aside></div>';
    app.querySelector("header").addEventListener("click", (ev) => {
      const b = ev.target.closest("button");
      if (!b) return;
      if (b.dataset.tab) showTab(b.dataset.tab);
      else if (b.dataset.graph !== undefined) renderGraph(Number(b.dataset.graph));
    });
    const input = document.getElementById("q");
    const results = document.getElementById("results");
    let timer = 0;
    const run = () => {
      const started = performance.now();
      const found = search(input.value);
      results.innerHTML = found.length ? found.join("") : `<div class="none">${input.value.trim() ? "nothing found" : ""}</div>`;
      results.classList.toggle("open", Boolean(input.value.trim()));
      window.tircReport.timings.search = performance.now() - started;
    };
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 120); });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { clearTimeout(timer); run(); const first = results.querySelector("a.link"); if (first) first.click(); }
      if (ev.key === "Escape") results.classList.remove("open");
    });
    // Links anywhere: a source line, a kernel, an item (or a buffer) go to the code.
    document.addEventListener("click", (ev) => {
      const a = ev.target.closest("a.link");
      if (!a) return;
      ev.preventDefault();
      results.classList.remove("open");
      if (a.dataset.loc !== undefined) { showTab("code"); select({ t: "loc", l: Number(a.dataset.loc) }, true); }
      else if (a.dataset.kernel !== undefined) { showTab("code"); select({ t: "kernel", k: Number(a.dataset.kernel) }, true); }
      else if (a.dataset.item !== undefined) { showTab("code"); selectItem(Number(a.dataset.item), true); }
    });
    renderGraph(0);
    document.documentElement.dataset.ready = "1";
    window.tircReport.readyAt = performance.now();
  }

  start();
})();
