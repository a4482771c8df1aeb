// The roofline report rendered (src/tools/roofline.ts): the terminal table's format, roofline.json
// read back (and its errors), the plot (every kernel a point on or under its roof, log-log, the
// memory slope and the compute ceilings), and `tspto inspect --roofline` / `--trace` drawing it
// from a real benchmark's dfx_outputs/roofline.json.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ir, pl, benchmark, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { main } from "../../src/tools/cli.js";
import { DfxFormatError } from "../../src/tools/dfx.js";
import { formatRooflineTable, parseRoofline, renderRooflineHtml, rooflineSvg, type RooflineModel } from "../../src/tools/roofline.js";
import { wellFormedProblems } from "./wellformed.js";

const MODEL: RooflineModel = {
  program: "demo", platform: "cpu", launches: 20, per: "launch",
  limits: { readGBs: 20, fmaGflops: 200, dotGflops: 400, dotInstruction: "vdpbf16ps", threads: 2, cpu: "Test CPU", isa: "avx512bf16" },
  notes: [],
  rows: [
    { kernel: "demo_incore_1", tasks: 2, calls: 1, bytes: 12 * 2 ** 20, flops: 2 ** 20, flopsByUnit: { vector: 2 ** 20, dotBf16: 0, dotInt8: 0 }, us: 2000, gbps: 6.29, gflops: 0.524, intensity: 0.0833, roofUs: 629.1, bound: "memory", fraction: 0.3146, aboveRoof: false, lostUs: 1370.9, note: null },
    { kernel: "demo_incore_0", tasks: 4, calls: 1, bytes: 1310720, flops: 33554432, flopsByUnit: { vector: 33554432, dotBf16: 0, dotInt8: 0 }, us: 400, gbps: 3.28, gflops: 83.9, intensity: 25.6, roofUs: 167.8, bound: "compute", fraction: 0.4194, aboveRoof: false, lostUs: 232.2, note: null },
    { kernel: "demo_incore_2", tasks: 1, calls: 1, bytes: 196608, flops: 16384, flopsByUnit: { vector: 16384, dotBf16: 0, dotInt8: 0 }, us: 1.5, gbps: 131, gflops: 10.9, intensity: 0.0833, roofUs: 9.83, bound: "memory", fraction: 1, aboveRoof: true, lostUs: 0, note: null },
    { kernel: "demo_incore_3", tasks: 1, calls: 1, bytes: null, flops: null, flopsByUnit: null, us: 3.25, gbps: null, gflops: null, intensity: null, roofUs: null, bound: null, fraction: null, aboveRoof: false, lostUs: null, note: "counts unknown: the branch taken at k.ts:3 depends on a value known only at run time, and its sides cost differently" },
  ],
};

describe("formatRooflineTable", () => {
  it("prints the header, the limits, one aligned row per kernel in the report's order, and what the marks and gaps mean", () => {
    expect(formatRooflineTable(MODEL)).toBe([
      "roofline of demo on cpu, per launch (times: the median of 20 launches), sorted by time lost against the roof",
      "  limits: read 20.0 GB/s, FMA 200 GFLOP/s, bf16 dot 400 GFLOP/s (vdpbf16ps); ridge 10.0 flop/B; 2 threads of Test CPU, ISA path avx512bf16",
      "  kernel         tasks      bytes   flops       us  GB/s  GFLOP/s  flop/B  bound    of roof  lost us",
      "  demo_incore_1      2  12.00 MiB  1.05 M  2000.00  6.29    0.524  0.0833  memory     31.5%  1370.90",
      "  demo_incore_0      4   1.25 MiB  33.6 M   400.00  3.28     83.9    25.6  compute    41.9%   232.20",
      "  demo_incore_2      1  192.0 KiB  16.4 K     1.50   131     10.9  0.0833  memory   100.0%*     0.00",
      "  demo_incore_3      1          —       —     3.25     —        —       —  —              —        —",
      "  * memory-bound and faster than the streaming-read roof: its data came from the caches, not DRAM (of roof capped at 100%)",
      "  demo_incore_3: counts unknown: the branch taken at k.ts:3 depends on a value known only at run time, and its sides cost differently",
    ].join("\n"));
  });

  it("a profile's totals, a report without limits and its notes", () => {
    const text = formatRooflineTable({ ...MODEL, per: "total", launches: 3, limits: null, rows: [], notes: ["no roofs: the 'x' platform measures no machine limits"] });
    expect(text).toBe([
      "roofline of demo on cpu, total over 3 launches, sorted by time lost against the roof",
      "  limits: none measured",
      "  kernel  tasks  bytes  flops  us  GB/s  GFLOP/s  flop/B  bound  of roof  lost us",
      "  (no task kernel)",
      "  note: no roofs: the 'x' platform measures no machine limits",
    ].join("\n"));
  });
});

describe("parseRoofline", () => {
  const doc = { format: "tspto-roofline-1", ...MODEL };
  it("reads back what the runtime writes", () => {
    expect(parseRoofline(JSON.parse(JSON.stringify(doc)), "f.json")).toEqual(MODEL);
  });
  it("names the file and the field of a malformed document", () => {
    const bad = (j: unknown) => { try { parseRoofline(j, "/x/roofline.json"); } catch (e) { expect(e).toBeInstanceOf(DfxFormatError); return (e as Error).message; } throw new Error("parsed"); };
    expect(bad([])).toBe("/x/roofline.json: not a JSON object");
    expect(bad({ ...doc, format: "x" })).toBe('/x/roofline.json: "format" must be "tspto-roofline-1", got "x"');
    expect(bad({ ...doc, rows: {} })).toBe('/x/roofline.json: "rows" must be an array');
    expect(bad({ ...doc, rows: [{ kernel: "k", us: "1" }] })).toBe('/x/roofline.json: rows[0].us must be a number or null, got "1"');
    expect(bad({ ...doc, rows: [{ kernel: "k", bound: "disk" }] })).toBe('/x/roofline.json: rows[0].bound must be "memory", "compute" or null');
    expect(bad({ ...doc, limits: { readGBs: 0, fmaGflops: 1 } })).toBe("/x/roofline.json: limits.readGBs must be a positive number, got 0");
  });
});

/** The roof (GFLOP/s) at intensity `x`: the memory slope up to the ceiling (the dot unit's for a kernel on it). */
const roofAt = (x: number, dot = false) => Math.min(MODEL.limits!.readGBs * x, dot ? MODEL.limits!.dotGflops! : MODEL.limits!.fmaGflops);

describe("rooflineSvg", () => {
  it("draws only the FMA roof when no kernel's flops can run on a dot-product unit", () => {
    const svg = rooflineSvg(MODEL);
    expect([...svg.matchAll(/<polyline class="roof" data-roof="([^"]+)"/g)].map((m) => m[1])).toEqual(["FMA"]);
  });

  it("draws the roofs and every kernel with a rate as a point on or under its roof (log-log)", () => {
    // a bf16 matmul: its flops can run on the bf16 dot unit, whose ceiling is then drawn (dashed)
    const dotRow = { ...MODEL.rows[1], kernel: "demo_incore_4", flopsByUnit: { vector: 0, dotBf16: 33554432, dotInt8: 0 }, us: 200, gflops: 167.8, gbps: 6.55, roofUs: 83.9, fraction: 0.4195, lostUs: 116.1 };
    const model = { ...MODEL, rows: [...MODEL.rows, dotRow] };
    const svg = rooflineSvg(model);
    expect(wellFormedProblems(`<div>${svg}</div>`)).toEqual([]);
    const roofs = [...svg.matchAll(/<polyline class="roof" data-roof="([^"]+)" points="([^"]+)"/g)];
    expect(roofs.map((m) => m[1])).toEqual(["FMA", "bf16 dot (vdpbf16ps)"]);
    // pixels per decade from the geometry: the two ceilings are log10(400/200) decades apart in y,
    // their ridges (peak / readGBs: 10 and 20 flop/B) as far apart in x
    const pts = roofs.map((m) => m[2].split(" ").map((q) => q.split(",").map(Number)));
    const [fma, dot] = pts;
    expect(fma).toHaveLength(3);
    expect(fma[1][1]).toBeCloseTo(fma[2][1], 6); // the ceiling is flat
    expect(fma[0][1]).toBeGreaterThan(fma[1][1]); // the slope rises (SVG y grows downwards)
    const l = MODEL.limits!, ridge = l.fmaGflops / l.readGBs;
    const sx = (dot[1][0] - fma[1][0]) / Math.log10(2), sy = (fma[1][1] - dot[1][1]) / Math.log10(2);
    expect(sx).toBeGreaterThan(0);
    expect(sy).toBeGreaterThan(0);
    // the slope is 1 in log-log: as many decades up as across
    expect((fma[0][1] - fma[1][1]) / sy).toBeCloseTo((fma[1][0] - fma[0][0]) / sx, 1);
    const X = (x: number) => fma[1][0] + sx * Math.log10(x / ridge);
    const Y = (g: number) => fma[1][1] + sy * Math.log10(l.fmaGflops / g);
    const circles = [...svg.matchAll(/<g data-kernel="([^"]+)"><circle class="kernel" cx="([\d.]+)" cy="([\d.]+)"/g)];
    // kernels with a rate are points; the one without counts is not
    expect(circles.map((m) => m[1]).sort()).toEqual(["demo_incore_0", "demo_incore_1", "demo_incore_2", "demo_incore_4"]);
    for (const [, k, cx, cy] of circles) {
      const row = model.rows.find((r) => r.kernel === k)!;
      // (within 1.5 px: the coordinates are written to a tenth of a pixel, the scale read back from them)
      expect(Math.abs(Number(cx) - X(row.intensity!))).toBeLessThan(1.5);
      expect(Math.abs(Number(cy) - Y(row.gflops!))).toBeLessThan(1.5);
      // on or under the roof at its intensity, unless it beat the roof (from the caches)
      const onDot = (row.flopsByUnit?.dotBf16 ?? 0) > 0;
      if (!row.aboveRoof) expect(Number(cy)).toBeGreaterThanOrEqual(Y(roofAt(row.intensity!, onDot)) - 0.5);
      else expect(Number(cy)).toBeLessThan(Y(roofAt(row.intensity!, onDot)));
    }
  });

  it("a report without limits has no plot; its page says so", () => {
    expect(rooflineSvg({ ...MODEL, limits: null })).toBe("");
    const html = renderRooflineHtml({ ...MODEL, limits: null, notes: ["no roofs: none"] });
    expect(html).toContain("no limits measured");
    expect(html).toContain("no roofs: none");
    expect(wellFormedProblems(html)).toEqual([]);
  });
});

describe("tspto inspect --roofline / --trace", () => {
  const work = mkdtempSync(join(tmpdir(), "tspto-roofline-html-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const run = async (...args: string[]) => {
    let out = "", err = "";
    const code = await main(args, { out: (s) => { out += s; }, err: (s) => { err += s; } });
    return { code, out, err };
  };
  const k = pl.jit(function rfKernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.matmul(a, b)); });
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(d, pl.exp(c)); });
    return d;
  });

  it("renders the report of a benchmark with { roofline: true }: a plot point per kernel, under the swimlane too", async () => {
    const dir = join(work, "artifact");
    const a = randn([128, 128]), b = randn([128, 128]), c = zeros([128, 128]), d = zeros([128, 128]);
    const compiled = ir.compile(k.lower(a, b, c, d), { platform: "cpu", outputDir: dir });
    const w = new ChipWorker(new RunConfig({ platform: "cpu", enableChipSwimlane: 1 }));
    try {
      benchmark(compiled, [a, b, c, d], { roofline: true, rounds: 5, worker: w });
    } finally { w.close(); }
    const r = await run("inspect", dir, "--roofline");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(join(dir, "dfx_outputs", "roofline.html"));
    const html = readFileSync(r.out.trim(), "utf8");
    expect(wellFormedProblems(html)).toEqual([]);
    expect(html).toContain("Roofline: rfKernel");
    for (const kn of ["rfKernel_incore_0", "rfKernel_incore_1"]) expect(html).toContain(`<g data-kernel="${kn}"><circle class="kernel"`);
    const t = await run("inspect", dir, "--trace");
    expect(t.code).toBe(0);
    const page = readFileSync(t.out.trim(), "utf8");
    expect(page).toContain('class="timeline"');
    expect(page).toContain('class="roofline"');
  });

  it("a roofline.json tspto cannot read: --roofline fails naming it, --trace still draws the swimlane and says why the plot is missing", async () => {
    const dir = join(work, "artifact");
    const rf = join(dir, "dfx_outputs", "roofline.json");
    writeFileSync(rf, `{"format":"tspto-roofline-1","program":"p","platform":"cpu","launches":1,"per":"launch","rows":7}`);
    const r = await run("inspect", dir, "--roofline");
    expect(r.code).toBe(1);
    expect(r.err).toBe(`tspto inspect: ${rf}: "rows" must be an array\n`);
    const t = await run("inspect", dir, "--trace");
    expect(t.code).toBe(0);
    const page = readFileSync(t.out.trim(), "utf8");
    expect(page).toContain('class="timeline"');
    expect(page).not.toContain('class="roofline"');
    expect(page).toContain(`roofline not drawn: ${rf}: &quot;rows&quot; must be an array`);
  });

  it("--roofline without a report names the file and how to make it", async () => {
    const dir = join(work, "plain");
    ir.compile(k.lower(randn([128, 128]), randn([128, 128]), zeros([128, 128]), zeros([128, 128])), { platform: "cpu", outputDir: dir });
    const r = await run("inspect", dir, "--roofline");
    expect(r.code).toBe(1);
    expect(r.err).toContain(`tspto inspect: --roofline: ${join(dir, "dfx_outputs", "roofline.json")} not found`);
    expect(r.err).toContain("benchmark(compiled, args, { roofline: true })");
  });
});
