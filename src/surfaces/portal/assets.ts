import { createHash } from 'node:crypto';

// The portal's stylesheet, its one script and its icon, served from memory under
// `/portal/assets/` with a content hash in their names (cached for a year).
// No inline script or style anywhere: the Content-Security-Policy allows only
// these files. Every page works without the script; it adds copy buttons and
// confirmations.

const CSS = `
:root { --ink: #1d2330; --muted: #5b6475; --line: #d9dee7; --accent: #1f5fbf; --bad: #a4262c; --good: #1e7b34; --bg: #f7f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
a { color: var(--accent); }
header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .75rem 1rem; background: #fff; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; text-decoration: none; color: var(--ink); }
header nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
header nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--ink); }
header form { margin-left: auto; display: flex; align-items: center; gap: .5rem; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 1rem; margin-bottom: 1rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: .85rem; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; }
td.wrap { white-space: normal; min-width: 12rem; }
/* A date and time wraps between the two; a name wraps rather than widen its table; a long id breaks anywhere. */
td.when { white-space: normal; } .nowrap { white-space: nowrap; }
td.name { white-space: normal; min-width: 6rem; overflow-wrap: anywhere; }
td.id { white-space: normal; min-width: 9rem; } td.id code { overflow-wrap: anywhere; }
caption { text-align: left; padding: .25rem 0; }
label { display: block; font-weight: 600; margin: .5rem 0 .2rem; }
input[type=text], input[type=email], input[type=password], input[type=number], select { width: 100%; max-width: 24rem; padding: .45rem .5rem; font: inherit; border: 1px solid #9aa3b2; border-radius: 4px; }
.check label { display: inline; font-weight: 400; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: 0 1rem; }
button, .button { display: inline-block; padding: .45rem .9rem; font: inherit; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; }
button.secondary, .button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
:focus-visible { outline: 3px solid #f0b429; outline-offset: 2px; }
.notice { padding: .75rem 1rem; border-radius: 4px; margin: 0 0 1rem; border: 1px solid; overflow-wrap: anywhere; }
.notice p { margin: 0; }
.notice ul { margin: .5rem 0 0; }
.notice.error { color: var(--bad); border-color: var(--bad); background: #fdf3f3; }
.notice.ok { color: var(--good); border-color: var(--good); background: #f2faf4; }
.secret { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.secret code { font-size: .95rem; padding: .4rem .5rem; background: #eef1f6; border-radius: 4px; word-break: break-all; }
.muted { color: var(--muted); }
.state-active { color: var(--good); } .state-revoked, .state-expired { color: var(--bad); }
.signin { max-width: 26rem; margin: 3rem auto; }
.figure { font-size: 1.6rem; font-weight: 700; margin: 0; }
.grid p { margin: .25rem 0; }
pre { background: #eef1f6; padding: .75rem; border-radius: 4px; overflow-x: auto; font-size: .9rem; }
h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 0 1rem; }
.chart { margin: 0 0 1rem; }
.chart figcaption { margin-bottom: .5rem; }
.chart-plot { display: grid; grid-template-columns: auto minmax(0, 1fr); gap: .25rem .4rem; }
.chart-plot svg { width: 100%; height: 10rem; display: block; }
.chart-y { display: flex; flex-direction: column; justify-content: space-between; height: 10rem; font-size: .8rem; text-align: right; color: var(--muted); }
.chart-x { grid-column: 2; display: flex; white-space: nowrap; justify-content: space-between; gap: .5rem; font-size: .8rem; margin: 0; }
.chart .bar:hover rect + rect { fill: #173f80; }
/* A table too wide for the screen scrolls inside its own box; the shadow at an edge says there is more that way. */
.table-wrap { overflow-x: auto; background: linear-gradient(to right, #fff 30%, rgba(255,255,255,0)) left / 2rem 100% no-repeat local, linear-gradient(to left, #fff 30%, rgba(255,255,255,0)) right / 2rem 100% no-repeat local, radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.25), rgba(0,0,0,0)) left / .75rem 100% no-repeat scroll, radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.25), rgba(0,0,0,0)) right / .75rem 100% no-repeat scroll; }
.table-wrap table { background: transparent; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: .75rem 1rem; }
.figures p { margin: .15rem 0; }
.figure-note { font-size: .85rem; }
nav.subnav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: .25rem 0 .5rem; font-size: .95rem; }
nav.subnav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--ink); }
/* A narrow screen keeps the columns that matter: a time wraps to two lines, folded columns go, cells pad less. */
@media (max-width: 40rem) {
  th.fold, td.fold { display: none; }
  header form { margin-left: 0; }
  th, td { padding: .35rem .4rem; }
  td.wrap { min-width: 9rem; }
  .chart-x span:nth-child(2) { display: none; }
}
form.actions > div { min-width: 10rem; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.actions form { margin: 0; }
.flag { color: var(--bad); font-weight: 600; }
tr.flagged td { background: #fdf3f3; }
details.org > summary { cursor: pointer; padding: .25rem 0; }
details.org[open] > summary { margin-bottom: .75rem; }
h2.first, h3.first { margin-top: 0; }
.table-wrap + form.panel, .table-wrap + p + form.panel { margin-top: 1rem; }
.engine-actions { margin-top: .75rem; }
.engine-actions > form.filters { margin-bottom: 0; }
input[type=date], input[type=month] { padding: .4rem .5rem; font: inherit; border: 1px solid #9aa3b2; border-radius: 4px; }
.filters { align-items: flex-end; margin-bottom: .5rem; }
.filters label { margin-top: 0; }
.filters input, .filters select { height: 2.6rem; }
.panel > p:first-of-type { margin-top: 0; }
textarea { width: 100%; max-width: 40rem; padding: .45rem .5rem; font: .85rem ui-monospace, monospace; border: 1px solid #9aa3b2; border-radius: 4px; }
fieldset { border: 1px solid var(--line); border-radius: 4px; margin: .75rem 0; padding: .25rem .75rem .75rem; min-width: 0; }
legend { font-weight: 600; padding: 0 .25rem; }
.grid > .wide { grid-column: 1 / -1; }
ul.cards { list-style: none; padding: 0; margin: 0 0 1.5rem; display: grid; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); gap: 1rem; }
.card { display: flex; gap: .75rem; align-items: flex-start; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 1rem; min-width: 0; }
.card > div { min-width: 0; }
.card h2 { font-size: 1.05rem; margin: 0 0 .25rem; }
.card-text { margin: 0 0 .5rem; display: -webkit-box; -webkit-line-clamp: 3; -webkit-box-orient: vertical; overflow: hidden; }
.card p.muted { margin: 0; font-size: .9rem; overflow-wrap: anywhere; }
.stack-icon { flex: none; display: inline-flex; align-items: center; justify-content: center; width: 3rem; height: 3rem; font-size: 2rem; line-height: 1; border-radius: 6px; background: #eef1f6; overflow: hidden; }
.stack-icon img { width: 100%; height: 100%; object-fit: contain; }
.stack-icon.large { width: 4.5rem; height: 4.5rem; font-size: 3rem; }
.stack-head { display: flex; gap: 1rem; align-items: center; }
.stack-head h1 { margin: 0; }
.stack-head p { margin: .25rem 0 0; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; background: #e6edf9; color: #173f80; font-size: .85rem; }
p.hint { margin: .15rem 0 0; font-size: .9rem; }
.run-state { font-weight: 700; }
.batch-progress { white-space: nowrap; font-size: .9rem; }
.batch-progress progress { width: 6rem; vertical-align: middle; }
.run-applied { color: var(--good); } .run-failed, .run-canceled { color: var(--bad); } .run-queued, .run-running { color: #8a5a00; }
.run-facts p { margin: .2rem 0; }
/* Ids (run_…, cls_…) are long unbroken words: they wrap rather than widen a narrow page. */
main p code, td.wrap code { overflow-wrap: anywhere; }
pre.run-log { max-height: 32rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
`;

const JS = `
// Copy buttons: <button data-copy="#id">; confirmation: <form data-confirm="question">.
document.addEventListener('click', async (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Select and copy';
  }
});
document.addEventListener('submit', (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.querySelectorAll('[data-copy]').forEach((button) => { button.hidden = false; });
// A run's log while it runs: <pre data-follow="URL"> is filled from URL's server-sent events; the
// page reloads when the run ends.
const followed = document.querySelector('pre[data-follow]');
if (followed && window.EventSource) {
  const source = new EventSource(followed.dataset.follow);
  let fresh = true;
  source.addEventListener('log', (event) => {
    if (fresh) { followed.textContent = ''; fresh = false; }
    const atBottom = followed.scrollTop + followed.clientHeight >= followed.scrollHeight - 8;
    followed.textContent += event.data;
    if (atBottom) followed.scrollTop = followed.scrollHeight;
  });
  source.addEventListener('end', () => { source.close(); window.location.reload(); });
}
`;

/**
 * The portal's icon: a toll barrier in the accent colour, drawn as SVG (every current browser takes
 * an SVG icon).
 */
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f5fbf"/><path d="M7 11h18M16 11v15" stroke="#fff" stroke-width="4" stroke-linecap="round"/><circle cx="7" cy="11" r="3.5" fill="#f0b429"/></svg>
`;

function asset(body: string, type: string) {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { body, type, hash };
}

export const ASSETS = {
  css: asset(CSS, 'text/css; charset=utf-8'),
  js: asset(JS, 'text/javascript; charset=utf-8'),
  svg: asset(ICON, 'image/svg+xml'),
};

/** The URL of an asset, with its hash: a changed file is a new URL. */
export function assetUrl(name: keyof typeof ASSETS): string {
  return `/portal/assets/portal.${ASSETS[name].hash}.${name}`;
}

/** The asset a URL names (the current hash only), or undefined. */
export function assetAt(file: string): { body: string; type: string } | undefined {
  for (const [name, asset] of Object.entries(ASSETS)) if (file === `portal.${asset.hash}.${name}`) return asset;
  return undefined;
}
