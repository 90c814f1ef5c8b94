// driver.js -- one step of t/dashboard.t in the dashboard's tab: connects
// with puppeteer-core to the Chromium the test started (its DevTools
// endpoint), acts as an operator would (typing, clicking), waits for the
// page to answer (every wait bounded) and prints what the page shows as
// one line of JSON; the test makes its assertions on that.
//
//   node driver.js WS_ENDPOINT STEP [ARGUMENTS...]
"use strict";

const puppeteer = require("puppeteer-core");

const WAIT = 15000;

async function visible(page, sel) {
  return page.$eval(sel, (e) => e.offsetParent !== null).catch(() => false);
}

async function text(page, sel) {
  return page.$eval(sel, (e) => e.textContent.trim()).catch(() => null);
}

async function tab(page, name) {
  await page.click(`#tabs button[data-tab="${name}"]`);
  await page.waitForSelector(`#tab-${name}:not([hidden])`);
  if (name === "users") await listLoaded(page);
}

// the users list drawn from the answer to its latest request
async function listLoaded(page) {
  await page.waitForSelector('#users[data-state="ready"]');
}

async function userRow(page, name) {
  await tab(page, "users");
  return page.waitForSelector(`#users tr[data-user="${name}"]`);
}

async function rowButton(page, name, label) {
  const tr = await userRow(page, name);
  const buttons = await tr.$$("button");
  for (const b of buttons) {
    if (await b.evaluate((e, l) => e.textContent === l, label)) return b;
  }
  throw new Error(`no "${label}" button for ${name}`);
}

async function setField(page, field, value) {
  const sel = `#user-form [name="${field}"]`;
  await page.$eval(sel, (e) => { e.value = ""; });
  await page.type(sel, value);
}

async function formState(page) {
  return page.evaluate(() => {
    const errors = {};
    for (const e of document.querySelectorAll("#user-form .field-error")) {
      if (e.textContent) errors[e.dataset.field] = e.textContent;
    }
    const fe = document.getElementById("user-form-error");
    return {
      message: document.getElementById("message").textContent,
      form_error: fe.hidden ? "" : fe.textContent,
      reload_button: !document.getElementById("user-reload").hidden,
      field_errors: errors,
    };
  });
}

// wait until the form shows an outcome: a message, a form error or a
// field error
async function saved(page) {
  await page.waitForFunction(() =>
    !document.getElementById("message").hidden
    || !document.getElementById("user-form-error").hidden
    || [...document.querySelectorAll("#user-form .field-error")]
      .some((e) => e.textContent));
  return formState(page);
}

async function filled(page) {
  await page.waitForSelector('#user-editor[data-state="ready"]');
  return page.evaluate(() => ({
    quota_bytes: document.querySelector('#user-form [name="quota_bytes"]')
      .value,
    quota_files: document.querySelector('#user-form [name="quota_files"]')
      .value,
  }));
}

async function listed(page) {
  return page.evaluate(() => ({
    names: [...document.querySelectorAll("#users tr[data-user]")]
      .map((e) => e.dataset.user),
    page: document.getElementById("users-page").textContent,
  }));
}

// a button of a row the poll redraws every two seconds: found and
// clicked in one go in the page, never a row replaced meanwhile
async function press(page, sel) {
  await page.waitForSelector(sel);
  await page.$eval(sel, (b) => b.click());
}

// the cells of a table's rows, the buttons' column left out
async function tableRows(page, sel) {
  return page.$$eval(sel, (trs) => trs.map((tr) => [...tr.cells]
    .filter((td) => !td.querySelector("button"))
    .map((td) => td.textContent)));
}

const steps = {
  async open(page, url) {
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() =>
      !document.getElementById("signin").hidden
      || !document.getElementById("tabs").hidden);
    return { signin: await visible(page, "#signin") };
  },

  async signin(page, token) {
    await page.type("#token", token);
    await page.click("#signin-form button[type=submit]");
    await page.waitForFunction(() =>
      (!document.getElementById("tabs").hidden
       && document.body.dataset.scope !== "none")
      || !document.getElementById("signin-error").hidden);
    await page.waitForFunction(() =>
      document.getElementById("tabs").hidden
      || document.getElementById("status").textContent === "live");
    return page.evaluate(() => ({
      scope: document.body.dataset.scope,
      signin_error: document.getElementById("signin-error").hidden ? ""
        : document.getElementById("signin-error").textContent,
      stored: sessionStorage.getItem("siftpd.token"),
      status: document.getElementById("status").textContent,
      version: document.getElementById("version").textContent,
    }));
  },

  // signed out by the page itself: why
  async refused(page) {
    await page.waitForSelector("#signin:not([hidden])");
    return page.evaluate(() => ({
      signin_error: document.getElementById("signin-error").textContent,
      stored: sessionStorage.getItem("siftpd.token"),
    }));
  },

  async signout(page) {
    await page.click("#signout");
    await page.waitForSelector("#signin:not([hidden])");
    return page.evaluate(() => ({
      stored: sessionStorage.getItem("siftpd.token"),
      tabs: !document.getElementById("tabs").hidden,
      editor: !document.getElementById("user-editor").hidden,
    }));
  },

  async create(page, name, password, perms) {
    await tab(page, "users");
    await page.click("#user-new");
    await page.waitForSelector("#user-editor:not([hidden])");
    await setField(page, "name", name);
    await setField(page, "password", password);
    await setField(page, "home", "/" + name);
    await setField(page, "perms", perms);
    await page.click("#user-save");
    const s = await saved(page);
    const row = await page.waitForSelector(`#users tr[data-user="${name}"]`,
                                           { timeout: 5000 }).catch(() => null);
    s.row = row ? await row.evaluate((e) => e.textContent) : null;
    return s;
  },

  // a field set to a value and saved: the form's answer
  async invalid(page, field, value) {
    await setField(page, field, value);
    await page.click("#user-save");
    return saved(page);
  },

  // the user's form filled from the API, as an operator opens it
  async edit(page, name) {
    await (await rowButton(page, name, "Edit")).click();
    return filled(page);
  },

  // after a 412: the form's Reload button
  async reload(page) {
    await page.click("#user-reload");
    return filled(page);
  },


  async save(page, field, value) {
    await page.evaluate(() => {
      document.getElementById("message").hidden = true;
    });
    await setField(page, field, value);
    await page.click("#user-save");
    return saved(page);
  },

  async disable(page, name) {
    await (await rowButton(page, name, "Disable")).click();
    await page.waitForFunction((n) => {
      const tr = document.querySelector(`#users tr[data-user="${n}"]`);
      return tr && tr.textContent.includes("disabled");
    }, {}, name);
    return { message: await text(page, "#message") };
  },

  async remove(page, name) {
    await (await rowButton(page, name, "Delete")).click();
    await page.waitForSelector("#confirm[open]");
    const question = await text(page, "#confirm-text");
    await page.click("#confirm-yes");
    await page.waitForFunction((n) =>
      !document.querySelector(`#users tr[data-user="${n}"]`), {}, name);
    return { question, message: await text(page, "#message") };
  },

  // the write buttons an operator can see on the users tab, and in all
  async buttons(page) {
    await tab(page, "users");
    await page.waitForSelector("#users tbody tr");
    return page.evaluate(() => ({
      rows: document.querySelectorAll("#users tr[data-user]").length,
      write: document.querySelectorAll(".write").length,
      visible: [...document.querySelectorAll(".write")]
        .filter((e) => e.offsetParent !== null).length,
    }));
  },

  // the overview's chart once it has counted at least least bytes of each
  // protocol named (the counters move as each transfer ends)
  async chart(page, least, ...protocols) {
    await tab(page, "overview");
    await page.waitForFunction((n, ps) => {
      const d = document.getElementById("throughput").dataset;
      return ps.every((p) => Number(d["bytes" + p[0].toUpperCase()
                                       + p.slice(1)]) >= Number(n));
    }, { timeout: 20000 }, least, protocols);
    return page.evaluate(() => ({
      ...document.getElementById("throughput").dataset,
      legend: document.getElementById("throughput-legend").textContent,
      pool: document.querySelector('#pool dd[data-key="chunks in use"]')
        .textContent,
      reserved: document.querySelector(
        '#pool dd[data-key="reserved by S3 upload parts"]').textContent,
      transfers: document.querySelectorAll("#transfers tbody tr").length,
    }));
  },

  // the sessions panel once it lists the protocols named (polled every
  // two seconds): each row's cells
  async sessions(page, ...protocols) {
    await tab(page, "sessions");
    await page.waitForFunction((ps) => {
      const got = [...document.querySelectorAll("#sessions tr[data-session]")]
        .map((tr) => tr.cells[0].textContent);
      return ps.every((p) => got.includes(p));
    }, {}, protocols);
    return { rows: await tableRows(page, "#sessions tr[data-session]") };
  },

  // "End session" on the row of a protocol, confirmed: the rows once that
  // one is gone
  async end(page, protocol) {
    await tab(page, "sessions");
    const id = await page.$$eval("#sessions tr[data-session]", (trs, p) =>
      trs.find((tr) => tr.cells[0].textContent === p).dataset.session,
      protocol);
    await press(page, `#sessions tr[data-session="${id}"] button`);
    await page.waitForSelector("#confirm[open]");
    const question = await text(page, "#confirm-text");
    await page.click("#confirm-yes");
    await page.waitForFunction((i) =>
      !document.querySelector(`#sessions tr[data-session="${i}"]`), {}, id);
    return { question, message: await text(page, "#message"),
             rows: await tableRows(page, "#sessions tr[data-session]") };
  },

  // the bans panel once it lists the address
  async bans(page, address) {
    await tab(page, "bans");
    await page.waitForSelector(`#bans tr[data-address="${address}"]`);
    return { rows: await tableRows(page, "#bans tr[data-address]") };
  },

  async lift(page, address) {
    await tab(page, "bans");
    await press(page, `#bans tr[data-address="${address}"] button`);
    await page.waitForFunction((a) =>
      !document.querySelector(`#bans tr[data-address="${a}"]`), {}, address);
    return { message: await text(page, "#message"),
             rows: await tableRows(page, "#bans tr[data-address]") };
  },

  // the server panel: its list as key => value
  async server(page) {
    await tab(page, "server");
    await page.waitForSelector('#server[data-state="ready"] dd');
    return page.$$eval("#server-info dd", (dds) =>
      Object.fromEntries(dds.map((d) => [d.dataset.key, d.textContent])));
  },

  // Reload pressed: what the page says once the answer came
  async reconfigure(page) {
    await tab(page, "server");
    await page.click("#reload-button");
    await page.waitForFunction(() =>
      document.getElementById("reload-result").textContent
      !== "reloading...", { timeout: 30000 });
    return page.$eval("#reload-result", (e) =>
      ({ text: e.textContent, class: e.className }));
  },

  // the rows of sessions, bans and the server's tab, and their buttons
  // that change something: how many, how many visible
  async controls(page) {
    const out = { rows: 0, buttons: 0, visible: 0 };
    for (const [t, sel] of [["sessions", "#sessions tr[data-session]"],
                            ["bans", "#bans tr[data-address]"],
                            ["server", "#reload"]]) {
      await tab(page, t);
      await page.waitForSelector(sel);
      out.rows += (await page.$$(sel)).length;
      const c = await page.$$eval(sel + " button", (bs) => ({
        buttons: bs.length,
        visible: bs.filter((b) => b.offsetParent !== null).length,
      }));
      for (const k of ["buttons", "visible"]) out[k] += c[k];
    }
    return out;
  },

  // the list filtered by the start of a name, as typed
  async filter(page, prefix) {
    await tab(page, "users");
    const before = await text(page, "#users-page");
    await page.$eval("#user-filter", (e) => { e.value = ""; });
    await page.type("#user-filter", prefix);
    await page.waitForFunction((b) =>
      document.getElementById("users-page").textContent !== b, {}, before);
    await listLoaded(page);
    return listed(page);
  },

  async next(page) {
    const before = await text(page, "#users-page");
    await page.click("#users-next");
    await page.waitForFunction((b) =>
      document.getElementById("users-page").textContent !== b, {}, before);
    await listLoaded(page);
    return listed(page);
  },

  // what the console had since the page loaded: exceptions, errors, and
  // the reports of the Content-Security-Policy
  async console(page) {
    const cdp = await page.createCDPSession();
    const out = { exceptions: [], errors: [] };
    cdp.on("Runtime.exceptionThrown", (e) =>
      out.exceptions.push(e.exceptionDetails.exception
        ? e.exceptionDetails.exception.description
        : e.exceptionDetails.text));
    cdp.on("Runtime.consoleAPICalled", (e) => {
      if (e.type === "error") {
        out.errors.push(e.args.map((a) => a.value || a.description)
          .join(" "));
      }
    });
    cdp.on("Log.entryAdded", (e) => {
      if (e.entry.level === "error") out.errors.push(e.entry.text);
    });
    await cdp.send("Runtime.enable");
    await cdp.send("Log.enable");
    await new Promise((resolve) => setTimeout(resolve, 500));
    await cdp.detach();
    return out;
  },

  async screenshot(page, file) {
    await page.screenshot({ path: file, fullPage: true });
    return { file };
  },
};

async function main() {
  const [ws, step, ...args] = process.argv.slice(2);
  const browser = await puppeteer.connect({
    browserWSEndpoint: ws,
    defaultViewport: { width: 1280, height: 900 },
  });

  try {
    let [page] = await browser.pages();
    if (!page) page = await browser.newPage();
    page.setDefaultTimeout(WAIT);
    console.log(JSON.stringify(await steps[step](page, ...args)));
  } finally {
    await browser.disconnect();
  }
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
  process.exit(1);
});
