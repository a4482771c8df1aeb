// tspto's browser build in a real browser: src/browser.ts bundled for the browser by esbuild
// (./page.ts), served on localhost, opened in headless Chromium (Debian's chromium-headless-shell,
// driven by puppeteer-core) on SwiftShader's WebGPU adapter. Programs are lowered for webgpu in
// Node; the page generates their WGSL, runs them on navigator.gpu and its outputs must agree with
// interp's in Node; no console error may appear; a screenshot is taken. Skipped, saying why,
// where Chromium is not installed ($TSPTO_CHROMIUM or /usr/lib/chromium/chromium-headless-shell).
import { existsSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pl, ir, RunConfig, randn, zeros, assertClose, tensor, type HostTensor } from "tspto";

const CHROMIUM = process.env.TSPTO_CHROMIUM ?? "/usr/lib/chromium/chromium-headless-shell";
const why = existsSync(CHROMIUM) ? null : `Chromium not found at ${CHROMIUM} (apt-get install chromium-headless-shell, or set TSPTO_CHROMIUM)`;
if (why) console.warn(`browser tests skipped: ${why}`);
const FLAGS = ["--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--enable-features=Vulkan", "--no-sandbox"];

const softmaxRows = pl.jit(function softmaxRows(x: pl.Tensor<[32, 200], pl.FP32>, out: pl.Out<pl.Tensor<[32, 200], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.sub(x, pl.rowMax(x)));
    pl.assign(out, pl.div(e, pl.rowSum(e)));
  });
});
const linearRelu = pl.jit(function linearRelu(a: pl.Tensor<[48, 40], pl.FP32>, b: pl.Tensor<[40, 72], pl.FP32>, bias: pl.Tensor<[1, 72], pl.FP32>,
  out: pl.Out<pl.Tensor<[48, 72], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.relu(pl.add(pl.matmul(a, b), bias))); });
});

interface Case { name: string; program: object; params: { nbytes: number; data: number[] | null; out: boolean }[] }

/** A case for the page (the program lowered for webgpu, read back from its artifact) and interp's outputs by parameter. */
function caseOf(name: string, kernel: { lower(...a: unknown[]): unknown; (...a: unknown[]): unknown }, args: HostTensor[], outs: number[]): { c: Case; want: Map<number, HostTensor> } {
  const compiled = ir.compile(kernel.lower(...args) as Parameters<typeof ir.compile>[0], { platform: "webgpu" });
  const program = JSON.parse(readFileSync(join(compiled.outputDir, "program.json"), "utf8")) as object;
  const ref = args.map((a) => a.clone());
  kernel(...ref, new RunConfig({ platform: "interp" }));
  return {
    c: { name, program, params: args.map((a, i) => ({ nbytes: a.nbytes, data: outs.includes(i) ? null : Array.from(a.data as Float32Array), out: outs.includes(i) })) },
    want: new Map(outs.map((i) => [i, ref[i]])),
  };
}

describe.skipIf(!!why)(why ? `tspto in headless Chromium (skipped: ${why})` : "tspto in headless Chromium", () => {
  let server: Server;
  let url = "";
  const cases: { c: Case; want: Map<number, HostTensor> }[] = [];
  const dir = mkdtempSync(join(tmpdir(), "tspto-browser-"));

  beforeAll(async () => {
    cases.push(caseOf("softmaxRows", softmaxRows as never, [randn([32, 200], { seed: 1 }), zeros([32, 200])], [1]));
    cases.push(caseOf("linearRelu", linearRelu as never, [randn([48, 40], { seed: 2 }), randn([40, 72], { seed: 3 }), randn([1, 72], { seed: 4 }), zeros([48, 72])], [3]));
    const { build } = await import("esbuild");
    await build({ entryPoints: [fileURLToPath(new URL("./page.ts", import.meta.url))], bundle: true, platform: "browser", format: "esm", minify: true, outfile: join(dir, "page.js"), logLevel: "error" });
    const files: Record<string, [string, string | Buffer]> = {
      "/": ["text/html", `<!doctype html><html><head><meta charset="utf-8"><title>tspto</title></head><body><h1>tspto on webgpu</h1><p id="status">running</p><table id="results"></table><script type="module" src="./page.js"></script></body></html>`],
      "/page.js": ["text/javascript", readFileSync(join(dir, "page.js"))],
      "/cases.json": ["application/json", JSON.stringify(cases.map((x) => x.c))],
    };
    server = createServer((req, res) => {
      const f = files[(req.url ?? "/").split("?")[0]];
      if (!f) { res.writeHead(404).end(); return; }
      res.writeHead(200, { "content-type": f[0] }).end(f[1]);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const addr = server.address();
    url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}/`;
  }, 300_000);
  afterAll(() => { server?.close(); });

  it("the page runs softmax and a matmul with its epilogue on WebGPU, agreeing with interp, with no console error", async () => {
    const puppeteer = (await import("puppeteer-core")).default;
    const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: "shell", args: FLAGS });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
      page.on("pageerror", (e) => { errors.push(String(e)); });
      await page.goto(url);
      await page.waitForFunction("globalThis.__tspto !== undefined", { timeout: 240_000 });
      const got = (await page.evaluate("globalThis.__tspto")) as { error?: string; adapter: string; firstResultMs: number; outputs: Record<string, Record<number, number[]>> };
      expect(got.error).toBeUndefined();
      expect(got.adapter).toMatch(/swiftshader/i);
      for (const { c, want } of cases) {
        for (const [i, t] of want) {
          assertClose(tensor(Float32Array.from(got.outputs[c.name][i]), { shape: t.shape as number[] }), t, { rtol: 2e-3, atol: 2e-3 });
        }
      }
      expect(got.firstResultMs).toBeGreaterThan(0);
      const shot = join(dir, "page.png");
      await page.screenshot({ path: shot });
      expect(statSync(shot).size).toBeGreaterThan(1000);
      expect(errors).toEqual([]);
      console.log(`browser: ${got.adapter}; first result ${got.firstResultMs.toFixed(0)} ms after load; page.js ${statSync(join(dir, "page.js")).size} bytes; screenshot ${shot}`);
    } finally {
      await browser.close();
    }
  }, 300_000);
});
