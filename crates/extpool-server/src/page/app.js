// The operator page of extpool serve: renders what the gateway pushes on
// /v1/page/events. Every value the gateway sends (names, descriptions,
// errors, stderr lines) is text from servers nobody vetted: it is only
// ever put in the page as a text node or an attribute, never as markup.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const state = { tools: [], playground: false, sessions: { store: false } };
  // The JSON each section was last drawn from: a section is drawn again
  // only when its data changed (a form or a pressed button in it stays).
  const drawn = {};
  function changed(key, value) {
    const text = JSON.stringify(value);
    if (drawn[key] === text) return false;
    drawn[key] = text;
    return true;
  }

  // Control characters (ESC and the like) shown as their visible symbols.
  function visible(value) {
    if (value === null || value === undefined) return "";
    return String(value).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) =>
      c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0)));
  }

  // An element with text children; `props` sets only properties that take text.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("data-")) node.setAttribute(key, visible(value));
      else if (key === "title") node.title = visible(value);
      else if (key === "onclick") node.addEventListener("click", value);
      else node[key] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(visible(child)));
    }
    return node;
  }

  const badge = (word) => el("span", { class: "badge", "data-state": word }, word);

  function time(ms) {
    if (!ms) return "";
    const d = new Date(Number(ms));
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function facts(pairs) {
    const dl = el("dl", { class: "facts" });
    for (const [name, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      dl.append(el("dt", {}, name), el("dd", {}, value instanceof Node ? value : String(value)));
    }
    return dl;
  }

  function table(heads, rows) {
    const t = el("table", {});
    t.append(el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))));
    const body = el("tbody", {});
    for (const cells of rows) body.append(el("tr", {}, ...cells.map((c) => el("td", {}, c))));
    t.append(body);
    return t;
  }

  // A small line chart of the last minute: each series a line (a gap where
  // a second has no value), all on one scale from zero to their largest.
  function chart(series, label) {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("viewBox", "0 0 59 20");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
    const numbers = series.flatMap((s) => s.values.filter((v) => v !== null && v !== undefined).map(Number));
    const max = Math.max(1e-9, ...numbers);
    const base = document.createElementNS(ns, "line");
    base.setAttribute("class", "base");
    for (const [k, v] of [["x1", 0], ["y1", 20], ["x2", 59], ["y2", 20]]) base.setAttribute(k, v);
    svg.append(base);
    for (const { values, cls } of series) {
      let run = [];
      const flush = () => {
        if (run.length) {
          const line = document.createElementNS(ns, "polyline");
          line.setAttribute("class", cls);
          line.setAttribute("points", (run.length === 1 ? [run[0], run[0]] : run).join(" "));
          svg.append(line);
        }
        run = [];
      };
      values.forEach((v, i) => {
        if (v === null || v === undefined) { flush(); return; }
        run.push(`${i},${(20 - (Number(v) / max) * 19).toFixed(2)}`);
      });
      flush();
    }
    return svg;
  }

  function ms(v) { return v === null || v === undefined ? "–" : `${v} ms`; }

  function renderServers(servers) {
    const cards = servers.map((s) => {
      const m = s.minute || { calls: new Array(60).fill(0), rate: 0 };
      const where = s.pid ? `pid ${s.pid}` : s.transport;
      const card = el("article", { class: "card", "data-server": s.name },
        el("h3", {}, el("span", { class: "mono" }, s.name), badge(s.state)),
        s.detail ? el("pre", { class: s.state === "starting" ? "" : "detail" }, s.detail) : null,
        facts([
          ["reached", s.transport],
          ["sandbox", s.sandbox ? s.sandbox.summary : "unconfined"],
          ["process", s.pid ? `pid ${s.pid}` : null],
          ["era", s.era ? `${s.era} (${s.protocol_version})` : null],
          ["tools", el("span", { class: "tool-count" }, s.tools === null || s.tools === undefined ? "–" : String(s.tools))],
          ["resources", s.resources],
          ["prompts", s.prompts],
          ["calls/s", Number(m.rate || 0).toFixed(2)],
          ["p50 / p99", `${ms(m.p50_ms)} / ${ms(m.p99_ms)}`],
          ["configured", s.origin],
        ]),
        el("div", { class: "charts" },
          el("figure", {}, chart([{ values: m.calls || [], cls: "rate" }], `calls per second of ${where}, last minute`),
            el("figcaption", {}, "calls/s")),
          el("figure", {}, chart([{ values: m.p99_each || [], cls: "p99" }, { values: m.p50_each || [], cls: "p50" }],
            `p50 and p99 latency of ${where}, last minute`),
            el("figcaption", {}, "p50 / p99"))));
      return card;
    });
    $("servers").replaceChildren(...(cards.length ? cards : [el("p", { class: "muted" }, "No servers configured.")]));
  }

  function renderCatalog(c) {
    $("catalog").replaceChildren(...facts([
      ["revision", String(c.revision)],
      ["published", time(c.published_ms)],
      ["reconciliation", c.state],
      ["cycles", `${c.reconciliations} (${c.failures} failed)`],
      ["last cycle", c.last_reconcile],
    ]).childNodes);
    const stale = (c.stale || []).map((s) => el("p", { class: "detail" }, `stale: ${s.source}: ${s.reason || "no reason given"}`));
    $("stale").replaceChildren(...stale);
  }

  async function sessionAction(id, how) {
    const path = how === "delete" ? `/v1/sessions/${encodeURIComponent(id)}` : `/v1/sessions/${encodeURIComponent(id)}/mcp-refresh`;
    const note = $("session-note");
    try {
      const r = await fetch(path, { method: how === "delete" ? "DELETE" : "POST" });
      const body = await r.json().catch(() => ({}));
      note.textContent = visible(r.ok ? `${how === "delete" ? "deleted" : "refreshed"} ${id}` : `${id}: ${body.error || r.status}`);
    } catch (e) {
      note.textContent = visible(`${id}: ${e}`);
    }
  }

  // Sessions whose delete button was pressed once (id -> its timer): kept
  // across re-renders, so a snapshot arriving between the two presses
  // does not disarm it.
  const armed = new Map();

  function deleteButton(id) {
    const button = el("button", { class: "danger", type: "button", "data-delete": id },
      armed.has(id) ? "Confirm delete" : "Delete");
    button.addEventListener("click", () => {
      if (!armed.has(id)) {
        armed.set(id, setTimeout(() => { armed.delete(id); renderSessions(state.sessions); }, 5000));
        button.textContent = "Confirm delete";
        return;
      }
      clearTimeout(armed.get(id));
      armed.delete(id);
      button.disabled = true;
      sessionAction(id, "delete");
    });
    return button;
  }

  function renderSessions(s) {
    state.sessions = s;
    if (!s.store) {
      $("sessions").replaceChildren(el("p", { class: "muted" }, "This gateway keeps no sessions (no state store)."));
      return;
    }
    if (s.error) $("session-note").textContent = visible(s.error);
    const rows = s.rows.map((r) => [
      el("span", { class: "mono", "data-session": r.id }, r.id),
      r.owner || "–",
      r.revision_by ? `${r.revision} (${r.revision_by})` : String(r.revision),
      String(r.granted_count),
      String(r.in_flight),
      time(r.last_seen_ms),
      r.open_here ? "open here" : r.status,
      el("span", {}, el("button", { type: "button", "data-refresh": r.id, onclick: () => sessionAction(r.id, "refresh") }, "Refresh"), " ", deleteButton(r.id)),
    ]);
    $("sessions").replaceChildren(rows.length
      ? table(["id", "owner", "revision", "grants", "in flight", "last activity", "state", ""], rows)
      : el("p", { class: "muted" }, "No sessions."));
  }

  function renderSkills(skills) {
    const rows = skills.map((k) => [
      el("span", { class: "mono" }, k.name || "?"),
      k.root || "",
      badge(String(k.status)),
      el("span", { class: "notes" }, ...(k.diagnostics || []).map((d) =>
        el("div", {}, `${d.severity}${d.line ? ` (line ${d.line})` : ""}: ${d.message}`))),
    ]);
    $("skills").replaceChildren(rows.length ? table(["name", "root", "SKILL.md", "notes"], rows)
      : el("p", { class: "muted" }, "No skills."));
  }

  function renderPlugins(plugins) {
    const rows = plugins.map((p) => [
      el("span", { class: "mono" }, p.name || "?"),
      p.host || "",
      badge(!p.loaded ? "not loaded" : p.enabled ? "enabled" : "disabled"),
      `${p.skills} skills, ${p.commands} commands, ${(p.servers || []).length} servers, ${p.agents} agents, ${p.hooks} hooks (not run)`,
      el("span", { class: "notes" }, ...(p.diagnostics || []).map((d) => el("div", {}, d))),
    ]);
    $("plugins").replaceChildren(rows.length ? table(["plugin", "host", "state", "provides", "notes"], rows)
      : el("p", { class: "muted" }, "No plugins."));
  }

  function renderCalls(calls) {
    const rows = calls.map((c) => [time(c.time_ms), el("span", { class: "mono" }, c.session), el("span", { class: "mono" }, c.tool),
      badge(c.decision), badge(c.outcome), `${c.duration_ms} ms`]);
    $("calls").replaceChildren(rows.length ? table(["time", "session", "tool", "decision", "outcome", "duration"], rows)
      : el("p", { class: "muted" }, "No calls yet."));
  }

  // The playground: a 2026-07-28 tools/call to /mcp, the path any client's call takes.
  async function call(tool, args, out) {
    let params;
    try { params = { name: tool.name, arguments: JSON.parse(args || "{}") }; } catch (e) {
      out.textContent = visible(`the arguments are not JSON: ${e.message}`); return;
    }
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name: "extpool-operator-page", version: "1" },
    };
    out.textContent = "calling…";
    try {
      const r = await fetch("/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": tool.name },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params }),
      });
      const text = await r.text();
      let answer = null;
      try { answer = JSON.parse(text); } catch (_) {
        for (const line of text.split("\n")) {
          if (!line.startsWith("data:")) continue;
          try { const m = JSON.parse(line.slice(5)); if (m.id !== undefined) answer = m; } catch (_) { /* not JSON */ }
        }
      }
      out.textContent = visible(answer ? JSON.stringify(answer.result || answer.error, null, 2) : `HTTP ${r.status}: ${text}`);
    } catch (e) {
      out.textContent = visible(String(e));
    }
  }

  function toolEntry(t) {
    const details = el("details", { class: "tool", "data-tool": t.name },
      el("summary", {}, el("span", { class: "mono" }, t.name), t.title ? ` — ${t.title}` : ""),
      el("div", { class: "desc" }, t.description || ""),
      el("pre", {}, JSON.stringify(t.input_schema, null, 2)));
    if (state.playground) {
      const args = el("textarea", { "aria-label": `arguments of ${t.name}` });
      args.value = "{}";
      const out = el("pre", { class: "result" });
      details.append(args, el("button", { type: "button", onclick: () => call(t, args.value, out) }, "Call"), out);
    }
    return details;
  }

  function renderTools() {
    const q = $("tool-search").value.trim().toLowerCase();
    const shown = state.tools.filter((t) => !q || t.name.toLowerCase().includes(q) || (t.description || "").toLowerCase().includes(q));
    $("tool-count").textContent = `(${shown.length} of ${state.tools.length})`;
    $("tools").replaceChildren(...shown.map(toolEntry));
    $("playground-note").textContent = state.playground ? "Playground on: Call runs the real tool."
      : "The playground is off (extpool serve --playground turns it on).";
  }

  function snapshot(data) {
    $("replica").textContent = visible(`replica ${data.replica}`);
    if (state.playground !== Boolean(data.playground)) { state.playground = Boolean(data.playground); renderTools(); }
    if (changed("servers", data.servers)) renderServers(data.servers || []);
    if (changed("catalog", data.catalog)) renderCatalog(data.catalog || {});
    if (changed("sessions", data.sessions)) renderSessions(data.sessions || { store: false });
    if (changed("skills", data.skills)) renderSkills(data.skills || []);
    if (changed("plugins", data.plugins)) renderPlugins(data.plugins || []);
    if (changed("calls", data.calls)) renderCalls(data.calls || []);
    document.body.dataset.updated = String(Date.now());
  }

  function link(word) { const b = $("link"); b.textContent = word; b.dataset.state = word; }

  function start() {
    $("tool-search").addEventListener("input", renderTools);
    const events = new EventSource("/v1/page/events");
    events.addEventListener("open", () => link("live"));
    events.addEventListener("error", () => link(events.readyState === EventSource.CLOSED ? "closed" : "reconnecting"));
    events.addEventListener("snapshot", (e) => { link("live"); snapshot(JSON.parse(e.data)); });
    events.addEventListener("tools", (e) => { state.tools = JSON.parse(e.data).tools || []; renderTools(); });
  }

  document.addEventListener("DOMContentLoaded", start);
}());
