// The stages of one turn as a Gantt chart on a time axis scaled to that turn, so a text
// turn (a few ms) and a robot turn (seconds) are both legible. Every bar's name and its
// times are text in the same row: nothing needs a hover. Returns an HTML string.

const SPANS = [
  // [stage key, label, colour class, marker inside it (key, label)]
  ["asr", "speech to text", "s-asr", null],
  ["retrieve", "retrieve", "s-retrieve", null],
  ["prompt", "prompt", "s-prompt", null],
  ["chat", "chat", "s-chat", ["chat_first_token", "first token"]],
  ["tts", "speech (tts)", "s-tts", ["first_sentence_audio", "first audio"]],
];

export const KEY = [
  ["s-asr", "speech to text (asr)"], ["s-retrieve", "retrieve memories"],
  ["s-prompt", "prompt"], ["s-chat", "chat model"], ["s-tts", "speech synthesis"],
  ["s-tool", "tool call"], ["s-mark", "moment (first token, first audio, done)"],
];

const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => (
  { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

/** "0.4 ms", "12 ms", "1.25 s", "12.5 s". */
export function formatMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10000) return `${(ms / 1000).toFixed(2)} s`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A step of 1, 2 or 5 times a power of ten giving at most ``maxTicks`` intervals. */
export function niceStep(total, maxTicks = 4) {
  const raw = Math.max(total, 1e-3) / maxTicks;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

/** The turn's length: the latest moment any stage or tool reached. */
export function turnLength(turn) {
  let end = 0;
  for (const s of Object.values(turn.stages || {})) {
    end = Math.max(end, s.end_ms ?? s.start_ms ?? 0);
  }
  for (const t of turn.tools || []) end = Math.max(end, (t.start_ms || 0) + (t.duration_ms || 0));
  return end;
}

const pct = (v, total) => `${Math.min(100, Math.max(0, (v / total) * 100)).toFixed(3)}%`;

function row(label, laneHtml, value, extraClass = "") {
  return `<tr class="${extraClass}"><th scope="row">${esc(label)}</th>
    <td class="track" aria-hidden="true"><div class="lane">${laneHtml}</div></td>
    <td class="val">${esc(value)}</td></tr>`;
}

/** The chart for ``turn`` (its ``stages`` and ``tools`` as the trace gives them). */
export function ganttHtml(turn) {
  const stages = turn.stages || {};
  const total = Math.max(turnLength(turn), 0.001);
  const rows = [];
  for (const [key, label, cls, marker] of SPANS) {
    const s = stages[key];
    if (!s || s.start_ms === null || s.start_ms === undefined) continue;
    const end = s.end_ms ?? s.start_ms;
    let lane = `<span class="bar ${cls}" style="left:${pct(s.start_ms, total)};`
      + `width:${pct(end - s.start_ms, total)}"></span>`;
    let value = `${formatMs(s.start_ms)}–${formatMs(end)}`;
    if (s.start_ms === 0) value = `0–${formatMs(end)}`;
    rows.push(row(label + (s.error ? " (failed)" : ""), lane, value));
    if (marker && stages[marker[0]]) {
      const at = stages[marker[0]].end_ms ?? stages[marker[0]].start_ms;
      lane = `<span class="mark" style="left:${pct(at, total)}"></span>`;
      rows.push(row(marker[1], lane, formatMs(at), "moment"));
    }
  }
  for (const t of turn.tools || []) {
    const lane = `<span class="bar s-tool" style="left:${pct(t.start_ms, total)};`
      + `width:${pct(t.duration_ms, total)}"></span>`;
    rows.push(row(`tool ${t.name}`, lane,
      `${formatMs(t.start_ms)}–${formatMs(t.start_ms + t.duration_ms)}`));
  }
  const done = stages.done;
  if (done) {
    const at = done.end_ms ?? done.start_ms;
    rows.push(row("done", `<span class="mark" style="left:${pct(at, total)}"></span>`,
      formatMs(at), "moment"));
  }
  const step = niceStep(total);
  const ticks = [];
  for (let v = 0; v <= total + step * 1e-9; v += step) ticks.push(v);
  const axis = ticks.map((v, i) => {
    const cls = i === 0 ? "tick first" : (v / total > 0.92 ? "tick last" : "tick");
    return `<span class="${cls}" style="left:${pct(v, total)}">${esc(v === 0 ? "0" : formatMs(v))}</span>`;
  }).join("");
  const axisRow = `<tr aria-hidden="true"><th></th><td class="track"><div class="axis">${axis}</div></td>`
    + `<td class="val"></td></tr>`;
  const kinds = new Set(rows.length ? ["s-mark"] : []);
  for (const [key, , cls] of SPANS) if (stages[key]) kinds.add(cls);
  if ((turn.tools || []).length) kinds.add("s-tool");
  const key = KEY.filter(([cls]) => kinds.has(cls)).map(([cls, label]) =>
    `<li><span class="swatch ${cls}" aria-hidden="true"></span>${esc(label)}</li>`).join("");
  return `<table class="gantt"><caption>Stages, from end of speech (0) to done
    (${esc(formatMs(total))}); axis ticks every ${esc(formatMs(step))}</caption>
    <tbody>${rows.join("")}${axisRow}</tbody></table>
    <ul class="key" aria-label="Colour key">${key}</ul>`;
}
