/** The console's stylesheet, served at `{base}/console/assets/console.css`. */
export const CONSOLE_CSS = String.raw`:root {
  --fg: #1b1f24;
  --muted: #57606a;
  --bg: #f6f8fa;
  --card: #ffffff;
  --line: #d0d7de;
  --accent: #0b5cad;
  --accent-fg: #ffffff;
  --danger: #b42318;
  --focus: #f59e0b;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
  line-height: 1.5;
  color: var(--fg);
  background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
[hidden] { display: none !important; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 0.5rem; top: 0.5rem; background: var(--card); padding: 0.5rem; z-index: 10; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.topbar { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.5rem; padding: 0.75rem 1.25rem; background: #102a43; color: #fff; }
.brand { font-weight: 700; letter-spacing: 0.02em; }
.topbar nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; margin: 0; padding: 0; }
.topbar a { color: #dbeafe; text-decoration: none; padding: 0.25rem 0; border-bottom: 2px solid transparent; }
.topbar a:hover { color: #fff; }
.topbar a[aria-current="page"] { color: #fff; border-bottom-color: #fff; }
.whoami { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; }
.whoami .secondary { background: transparent; color: #fff; border-color: #9fb3c8; }
main { max-width: 72rem; margin: 0 auto; padding: 1.25rem; }
main:focus { outline: none; }
h1 { font-size: 1.6rem; margin: 0.25rem 0 0.75rem; }
h1:focus { outline: none; }
h1:focus-visible { outline: 3px solid var(--focus); }
h2 { font-size: 1.2rem; margin: 1.75rem 0 0.5rem; }
.crumbs { margin: 0; color: var(--muted); }
.hint, .optional { color: var(--muted); }
.optional { font-weight: normal; font-size: 0.9em; }
.status:empty { display: none; }
.status { background: #e6f4ea; border: 1px solid #a6d8b4; padding: 0.5rem 0.75rem; border-radius: 6px; }
.error { background: #fdecea; border: 1px solid #f5b5ae; color: var(--danger); padding: 0.5rem 0.75rem; border-radius: 6px; margin: 0 0 0.5rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; max-width: 40rem; }
.card.narrow { max-width: 24rem; }
label { display: block; font-weight: 600; margin: 0.75rem 0 0.25rem; }
input, select { font: inherit; padding: 0.5rem 0.6rem; border: 1px solid #8c959f; border-radius: 6px; width: 100%; background: #fff; color: inherit; }
input[type="checkbox"] { width: 1.1rem; height: 1.1rem; margin: 0; flex: none; }
.check { display: flex; align-items: center; gap: 0.5rem; margin: 0.35rem 0; }
.check label { margin: 0; font-weight: normal; overflow-wrap: anywhere; }
fieldset { min-width: 0; border: 1px solid var(--line); border-radius: 6px; margin: 0.9rem 0 0; padding: 0.4rem 0.9rem 0.6rem; }
legend { font-weight: 600; padding: 0 0.25rem; }
button { font: inherit; cursor: pointer; border-radius: 6px; padding: 0.5rem 0.9rem; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg); min-height: 2.5rem; }
button:disabled { opacity: 0.55; cursor: not-allowed; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: var(--danger); border-color: var(--danger); }
#confirm-ok.danger { background: var(--danger); color: #fff; }
form button[type="submit"] { margin-top: 1rem; }
.table-wrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.55rem 0.75rem; border-bottom: 1px solid var(--line); vertical-align: top; }
tbody tr:last-child td { border-bottom: none; }
th { background: #eef2f6; font-size: 0.9rem; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; word-break: break-all; }
.row-actions { white-space: nowrap; }
td code.client-id { white-space: nowrap; word-break: normal; }
.row-actions button + button { margin-left: 0.4rem; }
.pager { display: flex; align-items: center; gap: 1rem; flex-wrap: wrap; margin: 0.75rem 0; }
.pager-size { display: flex; align-items: center; gap: 0.5rem; margin: 0.5rem 0 0.75rem; }
.pager-size label { margin: 0; }
.pager-size select { width: auto; }
#keys-rotate { margin-top: 0.75rem; }
dialog { border: 1px solid var(--line); border-radius: 10px; padding: 1.25rem; width: min(34rem, calc(100vw - 2rem)); }
dialog::backdrop { background: rgba(16, 42, 67, 0.55); }
dialog h2 { margin-top: 0; }
.copy-row { display: flex; gap: 0.5rem; }
.copy-row input { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.actions { display: flex; justify-content: flex-end; gap: 0.5rem; margin-top: 1rem; flex-wrap: wrap; }

/* Phone widths: tables become one card per row, each cell labelled. */
@media (max-width: 640px) {
  main { padding: 0.9rem; }
  .topbar { padding: 0.75rem 0.9rem; }
  .whoami { margin-left: 0; width: 100%; justify-content: space-between; }
  .table-wrap { overflow: visible; background: transparent; border: none; }
  table, thead, tbody, tr, td { display: block; }
  thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  tr { background: var(--card); border: 1px solid var(--line); border-radius: 8px; margin-bottom: 0.75rem; padding: 0.25rem 0; }
  td { border: none; padding: 0.3rem 0.9rem; }
  td code.client-id { white-space: normal; word-break: break-all; }
  .card { padding: 0.9rem; }
  td[data-label]::before { content: attr(data-label); display: block; font-size: 0.8rem; font-weight: 600; color: var(--muted); }
  .row-actions { white-space: normal; display: flex; flex-wrap: wrap; gap: 0.4rem; }
  .row-actions button + button { margin-left: 0; }
  .copy-row { flex-direction: column; }
}
`;
