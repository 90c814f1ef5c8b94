// the siftpd dashboard: polls /api/v1/stats (same origin; from loopback
// without a token, otherwise the browser must send one) and fills the page
"use strict";

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

function list(id, rows) {
  const dl = document.getElementById(id);
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    dd.dataset.key = k;
    dl.append(dt, dd);
  }
}

function render(s) {
  document.getElementById("version").textContent = "version " + s.version
    + ", up " + s.uptime + " s, " + s.workers + " workers";
  list("now", [
    ["FTP sessions", s.sessions.ftp],
    ["SFTP sessions", s.sessions.sftp],
    ["connections", s.connections.active],
  ]);
  list("logins", [
    ["ok", s.logins.ok],
    ["failed", s.logins.failed],
    ["from the cache", s.auth.cache_hits],
    ["bans", s.auth.bans],
  ]);
  list("traffic", [
    ["file bytes received", bytes(s.bytes.received)],
    ["file bytes sent", bytes(s.bytes.sent)],
    ["connections", s.connections.accepted],
  ]);
  list("pool", [
    ["chunks in use", s.buffer_pool.in_use + " / " + s.buffer_pool.total],
    ["waits", s.buffer_pool.waits],
  ]);
  const body = document.querySelector("#transfers tbody");
  body.replaceChildren();
  for (const dir of Object.keys(s.transfers)) {
    for (const [path, t] of Object.entries(s.transfers[dir])) {
      if (!t.count) continue;
      const tr = document.createElement("tr");
      for (const [v, cls] of [[dir, ""], [path, ""], [t.count, "n"],
                              [bytes(t.bytes), "n"]]) {
        const td = document.createElement("td");
        td.textContent = v;
        if (cls) td.className = cls;
        tr.append(td);
      }
      body.append(tr);
    }
  }
}

async function poll() {
  const status = document.getElementById("status");
  try {
    const r = await fetch("/api/v1/stats", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    status.textContent = "live";
    status.className = "status ok";
  } catch (e) {
    status.textContent = "no data: " + e.message;
    status.className = "status error";
  }
}

poll();
setInterval(poll, 2000);
