// The demo page (examples/web) in a real browser: built with vite and the tspto/vite plugin (in a
// child process: examples/web/run.ts --build), served on localhost, opened in headless Chromium
// (Debian's chromium-headless-shell through puppeteer-core, SwiftShader's WebGPU adapter). Each of
// its kernels (softmax, a matmul with its epilogue, a transformer block) must run on webgpu and
// agree with interp in the page, with benchmark timings and a drawn swimlane; no console error
// may appear; a screenshot is written. Skipped, saying why, where Chromium is not installed.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CHROMIUM = process.env.TSPTO_CHROMIUM ?? "/usr/lib/chromium/chromium-headless-shell";
const why = existsSync(CHROMIUM) ? null : `Chromium not found at ${CHROMIUM} (apt-get install chromium-headless-shell, or set TSPTO_CHROMIUM)`;
if (why) console.warn(`browser demo test skipped: ${why}`);
const FLAGS = ["--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--enable-features=Vulkan", "--no-sandbox",
  "--disable-background-networking", "--disable-component-update", "--no-first-run"];
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".png": "image/png" };

/** Runs a command in a child process (the build must not block this worker's event loop). */
function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => { out += String(d); });
    p.stderr.on("data", (d) => { out += String(d); });
    p.on("error", rej);
    p.on("close", (code) => (code === 0 ? res(out) : rej(new Error(`${cmd} ${args.join(" ")} exited ${code}:\n${out}`))));
  });
}

/** A static file server for a directory on 127.0.0.1 (the network is closed; no CDN). */
function serve(dir: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const p = normalize((req.url ?? "/").split("?")[0]).replace(/^(\.\.[/\\])+/, "");
    const file = join(dir, p === "/" ? "index.html" : p);
    if (!file.startsWith(dir) || !existsSync(file) || !statSync(file).isFile()) { res.writeHead(404).end(); return; }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(readFileSync(file));
  });
  return new Promise((r) => server.listen(0, "127.0.0.1", () => {
    const a = server.address();
    r({ server, url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/` });
  }));
}

interface PageResult {
  error?: string; adapter: string; firstResultMs: number; swimlaneTasks: number;
  results: Record<string, { ok: boolean; maxAbsErr: number; deviceUs: number; hostUs: number; error?: string }>;
}

describe.skipIf(!!why)(why ? `the demo page in headless Chromium (skipped: ${why})` : "the demo page (examples/web) in headless Chromium", () => {
  const dir = mkdtempSync(join(tmpdir(), "tspto-demo-"));
  const site = join(dir, "site");
  let server: Server;
  let url = "";

  beforeAll(async () => {
    await run(process.execPath, [join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), "examples/web/run.ts", "--build", site]);
    ({ server, url } = await serve(site));
  }, 600_000);
  afterAll(() => { server?.close(); });

  it("was built with the plugin: every kernel precompiled, no TypeScript compiler in the page", () => {
    const js = readdirSync(join(site, "assets")).filter((f) => f.endsWith(".js")).map((f) => readFileSync(join(site, "assets", f), "utf8")).join("\n");
    expect(js).toContain("tspto-precompiled-1");
    expect(js).toContain("__tsptoNoParser");
    expect(js).not.toContain("Identifier expected"); // one of TypeScript's diagnostics: its compiler is not bundled
    expect(js.length).toBeLessThan(2_000_000);
  });

  it("runs softmax, a matmul with its epilogue and a transformer block on webgpu, agreeing with interp, with timings, a swimlane, no console error", async () => {
    const puppeteer = (await import("puppeteer-core")).default;
    const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: "shell", args: FLAGS });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
      page.on("pageerror", (e) => { errors.push(String(e)); });
      await page.goto(url);
      await page.waitForFunction("globalThis.__tspto !== undefined", { timeout: 300_000 });
      const got = (await page.evaluate("globalThis.__tspto")) as PageResult;
      expect(got.error).toBeUndefined();
      expect(got.adapter).toMatch(/swiftshader/i);
      expect(Object.keys(got.results)).toEqual(["softmax", "linearRelu", "transformerBlock"]);
      for (const [name, r] of Object.entries(got.results)) {
        expect(r.error, name).toBeUndefined();
        expect(r.ok, name).toBe(true);
        expect(r.maxAbsErr, name).toBeLessThan(2e-3);
        expect(r.deviceUs, name).toBeGreaterThan(0);
        expect(r.hostUs, name).toBeGreaterThan(0);
      }
      expect(got.firstResultMs).toBeGreaterThan(0);
      expect(got.swimlaneTasks).toBeGreaterThan(0);
      const text = await page.evaluate("document.getElementById('results').textContent") as string;
      expect(text.match(/agrees with interp/g)?.length).toBe(3);
      const shot = join(dir, "demo.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(5000);
      expect(errors).toEqual([]);
      console.log(`demo: ${got.adapter}; first result ${got.firstResultMs.toFixed(0)} ms after load; screenshot ${shot}`);
    } finally {
      await browser.close();
    }
  }, 400_000);
});
