// omoide console: devices -> people -> a person's memories, profile and turns, live.
// Dependency-free ES module; every datum comes from omoide's JSON API with the session
// cookie (POST /v1/session trades a token for it). See README "The console".
import { ganttHtml } from "./gantt.js";

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => (
  { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const enc = encodeURIComponent;
const short = (s, n = 40) => { const t = String(s ?? ""); return t.length > n ? `${t.slice(0, n)}…` : t; };
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

const MAX_TURNS = 100;

const state = {
  session: { signed_in: false }, tz: "UTC", zoneName: "", people: [], peopleNext: null, features: {},
  turns: new Map(), events: null, healthTimer: null, undoTimers: new Map(), routeSeq: 0,
};
// A view that awaited something checks it is still the one on screen before drawing.
const stale = (seq) => seq !== state.routeSeq;

// ---------------------------------------------------------------- API ----------------
class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

async function api(path, { method = "GET", json, body, headers = {} } = {}) {
  const init = { method, credentials: "same-origin", headers: { ...headers } };
  if (json !== undefined) { init.body = JSON.stringify(json); init.headers["content-type"] = "application/json"; }
  else if (body !== undefined) init.body = body;
  const r = await fetch(path, init);
  const data = await r.json().catch(() => ({}));
  if (r.status === 401 && path !== "/v1/session") { signedOut("Your session ended: please sign in again."); }
  if (!r.ok) {
    const problems = (data.problems || []).map((p) => p.line ? `line ${p.line}: ${p.message}` : `${p.path}: ${p.message}`);
    throw new ApiError(r.status, [data.error || r.statusText, ...problems].join("; "), data);
  }
  return data;
}

// ---------------------------------------------------------------- time ---------------
function zoneParts(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return null;
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: state.tz, year: "numeric", month: "2-digit",
    day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" }).formatToParts(d);
  return Object.fromEntries(parts.map((p) => [p.type, p.value]));
}
function fmtTime(iso, { seconds = false } = {}) {
  if (!iso) return "never";
  const p = zoneParts(iso);
  if (!p) return esc(iso);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}${seconds ? `:${p.second}` : ""}`;
}
const timeHtml = (iso, opts) => iso ? `<time datetime="${esc(iso)}">${esc(fmtTime(iso, opts))}</time>` : "never";
function zoneName() {
  try {
    const part = new Intl.DateTimeFormat("en-US", { timeZone: state.tz, timeZoneName: "short" })
      .formatToParts(new Date()).find((p) => p.type === "timeZoneName");
    return part ? part.value : state.tz;
  } catch { return state.tz; }
}

// ---------------------------------------------------------------- session -----------
function showSignIn(note = "") {
  $("#signin").hidden = false; $("#view").innerHTML = "";
  $("#account").hidden = true; $("#nav").hidden = true;
  $("#signin-note").textContent = note;
  $("#zone-note").textContent = "Times are shown in the assistant's time zone once you sign in.";
}

function signedOut(note) {
  state.session = { signed_in: false };
  if (state.events) { state.events.close(); state.events = null; }
  state.turns.clear(); state.people = [];
  for (const t of state.undoTimers.values()) clearInterval(t);
  state.undoTimers.clear(); $("#undo").innerHTML = "";
  showSignIn(note);
}

$("#signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const token = $("#token").value.trim();
  try {
    state.session = await api("/v1/session", { method: "POST", json: { token } });
    $("#token").value = "";
    await start();
  } catch (err) { $("#signin-note").textContent = `Sign-in failed: ${err.message}`; }
});

$("#signout").addEventListener("click", async () => {
  await fetch("/v1/session", { method: "DELETE", credentials: "same-origin" }).catch(() => null);
  signedOut("Signed out.");
  history.replaceState(null, "", "/");
});

const isAdmin = () => state.session.role === "admin";

async function start() {
  $("#signin").hidden = true;
  $("#account").hidden = false; $("#nav").hidden = false;
  $("#who").textContent = isAdmin() ? "Signed in as the admin" : `Signed in as ${state.session.user}`;
  await loadPeople();
  state.zoneName = zoneName();
  $("#zone-note").textContent = `All times are in the assistant's time zone, ${state.tz} (${state.zoneName}).`;
  renderNav();
  openEvents();
  await route();
}

// People come a page at a time (GET /v1/users?limit=&cursor=): the first page here,
// the next ones when asked for (morePeople); state.peopleNext is the next page's cursor.
const PEOPLE_PAGE = 100;

async function loadPeople() {
  try {
    const body = await api(`/v1/users?limit=${PEOPLE_PAGE}`);
    state.tz = body.timezone || "UTC";
    state.features = body.features || {};
    state.people = body.people || [];
    state.peopleNext = body.next || null;
  } catch (err) {
    state.people = []; state.peopleNext = null;
    if (err.status === 503) setTimeout(loadPeople, 2000);
  }
}

async function morePeople() {
  if (!state.peopleNext) return [];
  const body = await api(`/v1/users?limit=${PEOPLE_PAGE}&cursor=${enc(state.peopleNext)}`);
  const page = body.people || [];
  state.people = state.people.concat(page);
  state.peopleNext = body.next || null;
  return page;
}

// ---------------------------------------------------------------- navigation --------
function links() {
  if (!isAdmin()) return [[`#/person/${enc(state.session.user)}`, "My memories and turns"]];
  return [["#/people", "People"], ["#/devices", "Devices"], ["#/turns", "Turns, live"], ["#/status", "Status"]];
}
function renderNav() {
  $("#nav-links").innerHTML = links().map(([href, label]) => `<li><a href="${href}">${esc(label)}</a></li>`).join("");
  markNav();
}
function markNav() {
  const here = location.hash || links()[0][0];
  for (const a of $$("#nav-links a")) {
    const match = here === a.getAttribute("href") || (a.getAttribute("href") === "#/people" && here.startsWith("#/person/"));
    if (match) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
}
window.addEventListener("hashchange", () => { if (state.session.signed_in) route(); });

async function route() {
  let hash = location.hash;
  if (!isAdmin()) {
    const mine = `#/person/${enc(state.session.user)}`;
    if (hash !== mine) { history.replaceState(null, "", mine); hash = mine; }
  } else if (!hash || hash === "#/") { history.replaceState(null, "", "#/people"); hash = "#/people"; }
  markNav();
  const view = $("#view");
  const seq = ++state.routeSeq;
  if (hash.startsWith("#/person/")) await personView(view, decodeURIComponent(hash.slice("#/person/".length)), seq);
  else if (hash === "#/devices") await devicesView(view, seq);
  else if (hash === "#/turns") turnsView(view);
  else if (hash === "#/status") await statusView(view, seq);
  else await peopleView(view, seq);
  if (stale(seq)) return;
  const h1 = $("h1", view);
  if (h1) { h1.tabIndex = -1; h1.focus({ preventScroll: false }); }
}

// ---------------------------------------------------------------- health ------------
async function loadHealth() {
  try {
    const r = await fetch("/healthz");
    const h = await r.json();
    const el = $("#health");
    el.textContent = `server ${h.status}`; el.className = `health ${h.status}`;
    return h;
  } catch { $("#health").textContent = "server unreachable"; return null; }
}

async function statusView(view, seq) {
  const h = await loadHealth();
  if (stale(seq)) return;
  const rows = h ? Object.entries(h.components).map(([path, c]) => `<tr>
      <td data-label="Stage">${esc(path)}</td><td data-label="Component">${esc(c.name)}</td>
      <td data-label="State">${esc(c.state)}</td>
      <td data-label="Notes">${c.reason ? `<span class="error">${esc(c.reason)}</span>` : ""}
        ${c.stand_in ? `<span class="muted">stand-in: ${esc(c.stand_in)}</span>` : ""}</td></tr>`).join("") : "";
  view.innerHTML = `<h1>Status</h1><p>The server is <strong>${esc(h ? h.status : "unreachable")}</strong>.</p>
    <table class="cards"><caption class="muted">Components</caption><thead><tr><th scope="col">Stage</th>
    <th scope="col">Component</th><th scope="col">State</th><th scope="col">Notes</th></tr></thead>
    <tbody>${rows}</tbody></table>`;
}

// ---------------------------------------------------------------- people ------------
function personRow(p) {
  const q = p.quarantined === null || p.quarantined === undefined ? "not tracked" : String(p.quarantined);
  return `<tr><td data-label="Person"><a href="#/person/${enc(p.user)}">${esc(p.user)}</a></td>
    <td data-label="Memories">${p.memory_unavailable ? `<strong>unavailable</strong> <span class="muted">(${esc(p.memory_unavailable)})</span>` : `${p.memories.live}${p.memories.superseded ? ` <span class="muted">(+${p.memories.superseded} superseded)</span>` : ""}`}</td>
    <td data-label="Last turn">${timeHtml(p.last_turn)}</td>
    <td data-label="Pending extraction">${p.pending}</td>
    <td data-label="Quarantined">${esc(q)}</td></tr>`;
}

async function peopleView(view, seq) {
  await loadPeople();
  if (stale(seq)) return;
  view.innerHTML = `<h1>People</h1>
    <p class="muted">Everyone omoide knows: who talked, who had memories imported, who was added here.</p>
    <table class="cards" id="people-table"><thead><tr><th scope="col">Person</th><th scope="col">Memories</th>
      <th scope="col">Last turn</th><th scope="col">Pending extraction</th><th scope="col">Quarantined</th></tr></thead>
      <tbody>${state.people.map(personRow).join("") || `<tr><td colspan="5" class="empty-cell">Nobody yet.</td></tr>`}</tbody></table>
    <p class="row"><span id="people-count" role="status"></span>
      <button type="button" id="more-people" class="secondary">Show more people</button></p>
    <h2 id="add-person-title">Add a person</h2>
    <form id="add-person" class="row" aria-labelledby="add-person-title">
      <label for="new-person">New person's id</label>
      <input id="new-person" type="text" required maxlength="64" aria-describedby="new-person-help"
        pattern="[\\p{L}\\p{N}_.@\\-]{1,64}" autocomplete="off">
      <button type="submit">Add person</button>
    </form>
    <p id="new-person-help" class="muted small">1–64 letters, digits, <code>_ - . @</code> (the id a robot is paired to).</p>
    <p id="add-person-note" role="status"></p>`;
  const counted = () => {
    $("#people-count").textContent = state.peopleNext ? `Showing the first ${plural(state.people.length, "person", "people")}.`
      : state.people.length ? `${plural(state.people.length, "person", "people")}.` : "";
    $("#more-people").hidden = !state.peopleNext;
  };
  counted();
  $("#more-people").addEventListener("click", async () => {
    try {
      const page = await morePeople();
      if (stale(seq)) return;
      $("#people-table tbody").insertAdjacentHTML("beforeend", page.map(personRow).join(""));
      counted();
    } catch (err) { $("#people-count").innerHTML = `<span class="error">Could not load more people: ${esc(err.message)}</span>`; }
  });
  $("#add-person").addEventListener("submit", async (e) => {
    e.preventDefault();
    const user = $("#new-person").value.trim();
    try {
      const r = await api("/v1/users", { method: "POST", json: { user } });
      $("#add-person-note").textContent = r.created ? `Added ${r.person.user}.` : `${r.person.user} was already known.`;
      location.hash = `#/person/${enc(r.person.user)}`;
    } catch (err) { $("#add-person-note").innerHTML = `<span class="error">Could not add: ${esc(err.message)}</span>`; }
  });
}

// ---------------------------------------------------------------- devices -----------
function deviceLabel(d) { return d.name ? `${d.name} (${d.device_id})` : d.device_id; }

// A robot serves a household: its members, and who answers a voice no one recognised
// (the default person, or a guest: no one's memory is read or written).
function householdCell(d, i) {
  const h = d.household || { members: [d.user], default_person: d.user, guest: false };
  const label = deviceLabel(d);
  const members = h.members.map((m) => `<li><a href="#/person/${enc(m)}">${esc(m)}</a>${m === h.default_person ? ` <span class="small muted">(default)</span>` : ""}${d.state !== "revoked" && h.members.length > 1 ? ` <button type="button" class="secondary small" data-remove-member="${esc(m)}" data-device="${esc(d.device_id)}" aria-label="Remove ${esc(m)} from ${esc(label)}">×</button>` : ""}</li>`).join("");
  const answer = h.guest ? "a guest (no one's memory)" : `${esc(h.default_person)}`;
  if (d.state === "revoked") return `<ul class="plain">${members}</ul><span class="small">Unrecognised voice: ${answer}</span>`;
  const others = state.people.filter((p) => !h.members.includes(p.user))
    .map((p) => `<option value="${esc(p.user)}">${esc(p.user)}</option>`).join("");
  const defaults = h.members.map((m) => `<option value="${esc(m)}"${m === h.default_person ? " selected" : ""}>${esc(m)}</option>`).join("");
  return `<ul class="plain">${members}</ul>
    <form class="row household-default" data-device="${esc(d.device_id)}">
      <label for="default-${i}">Unrecognised voice for ${esc(label)}</label>
      <select id="default-${i}">${defaults}<option value=""${h.guest ? " selected" : ""}>a guest (no one's memory)</option></select>
      <button type="submit" class="secondary" aria-label="Set who answers on ${esc(label)}">Set</button></form>
    <form class="row household-add" data-device="${esc(d.device_id)}">
      <label for="add-member-${i}">Add to ${esc(label)}</label>
      <select id="add-member-${i}" required><option value="">choose a person…</option>${others}</select>
      <button type="submit" class="secondary" aria-label="Add a person to ${esc(label)}">Add</button></form>`;
}

async function changeHousehold(view, device, change, done) {
  try {
    const r = await api(`/v1/devices/${enc(device)}/household`, { method: "PATCH", json: change });
    await devicesView(view);
    const h = r.device.household;
    $("#device-result").textContent = `${done}: ${deviceLabel(r.device)} serves ${h.members.join(", ")}; an unrecognised voice is ${h.guest ? "a guest" : h.default_person}.`;
  } catch (err) { $("#device-result").innerHTML = `<span class="error">Could not change the household: ${esc(err.message)}</span>`; }
}

async function devicesView(view, seq = state.routeSeq) {
  view.innerHTML = `<h1>Devices</h1><p id="devices-note" role="status">Loading…</p><div id="devices"></div>`;
  if (!state.features.devices) {
    $("#devices-note").textContent = "No device on this server offers a management API (add `devices: [{use: stackchan}]`).";
    return;
  }
  let data;
  try { data = await api("/v1/devices"); }
  catch (err) {
    if (stale(seq)) return;
    $("#devices-note").textContent = `Could not load the devices: ${err.message}`;
    return;
  }
  await loadPeople();
  if (stale(seq)) return;
  $("#devices-note").textContent = `${plural(data.devices.length, "paired robot")}, ${plural(data.pending.length, "robot")} waiting with a code.`;
  const options = state.people.map((p) => `<option value="${esc(p.user)}">${esc(p.user)}</option>`).join("");
  const paired = data.devices.map((d, i) => {
    const label = deviceLabel(d);
    const status = d.state === "revoked" ? `<span class="badge revoked">revoked</span>`
      : `<span class="badge ${d.online ? "online" : "offline"}">${d.online ? "online" : "offline"}</span>`;
    const actions = d.state === "revoked" ? "" : `
      <form class="row rename" data-device="${esc(d.device_id)}">
        <label class="vh" for="rename-${i}">New name for ${esc(label)}</label>
        <input id="rename-${i}" type="text" maxlength="64" value="${esc(d.name || "")}" size="10">
        <button type="submit" class="secondary" aria-label="Rename ${esc(label)}">Rename</button>
        <button type="button" class="danger" data-revoke="${esc(d.device_id)}" aria-label="Revoke ${esc(label)}">Revoke</button>
      </form>`;
    return `<tr><td data-label="Robot"><strong>${esc(d.name || "unnamed")}</strong><br><code>${esc(d.device_id)}</code></td>
      <td data-label="Household">${householdCell(d, i)}</td>
      <td data-label="Status">${status}<br><span class="small">last seen ${timeHtml(d.last_seen)}</span></td>
      <td data-label="Firmware">${esc(d.firmware.version || "unknown")}${d.firmware.application ? `<br><span class="small muted">${esc(d.firmware.application)}</span>` : ""}</td>
      <td data-label="Board">${esc(d.firmware.board || "unknown")}</td>
      <td data-label="Actions">${actions}</td></tr>`;
  }).join("");
  const pending = data.pending.map((p, i) => `<tr>
      <td data-label="Code"><strong class="code">${esc(p.code)}</strong></td>
      <td data-label="Robot"><code>${esc(p.device_id)}</code>${p.repair_of ? `<br><span class="small">re-pair of ${esc(p.repair_of)}</span>` : ""}
        <br><span class="small muted">${esc(p.firmware.board || "")} ${esc(p.firmware.version || "")}</span></td>
      <td data-label="Asked">${timeHtml(p.requested_at)}<br><span class="small muted">expires ${timeHtml(p.expires_at)}</span></td>
      <td data-label="Pair to…"><form class="row pair" data-code="${esc(p.code)}">
        <label for="pair-user-${i}">Pair code ${esc(p.code)} to</label>
        <select id="pair-user-${i}" required><option value="">choose a person…</option>${options}</select>
        <label for="pair-name-${i}">Name (optional)</label>
        <input id="pair-name-${i}" type="text" maxlength="64" size="8">
        <button type="submit" aria-label="Pair code ${esc(p.code)}">Pair</button></form></td></tr>`).join("");
  $("#devices").innerHTML = `
    <h2>Paired robots</h2>
    <table class="cards"><thead><tr><th scope="col">Robot</th><th scope="col">Household</th><th scope="col">Status</th>
      <th scope="col">Firmware</th><th scope="col">Board</th><th scope="col">Actions</th></tr></thead>
      <tbody>${paired || `<tr><td colspan="6" class="empty-cell">No robot is paired yet.</td></tr>`}</tbody></table>
    <h2>Waiting to be paired</h2>
    <p class="muted small">A robot that is not paired shows a six-digit code on its screen. Pair that code to a person.</p>
    <table class="cards"><thead><tr><th scope="col">Code</th><th scope="col">Robot</th><th scope="col">Asked</th>
      <th scope="col">Pair to…</th></tr></thead>
      <tbody>${pending || `<tr><td colspan="4" class="empty-cell">No robot is waiting.</td></tr>`}</tbody></table>
    <p id="device-result" role="status"></p>`;
  for (const form of $$("form.pair", view)) {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const user = $("select", form).value; const name = $("input", form).value.trim() || null;
      try {
        const r = await api("/v1/devices/pair", { method: "POST", json: { code: form.dataset.code, user, name } });
        await devicesView(view);
        $("#device-result").textContent = `Paired ${deviceLabel(r.device)} to ${r.device.user}.`;
      } catch (err) { $("#device-result").innerHTML = `<span class="error">Could not pair: ${esc(err.message)}</span>`; }
    });
  }
  for (const form of $$("form.rename", view)) {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const r = await api(`/v1/devices/${enc(form.dataset.device)}`, { method: "PATCH", json: { name: $("input", form).value.trim() || null } });
        await devicesView(view);
        $("#device-result").textContent = `Renamed to ${r.device.name || "(no name)"}.`;
      } catch (err) { $("#device-result").innerHTML = `<span class="error">Could not rename: ${esc(err.message)}</span>`; }
    });
  }
  for (const form of $$("form.household-default", view)) {
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      changeHousehold(view, form.dataset.device, { default_person: $("select", form).value || null }, "Changed");
    });
  }
  for (const form of $$("form.household-add", view)) {
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      changeHousehold(view, form.dataset.device, { add: [$("select", form).value] }, "Added");
    });
  }
  for (const b of $$("button[data-remove-member]", view)) {
    b.addEventListener("click", () => changeHousehold(view, b.dataset.device, { remove: [b.dataset.removeMember] }, "Removed"));
  }
  for (const b of $$("button[data-revoke]", view)) {
    b.addEventListener("click", async () => {
      if (!window.confirm(`Revoke ${b.dataset.revoke}? It will be refused until it is paired again.`)) return;
      try {
        await api(`/v1/devices/${enc(b.dataset.revoke)}/revoke`, { method: "POST" });
        await devicesView(view);
        $("#device-result").textContent = `Revoked ${b.dataset.revoke}.`;
      } catch (err) { $("#device-result").innerHTML = `<span class="error">Could not revoke: ${esc(err.message)}</span>`; }
    });
  }
}

// ---------------------------------------------------------------- turns -------------
function openEvents() {
  if (state.events) state.events.close();
  const url = isAdmin() ? "/v1/turns/events?limit=50" : `/v1/users/${enc(state.session.user)}/turns/events?limit=50`;
  const es = new EventSource(url);
  es.addEventListener("turn", (e) => {
    const turn = JSON.parse(e.data);
    if (state.turns.has(turn.turn_id)) return;
    state.turns.set(turn.turn_id, turn);
    while (state.turns.size > MAX_TURNS) state.turns.delete(state.turns.keys().next().value);
    for (const list of $$(".turn-list")) addTurnCard(list, turn);
    const summary = $("#person-summary");
    if (summary && summary.dataset.user === turn.user) refreshSummary({ user: turn.user });
  });
  es.onopen = () => { for (const s of $$(".stream-state")) s.textContent = "Live: new turns appear here as they happen."; };
  es.onerror = () => { for (const s of $$(".stream-state")) s.textContent = "Reconnecting to the live feed…"; };
  state.events = es;
}

function turnCardHtml(t) {
  const id = `turn-${esc(t.turn_id)}`;
  const mems = t.memories.length
    ? `<ul class="plain">${t.memories.map((m) => `<li><span lang="ja">${esc(m.text)}</span> <span class="muted small">(${esc(m.kind)}, score ${m.score.toFixed(3)})</span></li>`).join("")}</ul>`
    : `<p class="muted small">none</p>`;
  const profile = t.profile === null || t.profile === undefined
    ? `<p class="muted small">this server keeps no profile</p>`
    : t.profile.length ? `<ul class="plain">${t.profile.map((f) => `<li><span class="badge profile">${esc(f.category)}</span> <span lang="ja">${esc(f.text)}</span></li>`).join("")}</ul>`
      : `<p class="muted small">empty</p>`;
  const degraded = t.degraded.length
    ? `<div class="degraded"><strong>Degraded:</strong><ul class="plain">${t.degraded.map((d) => `<li>${esc(d)}</li>`).join("")}</ul></div>` : "";
  const device = t.device ? (t.device === "http" ? "typed (HTTP)" : `robot ${t.device}`) : "unknown";
  return `<article class="card turn" id="${id}" aria-labelledby="${id}-h" data-user="${esc(t.user)}">
    <header><h3 id="${esc(id)}-h">${esc(fmtTime(t.started_at, { seconds: true }))} <span class="muted small">${esc(state.zoneName)}</span> · ${esc(t.user)}</h3>
      <span class="badge">${esc(device)}</span>
      <span class="badge">face: ${esc(t.face)}</span>
      ${t.interrupted ? `<span class="badge superseded">interrupted</span>` : ""}
      ${t.moment ? `<span class="badge profile">spoke first: ${esc(t.moment.kind)} (${esc(t.moment.how)})</span>` : ""}
      ${speakerBadge(t.speaker)}</header>
    <dl class="grid2 kv">
      <div><dt>Heard</dt><dd lang="ja">${esc(t.transcript)}</dd></div>
      <div><dt>Replied</dt><dd lang="ja">${esc(t.reply) || `<span class="muted">(nothing)</span>`}</dd></div>
    </dl>
    <div class="grid2"><div><h4 class="small">Memories injected (${t.memories.length})</h4>${mems}</div>
      <div><h4 class="small">Profile in the prompt</h4>${profile}</div></div>
    ${degraded}
    ${ganttHtml(t)}
  </article>`;
}

// Who the voice was identified as (a household's robot): person, score, margin, reason
function speakerBadge(s) {
  if (!s) return "";
  const who = s.voice ? `voice: ${esc(s.voice)}` : "voice: unknown";
  const figures = s.score === null ? "" : ` (score ${Number(s.score).toFixed(2)}, margin ${Number(s.margin).toFixed(2)})`;
  return `<span class="badge" title="${esc(s.note || s.reason || "")}">${who}${figures}${s.voice ? "" : ` → ${esc(s.person || "a guest")}`}</span>`;
}

function addTurnCard(list, turn) {
  if (list.dataset.user && list.dataset.user !== turn.user) return;
  if (list.querySelector(`#turn-${CSS.escape(turn.turn_id)}`)) return;
  $(".empty", list)?.remove();
  list.insertAdjacentHTML("afterbegin", turnCardHtml(turn));
  const cards = $$("article.turn", list);
  for (const extra of cards.slice(30)) extra.remove();
}

function turnListHtml(user) {
  const turns = [...state.turns.values()].filter((t) => !user || t.user === user).reverse().slice(0, 30);
  return `<p class="stream-state muted small" role="status">${state.events && state.events.readyState === 1 ? "Live: new turns appear here as they happen." : "Connecting to the live feed…"}</p>
    <div class="turn-list" ${user ? `data-user="${esc(user)}"` : ""} aria-live="polite" aria-relevant="additions">
    ${turns.map(turnCardHtml).join("") || `<p class="empty muted">No turn yet. Talk to a robot, or send a text turn.</p>`}</div>`;
}

function turnsView(view) {
  view.innerHTML = `<h1>Turns, live</h1>
    <p class="muted">Each turn: what was heard and said, the face, the memories and profile the prompt carried,
    what was degraded, and its stages on a time axis scaled to that turn (times in ${esc(state.tz)}).</p>
    <h2>Everyone's recent turns</h2>
    ${turnListHtml(null)}`;
}

// ---------------------------------------------------------------- voiceprints --------
async function loadVoices(ctx) {
  try {
    const r = await api(`${ctx.base}/voices`);
    $("#voices").innerHTML = r.voiceprints.length
      ? `<ul class="plain">${r.voiceprints.map((v) => `<li>${esc(v.model_id)}: ${v.utterances} utterance(s), enrolled ${esc(fmtTime(v.enrolled_at))} (${esc(v.source)})</li>`).join("")}</ul>`
      : `<p class="muted small">No voiceprint${r.speaker_stage ? "" : " (and this server has no speaker stage: add speaker: {use: resemblyzer} to the config)"}.</p>`;
  } catch (err) { $("#voices").innerHTML = `<span class="error">${esc(err.message)}</span>`; }
}

function base64Of(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

// Posts WAV files (bytes) to the enrolment route; names say which one each refusal is about
async function postEnrolment(ctx, wavs, names) {
  try {
    const r = await api(`${ctx.base}/voices`, { method: "POST", json: { wavs: wavs.map(base64Of) } });
    const refused = r.refused.map((x) => `${names[x.utterance]}: ${x.reason}`).join(", ");
    $("#enrol-report").textContent = `Enrolled from ${r.used} recording(s)${refused ? `; not used: ${refused}` : ""}.`;
  } catch (err) { $("#enrol-report").innerHTML = `<span class="error">Could not enrol: ${esc(err.message)}</span>`; }
  loadVoices(ctx);
}

async function enrolVoice(ctx) {
  const files = [...$("#enrol-files").files];
  $("#enrol-report").textContent = `Enrolling from ${files.length} recording(s)…`;
  const wavs = await Promise.all(files.map(async (f) => new Uint8Array(await f.arrayBuffer())));
  await postEnrolment(ctx, wavs, files.map((f) => f.name));
}

// ---------------------------------------------------------------- recording in the browser
// The person reads a few sentences aloud, one recording each; the microphone is opened only
// after they agreed to what is kept (the same text as for uploads). Each recording is
// encoded here as a 16-bit PCM WAV and posted to the same route as uploaded files.
const RECORD_SENTENCES = [
  "今日はいい天気ですね。散歩に行きたいな。",
  "来週の土曜日に友達と箱根に行く予定です。",
  "朝ごはんはパンとコーヒーにしました。",
];
const MIN_RECORD_S = 2;

function wavFile(chunks, rate) {
  const n = chunks.reduce((sum, c) => sum + c.length, 0);
  const view = new DataView(new ArrayBuffer(44 + 2 * n));
  const ascii = (at, text) => { for (let i = 0; i < text.length; i++) view.setUint8(at + i, text.charCodeAt(i)); };
  ascii(0, "RIFF"); view.setUint32(4, 36 + 2 * n, true); ascii(8, "WAVE");
  ascii(12, "fmt "); view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
  view.setUint32(24, rate, true); view.setUint32(28, 2 * rate, true); view.setUint16(32, 2, true);
  view.setUint16(34, 16, true); ascii(36, "data"); view.setUint32(40, 2 * n, true);
  let at = 44;
  for (const chunk of chunks) {
    for (const x of chunk) { view.setInt16(at, Math.round(Math.max(-1, Math.min(1, x)) * 0x7fff), true); at += 2; }
  }
  return new Uint8Array(view.buffer);
}

function recorderHtml(user) {
  return `<div id="recorder" hidden>
      <p id="record-consent">Recording ${esc(user)}'s voice here keeps a voiceprint of it on this server, not the
        recording: it lets a household's robot tell ${esc(user)}'s voice from the others, and it is exported and
        erased with ${esc(user)}. Only ${esc(user)} should speak, alone, in a quiet room.</p>
      <div class="row" id="record-ask">
        <button type="button" id="record-agree">I agree: record ${esc(user)}'s voice</button>
        <button type="button" class="secondary" id="record-cancel">Cancel</button>
      </div>
      <div id="record-take" hidden>
        <p>Read aloud, then press “Next”: <strong id="record-sentence" lang="ja"></strong></p>
        <p class="small" id="record-progress" role="status" data-seconds="0">Recording… 0.0 s</p>
        <div class="row">
          <button type="button" id="record-next">Next</button>
          <button type="button" class="secondary" id="record-abort">Stop without enrolling</button>
        </div>
      </div>
    </div>`;
}

function setupRecorder(ctx) {
  const state = { stream: null, audio: null, clips: [], chunks: [], rate: 0, seconds: 0, early: false };
  const shown = (id, on) => { $(id).hidden = !on; };
  const stop = () => {
    if (state.stream) state.stream.getTracks().forEach((t) => t.stop());
    if (state.audio) state.audio.close();
    state.stream = state.audio = null;
  };
  const reset = () => { stop(); shown("#recorder", false); shown("#record-take", false); shown("#record-ask", true); };
  const showSentence = () => {
    const i = state.clips.length;
    $("#record-sentence").textContent = RECORD_SENTENCES[i];
    $("#record-next").textContent = i + 1 < RECORD_SENTENCES.length ? `Next (${i + 1} of ${RECORD_SENTENCES.length})` : "Finish and enrol";
    state.chunks = []; state.seconds = 0; state.early = false;
    const progress = $("#record-progress");   // a new take: nothing of the last one shows
    progress.dataset.seconds = "0.0";
    progress.textContent = "Recording… 0.0 s";
  };
  $("#record-voice").addEventListener("click", () => { shown("#recorder", true); $("#record-agree").focus(); });
  $("#record-cancel").addEventListener("click", reset);
  $("#record-abort").addEventListener("click", () => { reset(); $("#enrol-report").textContent = "Recording stopped; nothing was enrolled."; });
  $("#record-agree").addEventListener("click", async () => {
    try {
      state.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
    } catch (err) { $("#enrol-report").innerHTML = `<span class="error">No microphone: ${esc(err.message)}</span>`; reset(); return; }
    state.audio = new AudioContext();
    state.rate = state.audio.sampleRate;
    const source = state.audio.createMediaStreamSource(state.stream);
    const processor = state.audio.createScriptProcessor(4096, 1, 1);
    const mute = state.audio.createGain();
    mute.gain.value = 0;
    processor.onaudioprocess = (e) => {
      state.chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
      state.seconds += e.inputBuffer.length / state.rate;
      const progress = $("#record-progress");
      progress.dataset.seconds = state.seconds.toFixed(1);
      progress.textContent = `Recording… ${state.seconds.toFixed(1)} s${state.seconds >= MIN_RECORD_S ? " (enough: press Next when the sentence is read)" : state.early ? `: keep reading (at least ${MIN_RECORD_S} s)` : ""}`;
    };
    source.connect(processor); processor.connect(mute); mute.connect(state.audio.destination);
    state.clips = [];
    showSentence();
    shown("#record-ask", false); shown("#record-take", true);
  });
  $("#record-next").addEventListener("click", async () => {
    if (state.seconds < MIN_RECORD_S) {   // too little of this sentence to enrol from
      state.early = true;
      $("#record-progress").textContent = `Recording… ${state.seconds.toFixed(1)} s: keep reading (at least ${MIN_RECORD_S} s)`;
      return;
    }
    state.clips.push(wavFile(state.chunks, state.rate));
    if (state.clips.length < RECORD_SENTENCES.length) { showSentence(); return; }
    const clips = state.clips;
    reset();
    $("#enrol-report").textContent = `Enrolling from ${clips.length} recording(s)…`;
    await postEnrolment(ctx, clips, clips.map((_, i) => `recording ${i + 1}`));
  });
}

async function eraseVoice(ctx) {
  if (!confirm(`Erase ${ctx.user}'s voiceprint?`)) return;
  try {
    const r = await api(`${ctx.base}/voices`, { method: "DELETE" });
    $("#enrol-report").textContent = `Erased ${r.erased} voiceprint(s).`;
  } catch (err) { $("#enrol-report").innerHTML = `<span class="error">${esc(err.message)}</span>`; }
  loadVoices(ctx);
}

// ---------------------------------------------------------------- a person ----------
async function personView(view, user, seq) {
  view.innerHTML = `<h1>${esc(user)}</h1><p role="status" id="person-note">Loading…</p>`;
  let person;
  try { person = (await api(`/v1/users/${enc(user)}`)).person; }
  catch (err) {
    if (stale(seq)) return;
    $("#person-note").innerHTML = err.status === 404
      ? `omoide knows no person “${esc(user)}”. Check the id, or <a href="#/people">add them</a>.`
      : `<span class="error">${esc(err.message)}</span>`;
    return;
  }
  if (stale(seq)) return;
  const base = `/v1/users/${enc(user)}`;
  view.innerHTML = `
    ${isAdmin() ? `<p class="small"><a href="#/people">← People</a></p>` : ""}
    <h1>${esc(user)}</h1>
    <dl class="grid2 kv" id="person-summary" data-user="${esc(user)}"></dl>
    <section aria-labelledby="profile-title"><h2 id="profile-title">Profile</h2><div id="profile">Loading…</div></section>
    <section aria-labelledby="memories-title"><h2 id="memories-title">Memories</h2>
      <form id="search" class="row" role="search" aria-label="Search memories">
        <label for="q">Search</label>
        <input id="q" type="search" placeholder="e.g. 箱根, 来週, ペット" autocomplete="off">
        <label for="min-relevance">Minimum relevance</label>
        <input id="min-relevance" type="number" min="0" max="1" step="0.05" value="0.5" style="width:5.5rem"
          aria-describedby="relevance-help">
        <button type="submit">Search</button>
        <button type="button" class="secondary" id="clear-search">Show all</button>
      </form>
      <p class="muted small" id="relevance-help">A memory is relevant when it has every word of the search,
        falls in a date it names (来週, 5月3日), or means something close to it: “meaning +3 sd” is three
        standard deviations above what unrelated sentences score. 0.5 lists those; lower it to see more.</p>
      <p id="memory-note" role="status" class="muted"></p>
      <div id="memories"></div>
      <h3>Import and export</h3>
      <form id="import" class="row">
        <label for="import-file">Import a <code>.jsonl</code> export</label>
        <input id="import-file" type="file" accept=".jsonl,.json,application/x-ndjson,application/json" required>
        <label class="small"><input type="checkbox" id="skip-invalid"> import the valid lines even if some are invalid</label>
        <button type="submit">Import</button>
        <a class="button secondary" id="export" href="${base}/memories/export" download>Export ${esc(user)}'s memories (.jsonl)</a>
      </form>
      <div id="import-report" role="status"></div>
    </section>
    <section aria-labelledby="voice-title"><h2 id="voice-title">Voice</h2>
      <p class="muted small">A voiceprint lets a household's robot tell ${esc(user)}'s voice from the others, so
        their turns use their memory. It is kept privately on this server (no recording is kept), and exported
        and erased with ${esc(user)}. Upload a few WAV recordings of ${esc(user)} speaking alone, 3-10 s each.</p>
      <div id="voices" role="status">Loading…</div>
      <form id="enrol" class="row">
        <label for="enrol-files">Recordings (.wav)</label>
        <input id="enrol-files" type="file" accept=".wav,audio/wav" multiple required>
        <button type="submit">Enrol ${esc(user)}'s voice</button>
        <a class="button secondary" href="${base}/voices/export" download>Export the voiceprint (.json)</a>
        <button type="button" class="secondary" id="erase-voice">Erase the voiceprint</button>
      </form>
      <div class="row"><button type="button" class="secondary" id="record-voice">Record ${esc(user)}'s voice here instead</button></div>
      ${recorderHtml(user)}
      <div id="enrol-report" role="status"></div></section>
    <section aria-labelledby="extract-title"><h2 id="extract-title">Extraction</h2>
      <p class="muted small">Exchanges are distilled into memories after a pause${isAdmin() ? "; extract now to see what it stores" : ""}.</p>
      ${isAdmin() ? `<div class="row"><button type="button" id="extract">Extract now</button></div>
      <div id="extract-report" role="status"></div>` : ""}
      <h3>Quarantined exchanges</h3><div id="quarantine">Loading…</div></section>
    <section aria-labelledby="moments-title"><h2 id="moments-title">Moments</h2>
      <p class="muted small">What omoide will say first, from ${esc(user)}'s memories: the day before and the
        morning of a plan, how it went, a birthday, a reminder asked for. Each is said once.</p>
      <div id="moments">Loading…</div></section>
    <section aria-labelledby="turns-title"><h2 id="turns-title">Turns, live</h2>${turnListHtml(user)}</section>`;
  renderSummary(person);
  const ctx = { user, base, memories: [] };
  loadProfile(ctx);
  loadMoments(ctx);
  loadVoices(ctx);
  $("#enrol").addEventListener("submit", (e) => { e.preventDefault(); enrolVoice(ctx); });
  $("#erase-voice").addEventListener("click", () => eraseVoice(ctx));
  setupRecorder(ctx);
  await loadMemories(ctx);
  restorePendingUndo(ctx);
  $("#search").addEventListener("submit", (e) => { e.preventDefault(); loadMemories(ctx); });
  $("#clear-search").addEventListener("click", () => { $("#q").value = ""; loadMemories(ctx); });
  $("#import").addEventListener("submit", (e) => { e.preventDefault(); importFile(ctx); });
  if (isAdmin()) $("#extract").addEventListener("click", () => extractNow(ctx));
  loadQuarantine(ctx);
}

async function loadMoments(ctx) {
  const box = $("#moments");
  let m;
  try { m = await api(`${ctx.base}/moments`); }
  catch (err) {
    box.innerHTML = `<p class="muted">${err.status === 503 ? "Moments are not running on this server." : `<span class="error">${esc(err.message)}</span>`}</p>`;
    return;
  }
  const rows = m.upcoming.map((x) => `<li><span class="badge">${esc(x.kind)}</span> <span lang="ja">${esc(x.topic)}</span>
      <span class="muted small">${timeHtml(x.starts)} – ${timeHtml(x.ends)}${x.open ? " (now)" : ""}</span>
      <button type="button" class="secondary" data-cancel="${esc(x.key)}">Cancel</button>${x.repeats ? `
      <button type="button" class="secondary" data-stop="${esc(x.key)}">Stop for good</button>` : ""}</li>`).join("");
  const said = m.said.slice(0, 5).map((e) => `<li><span class="badge">${esc(e.state)}</span> ${esc(e.kind)} ${timeHtml(e.at)}
      <span lang="ja">${esc(e.text)}</span></li>`).join("");
  const whose = { own: `${ctx.user}'s own`, config: "set in the config", household: "the household's" }[m.quiet_hours_from] || "";
  box.innerHTML = `<p><label><input type="checkbox" id="moments-off" ${m.off ? "checked" : ""} ${m.off_in_config ? "disabled" : ""}>
      Never speak first to ${esc(ctx.user)}</label> <span class="muted small">at most ${m.max_per_day} a day</span></p>
    <form id="moments-quiet" class="row">
      <label for="quiet-span">Quiet hours</label>
      <input id="quiet-span" value="${esc(m.quiet_hours)}" required pattern="\\s*\\d{1,2}:\\d{2}\\s*-\\s*\\d{1,2}:\\d{2}\\s*" size="11"
        aria-describedby="quiet-whose" title="HH:MM-HH:MM, e.g. 21:00-06:30">
      <button type="submit" class="secondary">Save</button>
      ${m.quiet_hours_from === "own" ? `<button type="button" class="secondary" id="quiet-default">Use the default</button>` : ""}
      <span id="quiet-whose" class="muted small">${esc(whose)}</span></form>
    <h3 class="small">To come</h3>${rows ? `<ul class="plain">${rows}</ul>` : `<p class="muted small">nothing planned</p>`}
    <h3 class="small">Said or cancelled lately</h3>${said ? `<ul class="plain">${said}</ul>` : `<p class="muted small">none</p>`}
    <p id="moments-note" role="status" class="muted small"></p>`;
  $("#moments-off").addEventListener("change", async (e) => {
    await api(`${ctx.base}/moments/switch`, { method: "PUT", json: { off: e.target.checked } });
    loadMoments(ctx);
  });
  const setQuiet = async (span) => {
    try { await api(`${ctx.base}/moments/quiet_hours`, { method: "PUT", json: { quiet_hours: span } }); loadMoments(ctx); }
    catch (err) { $("#moments-note").textContent = err.message; }
  };
  $("#moments-quiet").addEventListener("submit", (e) => { e.preventDefault(); setQuiet($("#quiet-span").value); });
  $("#quiet-default")?.addEventListener("click", () => setQuiet(null));
  for (const b of $$("[data-cancel]", box)) {
    b.addEventListener("click", async () => {
      await api(`${ctx.base}/moments/${enc(b.dataset.cancel)}/cancel`, { method: "POST" });
      loadMoments(ctx);
    });
  }
  for (const b of $$("[data-stop]", box)) {
    b.addEventListener("click", async () => {
      await api(`${ctx.base}/moments/${enc(b.dataset.stop)}/cancel?every=true`, { method: "POST" });
      loadMoments(ctx);
    });
  }
}

function renderSummary(p) {
  const q = p.quarantined === null || p.quarantined === undefined ? "not tracked" : p.quarantined;
  $("#person-summary").innerHTML = `
    <div><dt>Memories</dt><dd>${p.memory_unavailable ? `<strong>unavailable</strong>: ${esc(p.memory_unavailable)}` : `${p.memories.live} live, ${p.memories.superseded} superseded`}</dd></div>
    <div><dt>Last turn</dt><dd>${timeHtml(p.last_turn)} (${esc(state.zoneName || state.tz)})</dd></div>
    <div><dt>Pending extraction</dt><dd>${plural(p.pending, "exchange")}</dd></div>
    <div><dt>Quarantined</dt><dd>${esc(q)}</dd></div>`;
}

async function refreshSummary(ctx) {
  try { renderSummary((await api(`/v1/users/${enc(ctx.user)}`)).person); } catch { /* shown on next load */ }
}

// -- memories
function memoryCardHtml(m, ctx, { history = [], scored = false } = {}) {
  const dates = (m.event_dates || []).length ? `<span>about ${m.event_dates.map(esc).join(", ")}</span>` : "";
  const isProfile = String(m.kind || "").startsWith("profile");
  const sources = m.source_exchange_ids || [];
  const successor = m.superseded_by ? ctx.memories.find((x) => x.id === m.superseded_by) : null;
  let relevance = "";
  if (scored) {
    const ev = m.evidence || {};
    const why = [];
    if ((ev.words || []).length) why.push(`words: ${ev.words.map(esc).join(", ")} (${ev.words.length} of ${ev.words_asked})`);
    if (ev.date) why.push(`date: ${esc(ev.date)}`);
    if (ev.meaning_sd !== undefined) why.push(`meaning: ${ev.meaning_sd >= 0 ? "+" : ""}${Number(ev.meaning_sd).toFixed(1)} sd`);
    relevance = `<p class="evidence"><span class="score">relevance ${Number(m.relevance ?? m.score).toFixed(2)}</span> — ${why.join(" · ")}</p>`;
  }
  return `<article class="card memory" data-id="${esc(m.id)}">
    <p class="text" lang="ja">${esc(m.text)}</p>
    <div class="meta"><span>kind: ${esc(m.kind)}</span>${isProfile ? `<span class="badge profile">profile</span>` : ""}
      <span>said ${timeHtml(m.created_at)}</span>${dates}
      ${m.superseded_by ? `<span class="badge superseded">superseded</span>` : ""}</div>
    ${successor ? `<p class="small muted">replaced by <span lang="ja">“${esc(successor.text)}”</span></p>` : ""}
    ${relevance}
    ${sources.length ? `<details data-sources="${esc(sources.join(","))}"><summary>What was said (${plural(sources.length, "exchange")})</summary><div class="said">Loading…</div></details>` : ""}
    ${history.length ? `<details><summary>Earlier versions (${history.length})</summary><ul class="history">${history.map((h) =>
      `<li><span lang="ja">${esc(h.text)}</span> <span class="small">(said ${timeHtml(h.created_at)})</span></li>`).join("")}</ul></details>` : ""}
    <div class="actions"><button type="button" class="danger" data-forget="${esc(m.id)}"
      aria-label="Forget “${esc(short(m.text))}”">Forget</button></div>
  </article>`;
}

async function loadMemories(ctx) {
  const q = $("#q").value.trim();
  const min = Math.min(1, Math.max(0, Number($("#min-relevance").value) || 0));
  const list = $("#memories");
  try {
    ctx.memories = (await api(`${ctx.base}/memories`)).memories;
    if (q) {
      const found = (await api(`${ctx.base}/memories?q=${enc(q)}&min_relevance=${min}&limit=100`)).memories;
      $("#memory-note").textContent = found.length
        ? `${plural(found.length, "memory", "memories")} of ${ctx.memories.length} relevant to “${q}” (relevance ≥ ${min.toFixed(2)}).`
        : `Nothing relevant to “${q}” among ${plural(ctx.memories.length, "memory", "memories")} (relevance ≥ ${min.toFixed(2)}).`;
      list.innerHTML = found.map((m) => memoryCardHtml(m, ctx, { scored: true })).join("");
    } else {
      const older = new Map();
      for (const m of ctx.memories) if (m.superseded_by) {
        if (!older.has(m.superseded_by)) older.set(m.superseded_by, []);
        older.get(m.superseded_by).push(m);
      }
      const ids = new Set(ctx.memories.map((m) => m.id));
      const shown = ctx.memories.filter((m) => !m.superseded_by || !ids.has(m.superseded_by)).reverse();
      const live = ctx.memories.filter((m) => !m.superseded_by).length;
      $("#memory-note").textContent = ctx.memories.length
        ? `${plural(live, "memory", "memories")}, newest first${ctx.memories.length > live ? `; ${ctx.memories.length - live} superseded (under “Earlier versions”)` : ""}.`
        : "No memories yet.";
      list.innerHTML = shown.map((m) => memoryCardHtml(m, ctx, { history: older.get(m.id) || [] })).join("");
    }
  } catch (err) { $("#memory-note").innerHTML = `<span class="error">Could not load the memories: ${esc(err.message)}</span>`; return; }
  for (const b of $$("button[data-forget]", list)) b.addEventListener("click", () => forget(ctx, b.dataset.forget));
  for (const d of $$("details[data-sources]", list)) d.addEventListener("toggle", () => loadSources(ctx, d), { once: true });
}

async function loadSources(ctx, details) {
  const box = $(".said", details);
  try {
    const { exchanges } = await api(`${ctx.base}/exchanges?ids=${enc(details.dataset.sources)}`);
    box.innerHTML = exchanges.length ? exchanges.map((e) => `<p>${timeHtml(e.at)}<br>
      ${e.user_text ? `<strong>${esc(ctx.user)}:</strong> <span lang="ja">${esc(e.user_text)}</span><br>` : ""}
      <strong>omoide${e.user_text ? "" : " (spoke first)"}:</strong> <span lang="ja">${esc(e.assistant_text)}</span></p>`).join("")
      : `<p class="muted">The exchanges are no longer in the journal.</p>`;
  } catch (err) { box.innerHTML = `<span class="error">${esc(err.message)}</span>`; }
}

// -- forget with undo
async function forget(ctx, id) {
  try {
    const r = await api(`${ctx.base}/memories/${enc(id)}`, { method: "DELETE" });
    await loadMemories(ctx);
    loadProfile(ctx);  // the memory may have been a profile fact
    refreshSummary(ctx);
    if (r.undo) showUndo(ctx, r.undo);
    else $("#memory-note").textContent = "Forgotten.";
  } catch (err) { $("#memory-note").innerHTML = `<span class="error">Could not forget: ${esc(err.message)}</span>`; }
}

function showUndo(ctx, ticket) {
  if (state.undoTimers.has(ticket.ticket)) return;
  const bar = document.createElement("div");
  bar.className = "bar";
  bar.innerHTML = `<span>Forgot <span lang="ja">“${esc(short(ticket.text, 30))}”</span>.</span>
    <span class="left"></span>
    <button type="button" aria-label="Undo forgetting “${esc(short(ticket.text))}”">Undo</button>`;
  $("#undo").append(bar);
  const left = $(".left", bar);
  const tick = () => {
    const s = Math.ceil(ticket.expires_at - Date.now() / 1000);
    if (s <= 0) { clearInterval(timer); state.undoTimers.delete(ticket.ticket); bar.remove(); return; }
    left.textContent = `${s} s to undo`;
  };
  const timer = setInterval(tick, 1000); tick();
  state.undoTimers.set(ticket.ticket, timer);
  $("button", bar).addEventListener("click", async () => {
    clearInterval(timer); state.undoTimers.delete(ticket.ticket);
    try {
      const r = await api(`${ctx.base}/forgotten/${enc(ticket.ticket)}/restore`, { method: "POST" });
      bar.remove();
      if ($("#memories")) { await loadMemories(ctx); loadProfile(ctx); refreshSummary(ctx); }
      const note = $("#memory-note");
      if (note) note.textContent = r.outcome === "restored" ? `Restored “${short(r.text)}”.` : `“${short(r.text)}” is already back.`;
    } catch (err) { bar.innerHTML = `<span class="error-on-dark">Could not undo: ${esc(err.message)}</span>`; setTimeout(() => bar.remove(), 5000); }
  });
}

async function restorePendingUndo(ctx) {
  try {
    const { forgotten } = await api(`${ctx.base}/forgotten`);
    for (const t of forgotten) showUndo(ctx, t);
  } catch { /* no undo on this server */ }
}

// -- import / extract
async function importFile(ctx) {
  const file = $("#import-file").files[0];
  const out = $("#import-report");
  if (!file) { out.textContent = "Choose a file first."; return; }
  const skip = $("#skip-invalid").checked ? "?skip_invalid=true" : "";
  out.textContent = `Importing ${file.name}…`;
  try {
    const r = await api(`${ctx.base}/memories/import${skip}`, { method: "POST", body: await file.text(),
      headers: { "content-type": "application/x-ndjson" } });
    out.innerHTML = `<div class="panel"><h3>Import of ${esc(file.name)}</h3>
      <p><strong>${r.imported}</strong> imported, <strong>${r.skipped}</strong> skipped (already there), <strong>${r.invalid}</strong> invalid.</p>
      ${(r.problems || []).length ? `<ul class="plain small">${r.problems.map((p) => `<li>line ${esc(p.line)}: ${esc(p.message)}</li>`).join("")}</ul>` : ""}</div>`;
    await loadMemories(ctx); refreshSummary(ctx);
  } catch (err) {
    out.innerHTML = `<div class="panel"><h3>Import of ${esc(file.name)}</h3><p class="error">Nothing was imported: ${esc(err.message)}</p></div>`;
  }
}

async function extractNow(ctx) {
  const out = $("#extract-report");
  const before = new Map(ctx.memories.map((m) => [m.id, m]));
  out.textContent = "Extracting…";
  try {
    const r = await api("/v1/memory/extract", { method: "POST", json: { user: ctx.user } });
    const superseded = (r.superseded || []).map((id) => before.get(id)?.text || id);
    const quarantined = r.quarantined || [];
    out.innerHTML = `<div class="panel"><h3>Extraction: ${plural(r.exchanges, "exchange")} read</h3>
      <p><strong>Stored ${r.stored.length}</strong>${r.stored.length ? ":" : "."}</p>
      ${r.stored.length ? `<ul class="plain">${r.stored.map((m) => `<li lang="ja">${esc(m.text)} <span class="muted small">(${esc(m.kind)})</span></li>`).join("")}</ul>` : ""}
      <p><strong>Merged ${r.skipped_duplicates}</strong> (already known: not stored again).</p>
      <p><strong>Superseded ${superseded.length}</strong>${superseded.length ? ":" : "."}</p>
      ${superseded.length ? `<ul class="plain">${superseded.map((t) => `<li lang="ja">${esc(t)}</li>`).join("")}</ul>` : ""}
      ${quarantined.length ? `<p><strong>Quarantined ${quarantined.length}</strong> (see below).</p>` : ""}
      ${r.pending ? `<p class="error">Some exchanges are still pending${r.error ? `: ${esc(r.error)}` : ""}.</p>` : ""}</div>`;
    await loadMemories(ctx); refreshSummary(ctx); loadQuarantine(ctx); loadProfile(ctx);
  } catch (err) { out.innerHTML = `<p class="error">Extraction failed: ${esc(err.message)}</p>`; }
}

async function loadQuarantine(ctx) {
  const box = $("#quarantine");
  if (!box) return;
  if (!state.features.quarantine) { box.innerHTML = `<p class="muted">This server keeps no quarantine.</p>`; return; }
  let letters;
  try { letters = (await api(`/v1/memory/quarantine?user=${enc(ctx.user)}`)).quarantined; }
  catch (err) {
    box.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    return;
  }
  box.innerHTML = letters.length ? `<p class="muted small">Extraction failed on these exchanges too often; they wait here instead of blocking the rest.</p>
    <ul class="plain">${letters.map((d, i) => `<li class="card"><p lang="ja">${esc(d.user_text)}</p>
      <p class="meta"><span>${timeHtml(d.at)}</span><span>${plural(d.attempts, "attempt")}</span></p>
      <p class="small">Reason: ${esc(d.reason)}</p>
      ${isAdmin() ? `<div class="actions"><button type="button" data-retry="${esc(d.exchange_id)}" aria-label="Retry exchange ${i + 1}">Retry</button>
      <button type="button" class="danger" data-skip="${esc(d.exchange_id)}" aria-label="Skip exchange ${i + 1} for good">Skip</button></div>` : ""}</li>`).join("")}</ul>`
    : `<p class="muted">Nothing is quarantined.</p>`;
  for (const b of $$("button[data-retry], button[data-skip]", box)) {
    b.addEventListener("click", async () => {
      const retry = Boolean(b.dataset.retry);
      try {
        await api(`/v1/memory/${retry ? "retry" : "skip"}`, { method: "POST", json: { user: ctx.user, exchange_ids: [b.dataset.retry || b.dataset.skip] } });
        loadQuarantine(ctx); refreshSummary(ctx);
      } catch (err) { box.insertAdjacentHTML("afterbegin", `<p class="error">${esc(err.message)}</p>`); }
    });
  }
}

// -- profile
const CATEGORIES = ["health", "family", "pet", "basics", "work", "like", "habit", "person"];

async function loadProfile(ctx) {
  const box = $("#profile");
  if (!box) return;
  if (!state.features.profile) { box.innerHTML = `<p class="muted">This server keeps no profile.</p>`; return; }
  let profile;
  try { profile = await api(`${ctx.base}/profile`); }
  catch (err) { box.innerHTML = `<p class="error">${esc(err.message)}</p>`; return; }
  const facts = profile.facts || [];
  box.innerHTML = `<p class="muted small">What omoide always keeps in mind about ${esc(ctx.user)}
      (${profile.chars ?? 0} of ${profile.budget_chars ?? "?"} characters).</p>
    ${facts.length ? `<ul class="plain" id="profile-facts">${facts.map((f) => `<li class="card"><span class="badge profile">${esc(f.label || f.category)}</span>
      <span lang="ja">${esc(f.text)}</span>
      <div class="actions"><button type="button" class="secondary" data-unprofile="${esc(f.id)}" aria-label="Take out of profile: “${esc(short(f.text))}”">Take out of profile</button>
      <button type="button" class="danger" data-forget-fact="${esc(f.id)}" aria-label="Forget profile fact “${esc(short(f.text))}”">Forget</button></div></li>`).join("")}</ul>`
      : `<p>The profile is empty.</p>`}
    <form id="profile-add" class="row">
      <label for="profile-text">New profile fact</label>
      <input id="profile-text" type="text" maxlength="200" required lang="ja" placeholder="あなたはそばアレルギーがある。">
      <label for="profile-category">Category</label>
      <select id="profile-category"><option value="">decide for me</option>${CATEGORIES.map((c) => `<option>${c}</option>`).join("")}</select>
      <button type="submit">Add to profile</button>
    </form>
    <p id="profile-note" role="status"></p>`;
  $("#profile-add").addEventListener("submit", async (e) => {
    e.preventDefault();
    const json = { text: $("#profile-text").value.trim() };
    if ($("#profile-category").value) json.category = $("#profile-category").value;
    try {
      await api(`${ctx.base}/profile`, { method: "POST", json });
      await loadProfile(ctx); await loadMemories(ctx); refreshSummary(ctx);
      $("#profile-note").textContent = "Added to the profile.";
    } catch (err) { $("#profile-note").innerHTML = `<span class="error">Could not add: ${esc(err.message)}</span>`; }
  });
  for (const b of $$("button[data-unprofile]", box)) {
    b.addEventListener("click", async () => {
      try {
        await api(`${ctx.base}/profile/${enc(b.dataset.unprofile)}?keep_memory=true`, { method: "DELETE" });
        await loadProfile(ctx); await loadMemories(ctx);
        $("#profile-note").textContent = "Taken out of the profile; kept as a memory.";
      } catch (err) { $("#profile-note").innerHTML = `<span class="error">${esc(err.message)}</span>`; }
    });
  }
  for (const b of $$("button[data-forget-fact]", box)) {
    b.addEventListener("click", () => forget(ctx, b.dataset.forgetFact));
  }
}

// ---------------------------------------------------------------- boot --------------
async function boot() {
  loadHealth();
  state.healthTimer = setInterval(loadHealth, 10000);
  const session = await api("/v1/session").catch(() => ({ signed_in: false }));
  state.session = session;
  if (session.signed_in) await start(); else showSignIn();
}
boot();
