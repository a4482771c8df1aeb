// `npm run web`: builds tspto's browser build from src (scripts/build-browser.mjs) and serves the
// demo with vite's dev server (`npm run web -- --build <dir>` builds the demo into <dir> instead,
// printing its JavaScript's size; the browser test uses that). Options after --build:
// --parser (ship the run-time parser: no precompiled kernels, typescript bundled).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";
import { demoConfig } from "./config.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..", "..");
const argv = process.argv.slice(2);
const dist = join(mkdtempSync(join(tmpdir(), "tspto-web-")), "dist", "browser");
const r = spawnSync(process.execPath, [join(ROOT, "scripts", "build-browser.mjs"), dist], { stdio: ["ignore", "ignore", "inherit"] });
if (r.status !== 0) process.exit(r.status ?? 1);
const vite = await import("vite");
const b = argv.indexOf("--build");
if (b >= 0) {
  const parser = argv.includes("--parser");
  const outDir = resolve(argv[b + 1] ?? join(HERE, "dist"));
  await vite.build({ ...demoConfig({ browserDist: dist, outDir, plugin: parser ? { parser: true, precompile: false } : {} }), configFile: false });
  console.log(`demo built into ${outDir}${parser ? " (with the run-time parser)" : ""}`);
} else {
  const server = await vite.createServer({ ...demoConfig({ browserDist: dist }), configFile: false });
  await server.listen();
  console.log(`tspto demo: ${server.resolvedUrls?.local[0] ?? "(no url)"} (Ctrl-C to stop)`);
}
