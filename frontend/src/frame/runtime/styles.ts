export const frameStyles = `
:root { color-scheme: light; --bg: #ffffff; --fg: #1c1f24; --muted: #6b7280; --border: #e3e5e8; --panel: #f7f8fa; --accent: #4f46e5; --accent-fg: #fff;
  --info: #2563eb; --success: #15803d; --warning: #b45309; --danger: #dc2626; font: 14px/1.5 ui-sans-serif, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
:root[data-theme="dark"] { color-scheme: dark; --bg: #16181d; --fg: #e6e7ea; --muted: #9aa0aa; --border: #2c3038; --panel: #1e2128; --accent: #818cf8; --accent-fg: #11121a;
  --info: #60a5fa; --success: #4ade80; --warning: #fbbf24; --danger: #f87171; }
* { box-sizing: border-box; }
html, body { margin: 0; background: transparent; color: var(--fg); }
body { padding: 2px; overflow-x: auto; }
.w-button { font: inherit; border: 1px solid var(--border); background: var(--panel); color: var(--fg); border-radius: 8px; padding: 6px 14px; cursor: pointer; }
.w-button:hover { border-color: var(--accent); }
.w-button:focus-visible, .w-input:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.w-button:disabled { opacity: .55; cursor: default; }
.w-button-primary { background: var(--accent); border-color: var(--accent); color: var(--accent-fg); }
.w-button-danger { background: var(--danger); border-color: var(--danger); color: #fff; }
.w-button-ghost { background: transparent; border-color: transparent; }
.w-input { font: inherit; width: 100%; padding: 6px 10px; border-radius: 8px; border: 1px solid var(--border); background: var(--bg); color: var(--fg); }
.w-field { display: flex; flex-direction: column; gap: 4px; font-size: 13px; color: var(--muted); }
.w-check { display: inline-flex; gap: 8px; align-items: center; }
.w-card { border: 1px solid var(--border); border-radius: 12px; padding: 14px 16px; background: var(--panel); }
.w-card-title { margin: 0 0 8px; font-size: 15px; }
.w-text { margin: 0; } .w-muted { color: var(--muted); } .w-text-small { font-size: 12px; } .w-text-large { font-size: 17px; }
.w-heading { margin: 0 0 6px; }
.w-badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; border: 1px solid currentColor; }
.w-tone-neutral { color: var(--muted); } .w-tone-info { color: var(--info); } .w-tone-success { color: var(--success); } .w-tone-warning { color: var(--warning); } .w-tone-danger { color: var(--danger); }
.w-alert { border: 1px solid currentColor; border-radius: 10px; padding: 10px 12px; }
.w-alert > * { color: var(--fg); }
.w-table { border-collapse: collapse; width: 100%; font-size: 13px; }
.w-table th, .w-table td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--border); }
.w-spinner { display: inline-block; width: 16px; height: 16px; border: 2px solid var(--border); border-top-color: var(--accent); border-radius: 50%; animation: w-spin .8s linear infinite; }
@keyframes w-spin { to { transform: rotate(360deg); } }
.w-divider { border: 0; border-top: 1px solid var(--border); margin: 12px 0; }
.w-progress { width: 100%; accent-color: var(--accent); }
.w-error, .w-frame-error { color: var(--danger); white-space: pre-wrap; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; border: 1px solid var(--danger); border-radius: 8px; padding: 10px; }
.w-frame-error { margin: 8px 0 0; }
.w-frame-error[hidden] { display: none; }
`;
