// The roofline report rendered: the terminal table (BenchmarkStats.toString, `tspto profile`) and
// the roofline plot of the DFX HTML (an SVG: every kernel a point under the two roofs, log-log:
// the memory slope readGBs × intensity and the compute ceiling, the dot-product ceilings dashed
// where the machine has them). The report is made by the runtime (src/runtime/roofline.ts) and
// written as dfx_outputs/roofline.json (format: docs/dfx-formats.md), which this file reads.
import { DfxFormatError } from "./dfx.js";
import { esc, fmtBytes, fmtUs, kernelColours, legendHtml, page } from "./html.js";

export interface RooflineLimitsModel {
  readonly readGBs: number;
  readonly fmaGflops: number;
  readonly dotGflops?: number;
  readonly dotInt8Gops?: number;
  readonly dotInstruction?: string;
  readonly dotInt8Instruction?: string;
  readonly threads: number;
  readonly cpu: string;
  readonly isa?: string | null;
  readonly measuredAt?: string;
}
export interface RooflineRowModel {
  readonly kernel: string;
  readonly tasks: number | null;
  readonly calls: number;
  readonly bytes: number | null;
  readonly flops: number | null;
  /** The flops by the unit that can do them (null when unknown). */
  readonly flopsByUnit?: { readonly vector: number; readonly dotBf16: number; readonly dotInt8: number } | null;
  readonly us: number | null;
  readonly gbps: number | null;
  readonly gflops: number | null;
  readonly intensity: number | null;
  readonly roofUs: number | null;
  readonly bound: "memory" | "compute" | null;
  readonly fraction: number | null;
  readonly aboveRoof?: boolean;
  readonly lostUs: number | null;
  readonly note: string | null;
}
export interface RooflineModel {
  readonly program: string;
  readonly outputDir?: string;
  readonly platform: string;
  readonly launches: number;
  readonly per: "launch" | "total";
  readonly rows: readonly RooflineRowModel[];
  readonly limits: RooflineLimitsModel | null;
  readonly notes: readonly string[];
}

// ------------------------------------------------------------------ numbers

const DASH = "—";
/** 1234567 -> "1.23 M" (flops); small integers as they are. */
export function fmtCount(n: number): string {
  const a = Math.abs(n);
  if (a < 1e3) return Number.isInteger(n) ? String(n) : n.toPrecision(3);
  for (const [d, s] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]] as const) if (a >= d) return `${(n / d).toPrecision(3)} ${s}`;
  return String(n);
}
const num = (v: number | null, f: (x: number) => string) => (v === null || !Number.isFinite(v) ? DASH : f(v));
const fixed = (d: number) => (x: number) => x.toFixed(d);
const sig3 = (x: number) => (x === 0 ? "0" : Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(3));
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The limits line: "read 21.3 GB/s, FMA 162 GFLOP/s, bf16 dot 330 GFLOP/s (vdpbf16ps), ...; ridge 7.6 flop/B". */
export function limitsLine(l: RooflineLimitsModel): string {
  const parts = [`read ${sig3(l.readGBs)} GB/s`, `FMA ${sig3(l.fmaGflops)} GFLOP/s`];
  if (l.dotGflops) parts.push(`bf16 dot ${sig3(l.dotGflops)} GFLOP/s${l.dotInstruction ? ` (${l.dotInstruction})` : ""}`);
  if (l.dotInt8Gops) parts.push(`int8 dot ${sig3(l.dotInt8Gops)} GOPS${l.dotInt8Instruction ? ` (${l.dotInt8Instruction})` : ""}`);
  return `${parts.join(", ")}; ridge ${sig3(l.fmaGflops / l.readGBs)} flop/B; ${l.threads} thread${l.threads === 1 ? "" : "s"} of ${l.cpu}${l.isa ? `, ISA path ${l.isa}` : ""}`;
}

// ------------------------------------------------------------------ the terminal table

const COLUMNS: readonly { head: string; left?: boolean; cell: (r: RooflineRowModel) => string }[] = [
  { head: "kernel", left: true, cell: (r) => r.kernel },
  { head: "tasks", cell: (r) => num(r.tasks, (x) => String(Math.round(x))) },
  { head: "bytes", cell: (r) => num(r.bytes, fmtBytes) },
  { head: "flops", cell: (r) => num(r.flops, fmtCount) },
  { head: "us", cell: (r) => num(r.us, fixed(2)) },
  { head: "GB/s", cell: (r) => num(r.gbps, sig3) },
  { head: "GFLOP/s", cell: (r) => num(r.gflops, sig3) },
  { head: "flop/B", cell: (r) => num(r.intensity, sig3) },
  { head: "bound", left: true, cell: (r) => r.bound ?? DASH },
  { head: "of roof", cell: (r) => num(r.fraction, (x) => `${pct(x)}${r.aboveRoof ? "*" : ""}`) },
  { head: "lost us", cell: (r) => num(r.lostUs, fixed(2)) },
];

/** The report as a text table, sorted by time lost (the order the rows come in), with the limits and what it lacks. */
export function formatRooflineTable(m: RooflineModel): string {
  const what = m.per === "launch" ? `per launch (times: the median of ${m.launches} launch${m.launches === 1 ? "" : "es"})` : `total over ${m.launches} launch${m.launches === 1 ? "" : "es"}`;
  const lines = [`roofline of ${m.program} on ${m.platform}, ${what}, sorted by time lost against the roof`];
  if (m.outputDir) lines.push(`  program: ${m.outputDir}`);
  lines.push(m.limits ? `  limits: ${limitsLine(m.limits)}` : "  limits: none measured");
  const cells = m.rows.map((r) => COLUMNS.map((c) => c.cell(r)));
  const width = COLUMNS.map((c, i) => Math.max(c.head.length, ...cells.map((row) => row[i].length)));
  const fmt = (row: readonly string[]) => `  ${row.map((s, i) => (COLUMNS[i].left ? s.padEnd(width[i]) : s.padStart(width[i]))).join("  ")}`.trimEnd();
  lines.push(fmt(COLUMNS.map((c) => c.head)));
  for (const row of cells) lines.push(fmt(row));
  if (m.rows.length === 0) lines.push("  (no task kernel)");
  for (const n of aboveNotes(m)) lines.push(`  ${n}`);
  for (const r of m.rows) if (r.note) lines.push(`  ${r.kernel}: ${r.note}`);
  for (const n of m.notes) lines.push(`  note: ${n}`);
  return lines.join("\n");
}

/** What a "*" in the "of roof" column means, for the bounds it marks. */
function aboveNotes(m: RooflineModel): string[] {
  const out: string[] = [];
  if (m.rows.some((r) => r.aboveRoof && r.bound === "memory")) out.push("* memory-bound and faster than the streaming-read roof: its data came from the caches, not DRAM (of roof capped at 100%)");
  if (m.rows.some((r) => r.aboveRoof && r.bound === "compute")) out.push("* compute-bound and faster than the measured peak (of roof capped at 100%): the limits were measured while other processes held the cores; remove the cache file under <cache root>/limits/ to measure again");
  return out;
}

// ------------------------------------------------------------------ roofline.json

const isNumOrNull = (v: unknown) => v === null || (typeof v === "number" && Number.isFinite(v));

function unitsOf(v: unknown, i: number): RooflineRowModel["flopsByUnit"] {
  if (v === null || v === undefined) return null;
  const u = v as Record<string, unknown>;
  for (const k of ["vector", "dotBf16", "dotInt8"]) {
    if (typeof u[k] !== "number" || !Number.isFinite(u[k])) throw new DfxFormatError("", `rows[${i}].flopsByUnit.${k} must be a number`);
  }
  return { vector: u.vector as number, dotBf16: u.dotBf16 as number, dotInt8: u.dotInt8 as number };
}

/** Reads a roofline.json document (dfx_outputs/roofline.json); a malformed one is a DfxFormatError naming the field. */
export function parseRoofline(json: unknown, file: string): RooflineModel {
  const bad = (what: string): never => { throw new DfxFormatError(file, what); };
  if (json === null || typeof json !== "object" || Array.isArray(json)) bad("not a JSON object");
  const o = json as Record<string, unknown>;
  if (o.format !== "tspto-roofline-1") bad(`"format" must be "tspto-roofline-1", got ${JSON.stringify(o.format)}`);
  if (typeof o.program !== "string" || typeof o.platform !== "string") bad(`"program" and "platform" must be strings`);
  if (!Number.isInteger(o.launches) || (o.launches as number) < 0) bad(`"launches" must be a non-negative integer`);
  if (o.per !== "launch" && o.per !== "total") bad(`"per" must be "launch" or "total"`);
  if (!Array.isArray(o.rows)) bad(`"rows" must be an array`);
  const rows = (o.rows as unknown[]).map((r, i) => {
    const x = r as Record<string, unknown>;
    if (x === null || typeof x !== "object" || typeof x.kernel !== "string") bad(`rows[${i}] must be an object with a string "kernel"`);
    for (const k of ["tasks", "bytes", "flops", "us", "gbps", "gflops", "intensity", "roofUs", "fraction", "lostUs"]) {
      if (!isNumOrNull(x[k] ?? null)) bad(`rows[${i}].${k} must be a number or null, got ${JSON.stringify(x[k])}`);
    }
    if (x.bound !== null && x.bound !== undefined && x.bound !== "memory" && x.bound !== "compute") bad(`rows[${i}].bound must be "memory", "compute" or null`);
    return {
      kernel: x.kernel as string, tasks: (x.tasks ?? null) as number | null, calls: typeof x.calls === "number" ? x.calls : 0,
      bytes: (x.bytes ?? null) as number | null, flops: (x.flops ?? null) as number | null, flopsByUnit: unitsOf(x.flopsByUnit, i),
      us: (x.us ?? null) as number | null, gbps: (x.gbps ?? null) as number | null, gflops: (x.gflops ?? null) as number | null,
      intensity: (x.intensity ?? null) as number | null, roofUs: (x.roofUs ?? null) as number | null,
      bound: (x.bound ?? null) as "memory" | "compute" | null, fraction: (x.fraction ?? null) as number | null,
      aboveRoof: x.aboveRoof === true, lostUs: (x.lostUs ?? null) as number | null, note: typeof x.note === "string" ? x.note : null,
    } satisfies RooflineRowModel;
  });
  let limits: RooflineLimitsModel | null = null;
  if (o.limits !== null && o.limits !== undefined) {
    const l = o.limits as Record<string, unknown>;
    const pos = (k: string, opt = false) => {
      if (opt && l[k] === undefined) return;
      if (!(typeof l[k] === "number" && (l[k] as number) > 0 && Number.isFinite(l[k]))) bad(`limits.${k} must be a positive number, got ${JSON.stringify(l[k])}`);
    };
    pos("readGBs"); pos("fmaGflops"); pos("dotGflops", true); pos("dotInt8Gops", true);
    limits = { ...(l as unknown as RooflineLimitsModel), threads: Number(l.threads ?? 0), cpu: String(l.cpu ?? "") };
  }
  const notes = Array.isArray(o.notes) ? (o.notes as unknown[]).map(String) : [];
  if (o.outputDir !== undefined && typeof o.outputDir !== "string") bad(`"outputDir" must be a string`);
  return { program: o.program as string, ...(typeof o.outputDir === "string" ? { outputDir: o.outputDir } : {}), platform: o.platform as string, launches: o.launches as number, per: o.per as "launch" | "total", rows, limits, notes };
}

// ------------------------------------------------------------------ the plot

const PLOT = { w: 640, h: 400, left: 64, right: 18, top: 16, bottom: 46 };

/** Decades [lo, hi] (powers of ten) covering `xs`, widened to at least `min` decades. */
function decades(xs: readonly number[], min: number): [number, number] {
  const pos = xs.filter((x) => x > 0 && Number.isFinite(x));
  let lo = Math.floor(Math.log10(Math.min(...pos))), hi = Math.ceil(Math.log10(Math.max(...pos)));
  if (hi === lo) hi++;
  while (hi - lo < min) { lo--; if (hi - lo < min) hi++; }
  return [lo, hi];
}

/**
 * The roofline plot: GFLOP/s over arithmetic intensity (flop/B), log-log. The memory roof is
 * readGBs × intensity, the compute ceiling the FMA peak (dot-product peaks dashed, where the
 * machine has them); each kernel with a time and flops is a point, coloured as in the swimlane.
 * Kernels that cannot be placed (no flops, no time, no counts) are listed under it by the caller.
 */
export function rooflineSvg(m: RooflineModel, colours: Map<string, string> = kernelColours(m.rows.map((r) => r.kernel))): string {
  const l = m.limits;
  if (!l) return "";
  const pts = m.rows.filter((r) => r.intensity !== null && r.intensity > 0 && r.gflops !== null && r.gflops > 0);
  // the dot-product ceilings where a kernel's flops can run on them (the machine's are in the limits line)
  const ceilings = [{ name: "FMA", g: l.fmaGflops, dash: "", unit: "GFLOP/s" }];
  if (l.dotGflops && m.rows.some((r) => (r.flopsByUnit?.dotBf16 ?? 0) > 0)) ceilings.push({ name: `bf16 dot${l.dotInstruction ? ` (${l.dotInstruction})` : ""}`, g: l.dotGflops, dash: "6 4", unit: "GFLOP/s" });
  if (l.dotInt8Gops && m.rows.some((r) => (r.flopsByUnit?.dotInt8 ?? 0) > 0)) ceilings.push({ name: `int8 dot${l.dotInt8Instruction ? ` (${l.dotInt8Instruction})` : ""}`, g: l.dotInt8Gops, dash: "2 3", unit: "GOPS" });
  const ridge = l.fmaGflops / l.readGBs;
  const [xlo, xhi] = decades([...pts.map((r) => r.intensity!), ridge / 10, ridge * 10], 4);
  const topG = Math.max(...ceilings.map((c) => c.g));
  const [ylo, yhi] = decades([...pts.map((r) => r.gflops!), topG * 2, l.readGBs * 10 ** xlo], 3);
  const pw = PLOT.w - PLOT.left - PLOT.right, ph = PLOT.h - PLOT.top - PLOT.bottom;
  const X = (v: number) => PLOT.left + ((Math.log10(v) - xlo) / (xhi - xlo)) * pw;
  const Y = (v: number) => PLOT.top + (1 - (Math.log10(v) - ylo) / (yhi - ylo)) * ph;
  const f1 = (v: number) => v.toFixed(1);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="roofline" width="${PLOT.w}" height="${PLOT.h}" viewBox="0 0 ${PLOT.w} ${PLOT.h}" style="max-width:100%;height:auto" role="img" aria-label="${esc(`roofline of ${m.program}`)}">`);
  out.push(`<rect x="${PLOT.left}" y="${PLOT.top}" width="${pw}" height="${ph}" fill="#fbfcfd" stroke="#bbb"/>`);
  const sup = (e: number) => `10<tspan dy="-5" font-size="8.5">${e}</tspan>`;
  for (let e = xlo; e <= xhi; e++) {
    const x = X(10 ** e);
    out.push(`<line x1="${f1(x)}" y1="${PLOT.top}" x2="${f1(x)}" y2="${PLOT.top + ph}" stroke="#888" stroke-opacity="0.18"/>`);
    out.push(`<text x="${f1(x)}" y="${PLOT.top + ph + 16}" font-size="10.5" fill="#444" text-anchor="middle">${sup(e)}</text>`);
  }
  for (let e = ylo; e <= yhi; e++) {
    const y = Y(10 ** e);
    out.push(`<line x1="${PLOT.left}" y1="${f1(y)}" x2="${PLOT.left + pw}" y2="${f1(y)}" stroke="#888" stroke-opacity="0.18"/>`);
    out.push(`<text x="${PLOT.left - 6}" y="${f1(y + 4)}" font-size="10.5" fill="#444" text-anchor="end">${sup(e)}</text>`);
  }
  out.push(`<text x="${PLOT.left + pw / 2}" y="${PLOT.h - 8}" font-size="11.5" fill="#333" text-anchor="middle">arithmetic intensity (flop / byte of tensor traffic)</text>`);
  out.push(`<text x="14" y="${PLOT.top + ph / 2}" font-size="11.5" fill="#333" text-anchor="middle" transform="rotate(-90 14 ${PLOT.top + ph / 2})">GFLOP/s</text>`);
  out.push(`<clipPath id="rf-clip"><rect x="${PLOT.left}" y="${PLOT.top}" width="${pw}" height="${ph}"/></clipPath>`);
  out.push(`<g clip-path="url(#rf-clip)">`);
  // each roof: the memory slope up to the ceiling's ridge, then the ceiling
  ceilings.forEach((c, i) => {
    const r = c.g / l.readGBs, x0 = 10 ** xlo, x1 = 10 ** xhi;
    const pts2 = [[x0, l.readGBs * x0], [r, c.g], [x1, c.g]].map(([a, b]) => `${f1(X(a))},${f1(Y(b))}`).join(" ");
    out.push(`<polyline class="roof" data-roof="${esc(c.name)}" points="${pts2}" fill="none" stroke="${i === 0 ? "#1b1b1b" : "#666"}" stroke-width="${i === 0 ? 2 : 1.4}"${c.dash ? ` stroke-dasharray="${c.dash}"` : ""}/>`);
  });
  out.push(`</g>`);
  // labels of the roofs
  const slopeAt = 10 ** (xlo + 0.6);
  const sx = X(slopeAt), sy = Y(l.readGBs * slopeAt);
  const ang = (Math.atan2(-(Y(l.readGBs * slopeAt * 10) - sy), X(slopeAt * 10) - sx) * 180) / Math.PI;
  out.push(`<text x="${f1(sx)}" y="${f1(sy - 6)}" font-size="11" fill="#1b1b1b" transform="rotate(${(-ang).toFixed(1)} ${f1(sx)} ${f1(sy - 6)})">memory ${sig3(l.readGBs)} GB/s</text>`);
  // ceiling labels above their lines, highest first, kept 13 px apart
  let lastY = Infinity;
  [...ceilings].sort((a, b) => a.g - b.g).forEach((c) => {
    const y = Math.min(Y(c.g) - 5, lastY - 13);
    lastY = y;
    out.push(`<text x="${PLOT.left + pw - 4}" y="${f1(y)}" font-size="11" fill="${c.dash ? "#555" : "#1b1b1b"}" text-anchor="end">${esc(`${c.name} ${sig3(c.g)} ${c.unit}`)}</text>`);
  });
  // the kernels, labels nudged apart where they would overlap
  const placed: { x0: number; x1: number; y0: number; y1: number }[] = [];
  const free = (b: { x0: number; x1: number; y0: number; y1: number }) => placed.every((q) => b.x1 < q.x0 || b.x0 > q.x1 || b.y1 < q.y0 || b.y0 > q.y1);
  for (const r of [...pts].sort((a, b) => Y(a.gflops!) - Y(b.gflops!))) {
    const cx = X(r.intensity!), cy = Y(r.gflops!);
    const fill = colours.get(r.kernel) ?? "#4e79a7";
    const tw = r.kernel.length * 6.3;
    const right = cx + 9 + tw <= PLOT.left + pw;
    let box = { x0: right ? cx + 9 : cx - 9 - tw, x1: right ? cx + 9 + tw : cx - 9, y0: cy - 7, y1: cy + 6 };
    for (let k = 1; k <= 8 && !free(box); k++) {
      const dy = (k % 2 ? 1 : -1) * Math.ceil(k / 2) * 13;
      const b = { ...box, y0: cy - 7 + dy, y1: cy + 6 + dy };
      if (free(b)) { box = b; break; }
    }
    placed.push(box);
    const ly = box.y0 + 11;
    const tip = `${r.kernel}: ${sig3(r.intensity!)} flop/B, ${sig3(r.gflops!)} GFLOP/s, ${sig3(r.gbps ?? 0)} GB/s` +
      (r.fraction !== null ? `, ${pct(r.fraction)} of its ${r.bound} roof` : "") + (r.lostUs !== null ? `, ${fmtUs(r.lostUs)} lost` : "") +
      (r.us !== null ? ` (${fmtUs(r.us)}${r.tasks !== null ? `, ${r.tasks} task${r.tasks === 1 ? "" : "s"}` : ""})` : "");
    out.push(`<g data-kernel="${esc(r.kernel)}"><circle class="kernel" cx="${f1(cx)}" cy="${f1(cy)}" r="6" fill="${fill}" stroke="#fff" stroke-width="1.5"><title>${esc(tip)}</title></circle>` +
      `<text x="${f1(box.x0)}" y="${f1(ly)}" font-size="11" fill="#222">${esc(r.kernel)}</text></g>`);
  }
  out.push(`</svg>`);
  return out.join("\n");
}

/** The plot, its legend, the table and what could not be placed: the section the DFX pages show (`heading`: with its own title). */
export function rooflineSection(m: RooflineModel, colours: Map<string, string> = kernelColours(m.rows.map((r) => r.kernel)), heading = true): string {
  const body: string[] = [];
  const what = m.per === "launch" ? `per launch, times the median of ${m.launches} launch${m.launches === 1 ? "" : "es"}` : `total over ${m.launches} launches`;
  if (heading) body.push(`<h2 style="font-size:15px;margin:18px 0 2px">Roofline: ${esc(m.program)} on ${esc(m.platform)}</h2>`);
  body.push(`<p class="sub">${esc(m.limits ? `${what}; ${limitsLine(m.limits)}` : `${what}; no limits measured`)}</p>`);
  const plotted = new Set(m.rows.filter((r) => r.intensity !== null && r.intensity > 0 && r.gflops !== null && r.gflops > 0).map((r) => r.kernel));
  if (m.limits) {
    body.push(legendHtml(new Map([...colours].filter(([k]) => plotted.has(k)))));
    body.push(`<div>${rooflineSvg(m, colours)}</div>`);
  }
  const off = m.rows.filter((r) => !plotted.has(r.kernel)).map((r) => {
    const why = r.note ?? (r.flops === 0 ? `no flops (data movement only): ${num(r.gbps, sig3)} GB/s, ${num(r.fraction, pct)} of the memory roof` : "no rate");
    return `${esc(r.kernel)}: ${esc(why)}`;
  });
  if (off.length && m.limits) body.push(`<p class="sub">not on the plot: ${off.join("; ")}</p>`);
  const head = COLUMNS.map((c) => `<th>${esc(c.head)}</th>`).join("");
  const rows = m.rows.map((r) => `<tr>${COLUMNS.map((c) => `<td>${esc(c.cell(r))}</td>`).join("")}</tr>`).join("");
  body.push(`<table class="stats"><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table>`);
  for (const n of aboveNotes(m)) body.push(`<p class="sub">${esc(n)}</p>`);
  for (const n of m.notes) body.push(`<p class="sub warn">${esc(n)}</p>`);
  return body.join("\n");
}

export interface RooflineHtmlOptions { title?: string; source?: string }

/** A page of its own: the roofline section (`tspto inspect --roofline`). */
export function renderRooflineHtml(m: RooflineModel, opts: RooflineHtmlOptions = {}): string {
  const title = opts.title ?? `Roofline: ${m.program} on ${m.platform}`;
  return page(title, [`<h1>${esc(title)}</h1>`, opts.source ? `<p class="sub">from ${esc(opts.source)}</p>` : "", rooflineSection(m, undefined, false)].join("\n"));
}
