// app.js -- the siftpd dashboard: signs in with an API token (kept in this
// tab's sessionStorage; none is needed from loopback without
// api_token_file), finds the token's scope, switches tabs and polls
// /api/v1/stats, and the open tab's panel, every two seconds
"use strict";

import { api, describe, onRefused, token } from "./js/api.js";
import { showStats } from "./js/overview.js";
import { loadBans, loadServerTab, loadSessions, setupPanels }
  from "./js/panels.js";
import { closeEditor, loadUsers, setupUsers } from "./js/users.js";
import { message } from "./js/ui.js";

const POLL = 2000;

const $ = (id) => document.getElementById(id);

let timer = null;
let tab = "overview";

const TABS = {
  overview: null,
  users: loadUsers,
  sessions: loadSessions,
  bans: loadBans,
  server: loadServerTab,
};

function status(text, ok) {
  $("status").textContent = text;
  $("status").className = "status " + (ok ? "ok" : "error");
}

async function poll() {
  clearTimeout(timer);

  try {
    const r = await api("GET", "/api/v1/stats");
    showStats(r.json, Date.now());
    if (!$("version").textContent) {
      $("version").textContent = "version " + r.json.version;
    }
    status("live", true);
  } catch (e) {
    status("no data: " + describe(e), false);
    if (e.status === 401) return;
  }

  // the lists that change by themselves follow the stats
  if (tab === "sessions" || tab === "bans") await TABS[tab]();

  timer = setTimeout(poll, POLL);
}

function show(name) {
  tab = name;
  for (const b of document.querySelectorAll("#tabs button")) {
    b.classList.toggle("active", b.dataset.tab === name);
  }
  for (const m of document.querySelectorAll("main.tab")) {
    m.hidden = m.id !== "tab-" + name;
  }
  if (TABS[name]) TABS[name]();
}

// the token's scope as the server states it; "read" if it cannot say
async function scope() {
  try {
    const r = await api("GET", "/api/v1/token");
    return r.json.scope === "admin" ? "admin" : "read";
  } catch (e) {
    return "read";
  }
}

async function signedIn() {
  const s = await scope();

  document.body.dataset.scope = s;
  for (const b of document.querySelectorAll(".write")) {
    b.disabled = s !== "admin";
  }

  $("who").textContent = token.get() ? s + " token" : "loopback, no token";
  $("signin").hidden = true;
  $("tabs").hidden = false;
  $("signout").hidden = !token.get();
  show(tab);
  poll();

  // the server's own version and routes, where it has them
  if (tab !== "server") loadServerTab();
}

function signedOut(why) {
  clearTimeout(timer);
  token.clear();
  closeEditor();
  message("");
  document.body.dataset.scope = "none";
  for (const m of document.querySelectorAll("main.tab")) m.hidden = true;
  $("tabs").hidden = true;
  $("signout").hidden = true;
  $("who").textContent = "";
  $("signin").hidden = false;
  $("signin-error").hidden = !why;
  $("signin-error").textContent = why || "";
  status("signed out", false);
  $("token").focus();
}

async function signIn(ev) {
  ev.preventDefault();
  $("signin-error").hidden = true;
  token.set($("token").value.trim());
  $("token").value = "";

  try {
    await api("GET", "/api/v1/stats");
  } catch (e) {
    signedOut(describe(e));
    return;
  }

  message("");
  signedIn();
}

async function start() {
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => show(b.dataset.tab));
  }
  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", () => signedOut(""));
  setupUsers();
  setupPanels();
  onRefused((e) => signedOut(describe(e)));

  // the token of this tab, or none: loopback without api_token_file
  try {
    await api("GET", "/api/v1/stats");
  } catch (e) {
    signedOut(token.get() || e.status !== 401 ? describe(e) : "");
    return;
  }

  signedIn();
}

start();
