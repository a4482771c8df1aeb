// Shared pieces of the self-contained HTML views (swimlane, dependency graph): escaping,
// the kernel colour palette (the same kernel gets the same colour in both views), number
// formatting and the page shell. Nothing here loads an external asset.

/** Escape text for HTML/XML content and attribute values. */
export function esc(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;"));
}

/** Tableau-20-like palette, ordered so that neighbours differ strongly. */
const PALETTE = [
  "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac",
  "#2f5f8a", "#c4651a", "#3b7a35", "#a83c3e", "#7f5274", "#4c8c87", "#b89a1f", "#6e5240", "#d4727d", "#857c78",
];

function hash32(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/**
 * Colours for a set of kernel names: sorted names take the palette in order (so a trace and
 * a graph of the same program agree); past 20 kernels, a hue from the name's hash.
 */
export function kernelColours(names: Iterable<string>): Map<string, string> {
  const sorted = [...new Set(names)].sort();
  const m = new Map<string, string>();
  sorted.forEach((n, i) => m.set(n, i < PALETTE.length ? PALETTE[i] : `hsl(${hash32(n) % 360}, 55%, ${45 + (hash32(n) >>> 9) % 15}%)`));
  return m;
}

/** Black or white text, whichever reads better on `bg` (#rrggbb or hsl()). */
export function textOn(bg: string): string {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(bg);
  if (!m) return "#fff";
  const [r, g, b] = [m[1], m[2], m[3]].map((x) => parseInt(x, 16) / 255);
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum > 0.55 ? "#1b1b1b" : "#fff";
}

/** A duration/time in microseconds, in the unit that reads best ("12.5 µs", "3.20 ms", "1.500 s"). */
export function fmtUs(us: number): string {
  const a = Math.abs(us);
  if (a === 0) return "0 µs";
  if (a < 1) return `${trim(us * 1000, 3)} ns`;
  if (a < 1000) return `${trim(us, 3)} µs`;
  if (a < 1e6) return `${trim(us / 1000, 3)} ms`;
  return `${trim(us / 1e6, 3)} s`;
}

function trim(x: number, sig: number): string {
  // up to `sig` decimals, trailing zeros dropped
  return Number(x.toFixed(sig)).toString();
}

/** 12345 -> "12,345". */
export const fmtInt = (n: number): string => Math.round(n).toLocaleString("en-US");

/** Bytes with a binary unit: "1,234 B", "12.3 KiB", "4.56 MiB". */
export function fmtBytes(n: number): string {
  if (n < 1024) return `${fmtInt(n)} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(2)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** Tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `span`. */
export function niceStep(span: number, target: number): number {
  if (!(span > 0)) return 1;
  const raw = span / Math.max(1, target);
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/** `s` cut to fit `px` at `fontPx`, with an ellipsis; "" when not even one glyph fits. */
export function fitText(s: string, px: number, fontPx: number): string {
  const max = Math.floor(px / (fontPx * 0.6));
  if (max >= s.length) return s;
  if (max < 2) return "";
  return `${s.slice(0, max - 1)}…`;
}

const PAGE_CSS = `
  :root { color-scheme: light; }
  body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 14px 18px; color: #1b1b1b; background: #fff; }
  h1 { font-size: 16px; margin: 0 0 2px; }
  .sub { color: #555; margin: 0 0 8px; }
  .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 6px 0 8px; }
  .legend .item { display: inline-flex; align-items: center; gap: 5px; cursor: pointer; user-select: none; }
  .legend .sw { width: 12px; height: 12px; border-radius: 2px; display: inline-block; }
  .legend .item.off { opacity: 0.35; }
  .legend .count { color: #777; font-size: 12px; }
  .scroll { overflow: auto; border: 1px solid #ddd; border-radius: 4px; }
  svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
  .dim { opacity: 0.15; }
  .empty { color: #777; font-style: italic; margin: 12px 0; }
  .warn { color: #a83c3e; }
  table.stats { border-collapse: collapse; margin-top: 10px; }
  table.stats th, table.stats td { padding: 2px 10px; text-align: right; border-bottom: 1px solid #eee; }
  table.stats th:first-child, table.stats td:first-child { text-align: left; }
`;

/**
 * Clicking a legend item dims every element of another kernel (elements carry
 * data-kernel); clicking it again clears the highlight.
 */
const LEGEND_JS = `
(function () {
  var active = null;
  document.querySelectorAll('.legend .item').forEach(function (item) {
    item.addEventListener('click', function () {
      var k = item.getAttribute('data-kernel');
      active = active === k ? null : k;
      document.querySelectorAll('.legend .item').forEach(function (i) {
        i.classList.toggle('off', active !== null && i.getAttribute('data-kernel') !== active);
      });
      document.querySelectorAll('svg [data-kernel]').forEach(function (el) {
        el.classList.toggle('dim', active !== null && el.getAttribute('data-kernel') !== active);
      });
    });
  });
})();
`;

/** The legend: one item per kernel, in `colours` order. */
export function legendHtml(colours: Map<string, string>, counts?: Map<string, number>): string {
  if (!colours.size) return "";
  const items = [...colours].map(([k, c]) =>
    `<span class="item" data-kernel="${esc(k)}" title="click to highlight ${esc(k)}"><span class="sw" style="background:${c}"></span>${esc(k)}${counts ? ` <span class="count">${counts.get(k) ?? 0}</span>` : ""}</span>`);
  return `<div class="legend">${items.join("")}</div>`;
}

/** A complete HTML document. */
export function page(title: string, body: string, extraCss = ""): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${PAGE_CSS}${extraCss}</style>
</head>
<body>
${body}
<script>${LEGEND_JS}</script>
</body>
</html>
`;
}
