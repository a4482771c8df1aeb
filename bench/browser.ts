// Section 16 of bench/run.ts (BENCH_ONLY=16 or BENCH_ONLY=browser): tspto in a browser.
//  16a  tspto's browser build alone (src/index.browser.ts: front end, passes, webgpu + interp,
//       runtime, host tensors, benchmark, DFX view; the run-time parser stubbed as the plugin
//       does), esbuild --minify, gzip -9.
//  16b  the demo page's JavaScript (examples/web built by vite with tspto/vite), kernels precompiled.
//  16c  the same demo shipping the run-time parser (TypeScript bundled, kernels parsed in the page).
//  16d  time from page load to the first kernel result (the demo, headless Chromium, SwiftShader).
//  16e/f softmax and MatMul: tspto vs onnxruntime-web's WebGPU backend in the same page on the same
//       adapter (bench/browser/page.ts), end to end per call (upload, dispatch, read back).
// Needs Chromium (chromium-headless-shell) for 16d-16f; without it those rows say so.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { gzipSync } from "node:zlib";

export interface BrowserRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null }

const CHROMIUM = process.env.TSPTO_CHROMIUM ?? "/usr/lib/chromium/chromium-headless-shell";
const FLAGS = ["--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--enable-features=Vulkan", "--no-sandbox", "--disable-background-networking", "--no-first-run"];
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
const load = () => loadavg().map((x) => x.toFixed(2)).join(" / ");

function jsSize(dir: string): { min: number; gz: number } {
  const files = readdirSync(join(dir, "assets")).filter((f) => f.endsWith(".js")).map((f) => readFileSync(join(dir, "assets", f)));
  return { min: files.reduce((s, b) => s + b.length, 0), gz: files.reduce((s, b) => s + gzipSync(b, { level: 9 }).length, 0) };
}

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".onnx": "application/octet-stream" };
function serve(routes: Record<string, string>, extra: Record<string, Uint8Array | string> = {}): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const p = normalize((req.url ?? "/").split("?")[0]);
    if (extra[p] !== undefined) { res.writeHead(200, { "content-type": TYPES[extname(p)] ?? "text/html" }).end(extra[p]); return; }
    for (const [prefix, dir] of Object.entries(routes)) {
      if (!p.startsWith(prefix)) continue;
      const f = join(dir, p.slice(prefix.length) || "index.html");
      if (f.startsWith(dir) && existsSync(f) && statSync(f).isFile()) { res.writeHead(200, { "content-type": TYPES[extname(f)] ?? "application/octet-stream" }).end(readFileSync(f)); return; }
    }
    res.writeHead(404).end();
  });
  return new Promise((r) => server.listen(0, "127.0.0.1", () => { const a = server.address(); r({ server, url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}` }); }));
}

async function inChromium<T>(url: string, global: string, timeoutMs = 600_000): Promise<T> {
  const puppeteer = (await import("puppeteer-core")).default;
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: "shell", args: FLAGS });
  try {
    const page = await browser.newPage();
    page.on("pageerror", (e) => console.error(`page: ${String(e)}`));
    await page.goto(url);
    await page.waitForFunction(`globalThis.${global} !== undefined`, { timeout: timeoutMs });
    return (await page.evaluate(`globalThis.${global}`)) as T;
  } finally {
    await browser.close();
  }
}

/** ONNX models of one Softmax (axis -1) and one MatMul, built with onnx-proto. */
function models(sr: number, sc: number, mm: number): { softmax: Uint8Array; matmul: Uint8Array } {
  const { onnx } = createRequire(import.meta.url)("onnx-proto") as typeof import("onnx-proto");
  const F = onnx.TensorProto.DataType.FLOAT;
  const vi = (name: string, dims: number[]) => ({ name, type: { tensorType: { elemType: F, shape: { dim: dims.map((d) => ({ dimValue: d })) } } } });
  const model = (nodes: object[], inputs: object[], outputs: object[]) => onnx.ModelProto.encode({
    irVersion: 8, opsetImport: [{ domain: "", version: 17 }], producerName: "tspto-bench",
    graph: { name: "g", node: nodes, input: inputs, output: outputs },
  } as never).finish();
  return {
    softmax: model([{ opType: "Softmax", input: ["x"], output: ["y"], attribute: [{ name: "axis", type: onnx.AttributeProto.AttributeType.INT, i: -1 }] }], [vi("x", [sr, sc])], [vi("y", [sr, sc])]),
    matmul: model([{ opType: "MatMul", input: ["a", "b"], output: ["y"] }], [vi("a", [mm, mm]), vi("b", [mm, mm])], [vi("y", [mm, mm])]),
  };
}

export async function browserBench(root: string): Promise<BrowserRow[]> {
  const rows: BrowserRow[] = [];
  const tmp = mkdtempSync(join(tmpdir(), "tspto-bench-browser-"));
  const dist = join(tmp, "dist", "browser");
  const built = spawnSync(process.execPath, [join(root, "scripts", "build-browser.mjs"), dist], { stdio: ["ignore", "ignore", "inherit"] });
  if (built.status !== 0) throw new Error("scripts/build-browser.mjs failed");

  // 16a: tspto alone, as a page with precompiled kernels gets it
  const { build } = await import("esbuild");
  const { browserOptions } = (await import("../scripts/build-browser.mjs")) as { browserOptions(extra?: object): Record<string, unknown> };
  const base = browserOptions();
  const stub = { name: "no-parser", setup(b: { onResolve: Function; onLoad: Function }) {
    b.onResolve({ filter: /^typescript$/ }, () => ({ path: "typescript", namespace: "stub" }));
    b.onLoad({ filter: /.*/, namespace: "stub" }, () => ({ contents: "export const __tsptoNoParser = true; export default { __tsptoNoParser: true };", loader: "js" }));
  } };
  const r = await build({ ...base, external: [], plugins: [stub, ...(base.plugins as object[])], entryPoints: [join(root, "src", "index.browser.ts")], minify: true, write: false } as never) as { outputFiles: { contents: Uint8Array }[] };
  const js = r.outputFiles[0].contents, gz = gzipSync(js, { level: 9 }).length;
  rows.push({ id: "16a", what: "tspto's browser build (pl.jit, ChipWorker, webgpu + interp, passes, benchmark, DFX view; no TypeScript compiler), esbuild --minify, gzip -9",
    tspto: `${kb(js.length)} min, ${kb(gz)} min + gzip`, peer: "", result: `${kb(gz)}`, goal: "≤ 150 KB (min + gzip)", met: gz <= 150 * 1024 });

  // 16b / 16c: the demo page, precompiled and with the run-time parser
  const tsx = join(root, "node_modules", "tsx", "dist", "cli.mjs");
  const demo = join(tmp, "demo"), demoParser = join(tmp, "demo-parser");
  for (const [dir, extra] of [[demo, []], [demoParser, ["--parser"]]] as const) {
    const b = spawnSync(process.execPath, [tsx, join(root, "examples", "web", "run.ts"), "--build", dir, ...extra], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    if (b.status !== 0) throw new Error(`examples/web/run.ts --build ${extra.join(" ")} failed`);
  }
  const a = jsSize(demo), p = jsSize(demoParser);
  rows.push({ id: "16b", what: "demo page JS (examples/web: 3 kernels precompiled by tspto/vite, vite build), min + gzip -9", tspto: `${kb(a.min)} min, ${kb(a.gz)} min + gzip`, peer: "", result: kb(a.gz), goal: "no TypeScript compiler shipped", met: !readFileSync(join(demo, "assets", readdirSync(join(demo, "assets")).find((f) => f.endsWith(".js"))!), "utf8").includes("Identifier expected") });
  rows.push({ id: "16c", what: "the same demo with the run-time parser (TypeScript bundled, kernels parsed from source in the page)", tspto: `${kb(p.min)} min, ${kb(p.gz)} min + gzip`, peer: "", result: kb(p.gz), goal: "", met: null });

  if (!existsSync(CHROMIUM)) {
    rows.push({ id: "16d-f", what: `page timings (skipped: Chromium not found at ${CHROMIUM})`, tspto: "", peer: "", result: "", goal: "", met: null });
    return rows;
  }
  // 16d: page load to the first kernel result
  for (const [id, dir, what] of [["16d", demo, "precompiled"], ["16d'", demoParser, "run-time parser"]] as const) {
    const { server, url } = await serve({ "/": dir });
    try {
      const got = await inChromium<{ firstResultMs: number; error?: string; results: Record<string, { ok: boolean }> }>(`${url}/`, "__tspto");
      if (got.error) throw new Error(got.error);
      rows.push({ id, what: `demo (${what}): page load to the first kernel result (softmax on webgpu read back; SwiftShader, headless Chromium; load ${load()})`,
        tspto: `${got.firstResultMs.toFixed(0)} ms`, peer: "", result: `${got.firstResultMs.toFixed(0)} ms; all agree with interp: ${Object.values(got.results).every((x) => x.ok)}`, goal: "", met: null });
    } finally { server.close(); }
  }
  // 16e / 16f: tspto vs onnxruntime-web WebGPU, same page, same adapter
  const page = join(tmp, "page");
  const tsptoEsbuild = (await import("../src/plugin/esbuild.js")).default;
  await build({
    entryPoints: [join(root, "bench", "browser", "page.ts")], bundle: true, platform: "browser", format: "esm", minify: true, target: "es2022",
    outfile: join(page, "page.js"), logLevel: "error", plugins: [tsptoEsbuild() as never],
    alias: { tspto: join(dist, "index.js"), "tspto/capture": join(dist, "capture.js"), "tspto/language": join(dist, "language.js") },
  });
  const m = models(32, 256, 64);
  const ortDir = join(root, "node_modules", "onnxruntime-web", "dist");
  const { server, url } = await serve({ "/ort/": ortDir + "/", "/": page + "/" }, {
    "/": `<!doctype html><meta charset="utf-8"><title>tspto vs onnxruntime-web</title><body><script type="module" src="/page.js"></script></body>`,
    "/softmax.onnx": m.softmax, "/matmul.onnx": m.matmul,
  });
  try {
    const rounds = Number(process.env.BENCH_BROWSER_ROUNDS ?? 20);
    const got = await inChromium<{ error?: string; adapter: string; results: Record<string, { tsptoUs: number; ortUs: number; maxAbsDiff: number }> }>(`${url}/?rounds=${rounds}`, "__bench");
    if (got.error) throw new Error(got.error);
    for (const [id, name, shape] of [["16e", "softmax", "[32, 256] f32, rows"], ["16f", "matmul", "[64, 64] × [64, 64] f32"]] as const) {
      const x = got.results[name];
      const ratio = x.ortUs / x.tsptoUs;
      rows.push({ id, what: `${name} ${shape} on ${got.adapter}: tspto vs onnxruntime-web 1.30 WebGPU, same page, same adapter, end to end per call (median of ${rounds}; max abs diff ${x.maxAbsDiff.toExponential(1)} from onnxruntime-web; load ${load()})`,
        tspto: `${x.tsptoUs.toFixed(0)} µs`, peer: `${x.ortUs.toFixed(0)} µs`, result: `${ratio.toFixed(2)}×`, goal: "≥ 1×", met: ratio >= 1 });
    }
  } finally { server.close(); }
  return rows;
}
