// Section 16 of bench/run.ts (BENCH_ONLY=16 or BENCH_ONLY=browser): the size of tspto's browser
// build, src/browser.ts (the webgpu platform over navigator.gpu, the WGSL code generator, the
// orchestration, host tensors; programs lowered ahead of time), bundled for the browser by
// esbuild, minified, and gzip -9 of that. The time from page load to the first result is printed
// by test/browser/webgpu_page.test.ts (headless Chromium on SwiftShader).
import { gzipSync } from "node:zlib";
import { join } from "node:path";

export interface BrowserRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null }

export async function browserBench(root: string): Promise<BrowserRow[]> {
  const { build } = await import("esbuild");
  const r = await build({ entryPoints: [join(root, "src", "browser.ts")], bundle: true, platform: "browser", format: "esm", minify: true, write: false, logLevel: "error" });
  const js = r.outputFiles[0].contents;
  const gz = gzipSync(js, { level: 9 }).length;
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  return [{
    id: "16a", what: "browser build of tspto (src/browser.ts: webgpu device, WGSL generator, orchestration, host tensors), esbuild --minify",
    tspto: `${kb(js.length)} min, ${kb(gz)} min + gzip`, peer: "", result: `${kb(gz)} min + gzip`, goal: "≤ 150 KB (min + gzip)", met: gz <= 150 * 1024,
  }];
}
