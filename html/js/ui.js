// ui.js -- small DOM helpers the panels share: elements from text only
// (never HTML), definition lists, sizes and times, the message line and
// the confirmation dialog
"use strict";

export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

export function button(text, cls, onclick) {
  const b = el("button", text, cls);
  b.type = "button";
  b.addEventListener("click", onclick);
  return b;
}

export function row(cells) {
  const tr = el("tr");
  for (const c of cells) {
    const td = el("td");
    if (c instanceof Node) td.append(c);
    else td.textContent = c;
    tr.append(td);
  }
  return tr;
}

export function list(id, rows) {
  const dl = document.getElementById(id);
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dd = el("dd", v);
    dd.dataset.key = k;
    dl.append(el("dt", k), dd);
  }
}

export function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

export function time(unix) {
  return new Date(unix * 1000).toLocaleString();
}

// the line under the header: an error or a notice, until the next one
export function message(text, isError) {
  const m = document.getElementById("message");
  m.textContent = text || "";
  m.hidden = !text;
  m.classList.toggle("error", Boolean(isError));
}

// a yes/no question in the page's own dialog: resolves true for "Yes"
export function confirmAction(text) {
  const d = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;

  return new Promise((resolve) => {
    const yes = document.getElementById("confirm-yes");
    const no = document.getElementById("confirm-no");
    const done = (answer) => {
      yes.removeEventListener("click", onYes);
      no.removeEventListener("click", onNo);
      d.removeEventListener("cancel", onNo);
      d.close();
      resolve(answer);
    };
    const onYes = () => done(true);
    const onNo = () => done(false);
    yes.addEventListener("click", onYes);
    no.addEventListener("click", onNo);
    d.addEventListener("cancel", onNo);
    d.showModal();
  });
}
