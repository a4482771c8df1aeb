// Cost curves as SVG line charts (log-log axes), written next to BENCHMARKS.md by bench/run.ts.
export interface Series { name: string; points: [number, number][] }
export interface Plot { title: string; xLabel: string; yLabel: string; series: Series[]; xTick?: (x: number) => string }

const COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Powers of 10 (and 2x, 5x) between lo and hi for a log axis. */
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) { const v = m * 10 ** e; if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
  }
  return out;
}
const short = (v: number): string => {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
  return `${+v.toPrecision(3)}`;
};

export function svgPlot(p: Plot): string {
  const W = 720, H = 420, L = 70, R = 170, T = 40, B = 55;
  const pts = p.series.flatMap((s) => s.points).filter(([x, y]) => x > 0 && y > 0 && Number.isFinite(y));
  const xs = pts.map((q) => q[0]), ys = pts.map((q) => q[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  let y0 = Math.min(...ys) / 1.3, y1 = Math.max(...ys) * 1.3;
  if (!(y1 > y0)) { y0 = 1; y1 = 10; }
  const lx = (x: number) => L + ((Math.log(x) - Math.log(x0)) / (Math.log(x1) - Math.log(x0) || 1)) * (W - L - R);
  const ly = (y: number) => H - B - ((Math.log(y) - Math.log(y0)) / (Math.log(y1) - Math.log(y0))) * (H - T - B);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2 - R / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(p.title)}</text>`);
  for (const y of logTicks(y0, y1)) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${ly(y).toFixed(1)}" y2="${ly(y).toFixed(1)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${L - 6}" y="${(ly(y) + 4).toFixed(1)}" text-anchor="end">${short(y)}</text>`);
  }
  const xv = [...new Set(xs)].sort((a, b) => a - b);
  for (const x of xv) {
    out.push(`<line x1="${lx(x).toFixed(1)}" x2="${lx(x).toFixed(1)}" y1="${T}" y2="${H - B}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${lx(x).toFixed(1)}" y="${H - B + 16}" text-anchor="middle">${esc(p.xTick ? p.xTick(x) : short(x))}</text>`);
  }
  out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#888"/>`);
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">${esc(p.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${esc(p.yLabel)}</text>`);
  p.series.forEach((s, k) => {
    const c = COLORS[k % COLORS.length];
    const good = s.points.filter(([x, y]) => x > 0 && y > 0 && Number.isFinite(y));
    if (good.length) {
      out.push(`<polyline fill="none" stroke="${c}" stroke-width="${k === 0 ? 2.5 : 1.5}" points="${good.map(([x, y]) => `${lx(x).toFixed(1)},${ly(y).toFixed(1)}`).join(" ")}"/>`);
      for (const [x, y] of good) out.push(`<circle cx="${lx(x).toFixed(1)}" cy="${ly(y).toFixed(1)}" r="3" fill="${c}"><title>${esc(s.name)}: ${short(x)} → ${short(y)}</title></circle>`);
    }
    out.push(`<line x1="${W - R + 12}" x2="${W - R + 32}" y1="${T + 14 + 18 * k}" y2="${T + 14 + 18 * k}" stroke="${c}" stroke-width="2.5"/>`);
    out.push(`<text x="${W - R + 38}" y="${T + 18 + 18 * k}">${esc(s.name)}</text>`);
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
