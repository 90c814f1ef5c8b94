// api.js -- the dashboard's one way to the admin API: same origin, the
// bearer token of this tab (sessionStorage, gone with the tab), answers as
// JSON, and every refusal as an ApiError with the status and the API's
// {"error", "field"}
"use strict";

const KEY = "siftpd.token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, reason, field) {
    super(reason);
    this.status = status;
    this.field = field || null;
  }
}

let refused = () => {};

// called with the error when a request is answered 401: the token is gone
export function onRefused(fn) {
  refused = fn;
}

export async function api(method, path, opts = {}) {
  const headers = {};
  const t = token.get();
  let r;

  if (t) headers.Authorization = "Bearer " + t;
  if (opts.etag) headers["If-Match"] = opts.etag;
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";

  try {
    r = await fetch(path, {
      method,
      headers,
      cache: "no-store",
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch (e) {
    throw new ApiError(0, "the server did not answer");
  }

  const text = await r.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch (e) {
    json = null;
  }

  if (!r.ok) {
    const err = new ApiError(r.status, (json && json.error) || r.statusText,
                             json && json.field);
    if (r.status === 401) refused(err);
    throw err;
  }

  return { status: r.status, json, etag: r.headers.get("ETag") };
}

// what an operator should read for a refusal
export function describe(e) {
  switch (e.status) {
  case 0: return e.message;
  case 401: return "The token was refused (401): sign in again.";
  case 403: return "Forbidden (403): this token may only read, or this"
    + " address may not ask without a token.";
  case 404: return "Not found (404).";
  case 429: return "This address is banned for too many failed logins (429).";
  default: return e.message + " (" + e.status + ")";
  }
}
