// overview.js -- the overview tab from /api/v1/stats: throughput per
// protocol (the transfer byte counters of two polls apart, divided by the
// time between them; the counters move when a transfer ends), sessions,
// logins and bans, the buffer pool and transfers by data path
"use strict";

import { drawChart } from "./chart.js";
import { bytes, el, list, row } from "./ui.js";

const WINDOW = 300;

// which protocol a data path serves (docs/logging.md); others: "other"
const PROTOCOL = {
  sendfile: "ftp", splice: "ftp", pooled: "ftp", io_uring: "ftp",
  tls: "ftps", tls_sealed: "ftps", ktls: "ftps",
  sftp: "sftp",
};

const SERIES = [
  { key: "ftp", label: "FTP", colour: "#2f6fde" },
  { key: "ftps", label: "FTPS", colour: "#12a37a" },
  { key: "sftp", label: "SFTP", colour: "#d9822b" },
  { key: "other", label: "other", colour: "#8a63d2" },
];

const samples = [];
let last = null;

// the bytes moved since the page loaded, per protocol: the canvas carries
// them as data-bytes-PROTOCOL, with data-samples, for whoever checks it
const moved = { ftp: 0, ftps: 0, sftp: 0, other: 0 };

function totals(s) {
  const t = { ftp: 0, ftps: 0, sftp: 0, other: 0 };
  for (const dir of Object.values(s.transfers || {})) {
    for (const [path, c] of Object.entries(dir)) {
      t[PROTOCOL[path] || "other"] += c.bytes;
    }
  }
  return t;
}

function sample(s, now) {
  const cur = { t: now, totals: totals(s), uptime: s.uptime };

  // a restarted server starts its counters again: a new baseline
  if (last && cur.uptime >= last.uptime && now > last.t) {
    const v = {};
    for (const k of Object.keys(moved)) {
      const d = Math.max(0, cur.totals[k] - last.totals[k]);
      moved[k] += d;
      v[k] = d / ((now - last.t) / 1000);
    }
    samples.push({ t: now, v });
  }

  last = cur;

  while (samples.length && samples[0].t < now - WINDOW * 1000) {
    samples.shift();
  }
}

function legend() {
  const ul = document.getElementById("throughput-legend");
  const cur = samples.length ? samples[samples.length - 1].v : {};
  ul.replaceChildren();

  for (const { key, label, colour } of SERIES) {
    if (key === "other" && !moved.other) continue;
    const li = el("li");
    const swatch = el("span", null, "swatch");
    swatch.style.background = colour;
    li.id = "rate-" + key;
    li.append(swatch, label + ": " + bytes(Math.round(cur[key] || 0))
              + "/s now, " + bytes(moved[key]) + " since the page opened");
    ul.append(li);
  }
}

function transfers(s) {
  const body = document.querySelector("#transfers tbody");
  body.replaceChildren();

  for (const [dir, paths] of Object.entries(s.transfers || {})) {
    for (const [path, t] of Object.entries(paths)) {
      if (!t.count) continue;
      const tr = row([dir, path, t.count, bytes(t.bytes)]);
      tr.cells[2].className = tr.cells[3].className = "n";
      body.append(tr);
    }
  }

  if (!body.rows.length) {
    const tr = row(["no transfer yet"]);
    tr.cells[0].colSpan = 4;
    body.append(tr);
  }
}

export function showStats(s, now) {
  sample(s, now);

  const canvas = document.getElementById("throughput");
  canvas.dataset.samples = samples.length;
  for (const [k, v] of Object.entries(moved)) {
    canvas.dataset["bytes" + k[0].toUpperCase() + k.slice(1)] = v;
  }
  drawChart(canvas, WINDOW, samples,
            SERIES.filter((x) => x.key !== "other" || moved.other));
  legend();

  list("now", [
    ["FTP sessions", s.sessions.ftp],
    ["SFTP sessions", s.sessions.sftp],
    ["connections", s.connections.active],
    ["bans", s.auth.bans],
    ["workers", s.workers],
    ["up", s.uptime + " s"],
  ]);
  list("logins", [
    ["ok", s.logins.ok],
    ["failed", s.logins.failed],
    ["argon2id runs", s.auth.argon2_runs],
    ["from the cache", s.auth.cache_hits],
    ["checks running", s.auth.checks_running],
  ]);
  list("traffic", [
    ["file bytes received", bytes(s.bytes.received)],
    ["file bytes sent", bytes(s.bytes.sent)],
    ["connections", s.connections.accepted],
    ["reloads", s.reloads],
  ]);

  const p = s.buffer_pool;
  const meter = document.getElementById("pool-meter");
  meter.max = p.total || 1;
  meter.value = p.in_use;
  list("pool", [
    ["chunks in use", p.in_use + " / " + p.total],
    ["chunk size", bytes(p.chunk_bytes)],
    ["waits", p.waits],
    ["waiting now", p.waiters],
    ["reserved by S3 upload parts", p.reserved],
  ]);

  transfers(s);
}
