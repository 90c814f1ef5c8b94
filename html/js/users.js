// users.js -- the users tab over /api/v1/users: a list paged and filtered
// by name, a form to create a user or change one (PATCH of the keys that
// changed, with the If-Match of the ETag the form was filled from, so a
// user changed meanwhile answers 412), disable and delete; the API's
// refusals shown next to the field they name
"use strict";

import { api, describe } from "./api.js";
import { button, bytes, confirmAction, el, message, row } from "./ui.js";

const LIMIT = 20;
const NUMBERS = ["quota_bytes", "quota_files", "upload_rate", "download_rate",
                 "max_sessions"];

// seq: the latest list request, whose answer alone is drawn
const state = { offset: 0, total: 0, filter: "", editing: null, seq: 0 };

const $ = (id) => document.getElementById(id);
const form = () => $("user-form");
const field = (k) => form().elements.namedItem(k);

function limits(u) {
  const q = [];
  if (u.quota_bytes) q.push(bytes(u.quota_bytes));
  if (u.quota_files) q.push(u.quota_files + " files");
  return q.join(", ") || "none";
}

function rates(u) {
  const r = [];
  if (u.download_rate) r.push("down " + bytes(u.download_rate) + "/s");
  if (u.upload_rate) r.push("up " + bytes(u.upload_rate) + "/s");
  return r.join(", ") || "none";
}

export async function loadUsers() {
  const q = new URLSearchParams({ offset: state.offset, limit: LIMIT });
  const seq = ++state.seq;
  const table = $("users");
  let r;

  if (state.filter) q.set("name", state.filter);
  table.dataset.state = "loading";

  try {
    r = await api("GET", "/api/v1/users?" + q);
  } catch (e) {
    if (seq === state.seq) table.dataset.state = "error";
    message("Users: " + describe(e), true);
    return;
  }

  if (seq !== state.seq) return;

  state.total = r.json.total;
  const body = document.querySelector("#users tbody");
  body.replaceChildren();

  for (const u of r.json.users) {
    const actions = el("span", null, "actions");
    actions.append(
      button("Edit", "write", () => edit(u.name)),
      button(u.disabled ? "Enable" : "Disable", "write",
             () => setDisabled(u.name, !u.disabled)),
      button("Delete", "write danger", () => remove(u.name)));
    const tr = row([u.name, u.home, limits(u), rates(u),
                    u.max_sessions || "any",
                    u.disabled ? "disabled" : "active", actions]);
    tr.dataset.user = u.name;
    body.append(tr);
  }

  if (!r.json.users.length) {
    const tr = row([state.filter ? "no user starts with that" : "no user"]);
    tr.cells[0].colSpan = 7;
    body.append(tr);
  }

  const first = r.json.users.length ? state.offset + 1 : 0;
  $("users-page").textContent = first + "–"
    + (state.offset + r.json.users.length) + " of " + state.total;
  $("users-prev").disabled = state.offset === 0;
  $("users-next").disabled = state.offset + LIMIT >= state.total;
  table.dataset.state = "ready";
}

function clearErrors() {
  for (const e of form().querySelectorAll(".field-error")) e.textContent = "";
  message("");
  $("user-form-error").hidden = true;
  $("user-reload").hidden = true;
}

function showError(e) {
  // "rules" is the form's permissions field
  const field = e.field === "rules" ? "perms" : e.field;
  const slot = field && form().querySelector(
    '.field-error[data-field="' + CSS.escape(field) + '"]');

  if (slot && (e.status === 400 || e.status === 422 || e.status === 409)) {
    slot.textContent = e.message;
    return;
  }

  const p = $("user-form-error");
  p.hidden = false;

  if (e.status === 412) {
    p.textContent = "This user was changed since you loaded it: reload it"
      + " and make your change again.";
    $("user-reload").hidden = false;
  } else {
    p.textContent = describe(e);
  }
}

function rootPerms(u) {
  const r = (u.rules || []).find((x) => x.path === "/");
  return r ? r.perms : "";
}

// the form's values as the API's keys
function values() {
  const v = {
    name: field("name").value.trim(),
    home: field("home").value.trim(),
    storage: field("storage").value.trim(),
    perms: field("perms").value.replace(/\s+/g, ""),
    allow_from: field("allow_from").value.split(/[\s,]+/).filter(Boolean),
    ssh_keys: field("ssh_keys").value.split("\n").map((s) => s.trim())
      .filter(Boolean),
    disabled: field("disabled").checked,
  };
  for (const k of NUMBERS) {
    // not a number: sent as typed, for the API to name the field
    const s = field(k).value.trim();
    v[k] = s === "" ? 0 : Number.isFinite(Number(s)) ? Number(s) : s;
  }
  return v;
}

function fill(u) {
  const f = form();
  f.reset();
  field("name").value = u.name || "";
  field("name").readOnly = Boolean(state.editing);
  field("home").value = u.home || "";
  field("storage").value = u.storage || "";
  field("perms").value = rootPerms(u);
  for (const k of NUMBERS) field(k).value = u[k] || "";
  field("allow_from").value = (u.allow_from || []).join(", ");
  field("ssh_keys").value = (u.ssh_keys || []).join("\n");
  field("disabled").checked = Boolean(u.disabled);
  f.dataset.loaded = JSON.stringify(values());
}

function openEditor(title) {
  clearErrors();
  $("user-editor-title").textContent = title;
  $("user-editor").hidden = false;
}

function create() {
  state.editing = null;
  fill({});
  openEditor("New user");
  field("name").focus();
}

async function edit(name) {
  const editor = $("user-editor");
  let r;

  editor.dataset.state = "loading";
  try {
    r = await api("GET", "/api/v1/users/" + encodeURIComponent(name));
  } catch (e) {
    editor.dataset.state = "error";
    message("User " + name + ": " + describe(e), true);
    return;
  }
  state.editing = { name, etag: r.etag, user: r.json };
  fill(r.json);
  openEditor("User " + name);
  editor.dataset.state = "ready";
}

// the request body: for a new user what was filled in, for a change only
// the keys whose value changed
function body() {
  const v = values();
  const before = JSON.parse(form().dataset.loaded || "{}");
  const b = {};

  for (const [k, x] of Object.entries(v)) {
    if (k === "perms" || k === "name") continue;
    if (JSON.stringify(x) === JSON.stringify(before[k])) continue;
    b[k] = x;
  }

  if (v.perms !== before.perms) {
    const others = state.editing
      ? (state.editing.user.rules || []).filter((r) => r.path !== "/") : [];
    b.rules = v.perms ? [{ path: "/", perms: v.perms }, ...others] : others;
  }

  if (field("password").value) b.password = field("password").value;
  if (!state.editing) b.name = v.name;

  return b;
}

async function save(ev) {
  ev.preventDefault();
  clearErrors();

  const b = body();
  let r;

  try {
    if (state.editing) {
      r = await api("PATCH", "/api/v1/users/"
                    + encodeURIComponent(state.editing.name),
                    { body: b, etag: state.editing.etag });
    } else {
      r = await api("POST", "/api/v1/users", { body: b });
    }
  } catch (e) {
    showError(e);
    return;
  }

  const name = r.json.name;
  state.editing = { name, etag: r.etag, user: r.json };
  fill(r.json);
  openEditor("User " + name);
  message("User " + name + " saved.");
  await loadUsers();
}

async function setDisabled(name, disabled) {
  try {
    await api("PATCH", "/api/v1/users/" + encodeURIComponent(name),
              { body: { disabled } });
    message("User " + name + (disabled ? " disabled." : " enabled."));
  } catch (e) {
    message("User " + name + ": " + describe(e), true);
  }
  await loadUsers();
}

async function remove(name) {
  if (!await confirmAction("Delete the user " + name + "? Their files stay"
                           + " where they are.")) {
    return;
  }
  try {
    await api("DELETE", "/api/v1/users/" + encodeURIComponent(name));
    message("User " + name + " deleted.");
    if (state.editing && state.editing.name === name) closeEditor();
  } catch (e) {
    message("User " + name + ": " + describe(e), true);
  }
  await loadUsers();
}

// also on sign-out: the next token must not find another's form open
export function closeEditor() {
  state.editing = null;
  $("user-editor").hidden = true;
}

export function setupUsers() {
  let timer = null;

  $("user-filter").addEventListener("input", (ev) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      state.filter = ev.target.value.trim();
      state.offset = 0;
      loadUsers();
    }, 250);
  });
  $("users-prev").addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - LIMIT);
    loadUsers();
  });
  $("users-next").addEventListener("click", () => {
    state.offset += LIMIT;
    loadUsers();
  });
  $("user-new").addEventListener("click", create);
  $("user-cancel").addEventListener("click", closeEditor);
  $("user-reload").addEventListener("click", () => edit(state.editing.name));
  form().addEventListener("submit", save);
}
