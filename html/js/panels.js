// panels.js -- the sessions, bans and server tabs: GET /api/v1/sessions
// (End session: DELETE /api/v1/sessions/ID), GET /api/v1/bans (Lift:
// DELETE /api/v1/bans/ADDRESS), GET /api/v1/server and POST
// /api/v1/server/reload.  A server without a route answers 404: the panel
// says it is not available there (data-state="unavailable") and stops
// asking.
"use strict";

import { api, describe } from "./api.js";
import { button, bytes, confirmAction, list, message, row, time }
  from "./ui.js";

const $ = (id) => document.getElementById(id);

// a panel: its section, the route it reads and what draws the answer
function panel(id, path, draw) {
  const section = $(id);

  return async function load() {
    if (section.dataset.state === "unavailable") return null;

    const error = section.querySelector(".panel-error");
    let r;

    try {
      r = await api("GET", path);
    } catch (e) {
      if (e.status === 404 || e.status === 405) {
        section.dataset.state = e.status === 404 ? "unavailable" : "ready";
        error.textContent = "";
        return e;
      }
      section.dataset.state = "error";
      error.textContent = describe(e);
      return e;
    }

    section.dataset.state = "ready";
    error.textContent = "";
    if (draw) draw(r.json, section);
    return r;
  };
}

function rows(section, items, make, empty) {
  const body = section.querySelector("tbody");
  body.replaceChildren();
  for (const x of items) body.append(make(x));
  if (!items.length) {
    const tr = row([empty]);
    tr.cells[0].colSpan = section.querySelectorAll("th").length;
    body.append(tr);
  }
}

// a DELETE from a button (answered 200 or 204, else refused): what it
// did, and the panel read again after it
async function end(what, path, done, reload) {
  try {
    await api("DELETE", path);
    message(what + ": " + done + ".");
  } catch (e) {
    message(what + ": " + describe(e), true);
  }
  await reload();
}

function transfer(t) {
  if (!t) return "";
  return t.direction + " " + t.path + " (" + t.data_path + ", "
    + bytes(t.rate) + "/s)";
}

export const loadSessions = panel("sessions", "/api/v1/sessions",
  (sessions, section) => rows(section, sessions, (s) => {
    const tr = row([s.protocol, s.user === null ? "(not logged in)" : s.user,
                    s.address + " port " + s.port, time(s.since),
                    bytes(s.bytes_in), bytes(s.bytes_out), transfer(s.transfer),
                    button("End session", "write danger", async () => {
                      if (await confirmAction("End the " + s.protocol
                          + " session of " + (s.user || s.address) + "?")) {
                        await end("Session " + s.id, "/api/v1/sessions/"
                                  + encodeURIComponent(s.id), "ended",
                                  loadSessions);
                      }
                    })]);
    tr.dataset.session = s.id;
    return tr;
  }, "no session"));

export const loadBans = panel("bans", "/api/v1/bans",
  (bans, section) => rows(section, bans, (b) => {
    const tr = row([b.address, b.failures, time(b.until),
                    button("Lift", "write", () => end("Ban of " + b.address,
                      "/api/v1/bans/" + encodeURIComponent(b.address),
                      "lifted", loadBans))]);
    tr.dataset.address = b.address;
    return tr;
  }, "no address is banned"));

export const loadServer = panel("server", "/api/v1/server", (s) => {
  $("version").textContent = "version " + s.version;
  list("server-info", Object.entries(s).map(([k, v]) =>
    [k, k === "started" ? time(v) : Array.isArray(v) ? v.join(", ")
      : typeof v === "object" ? JSON.stringify(v) : v]));
});

// the reload route takes POST only: a GET answers 405 where it exists
const probeReload = panel("reload", "/api/v1/server/reload", null);

async function reload() {
  const out = $("reload-result");
  out.className = "";
  out.textContent = "reloading...";

  // 200 {"ok":true}: the new configuration loaded
  try {
    await api("POST", "/api/v1/server/reload");
    out.textContent = "Reloaded.";
    out.className = "notice";
  } catch (e) {
    if (e.status === 404) $("reload").dataset.state = "unavailable";
    // 422: the new configuration did not load, its error as the master
    // logged it ("FILE:LINE: message"); the running one serves on
    out.textContent = e.status === 422 ? e.message : describe(e);
    out.className = "error";
  }
}

export function loadServerTab() {
  return Promise.all([loadServer(), probeReload()]);
}

export function setupPanels() {
  $("reload-button").addEventListener("click", reload);
}
