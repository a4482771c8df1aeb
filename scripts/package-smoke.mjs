#!/usr/bin/env node
// The package as users meet it (`npm run test:package`, run by .ci/run): build, `npm pack`,
// check the tarball's contents, install it into a temporary application that has no tsx,
// and run a kernel from every kind of app: plain ESM, CommonJS, JavaScript emitted by tsc
// from a decorated static method, esbuild bundles (ESM and CommonJS, tspto inlined), a .ts
// file under tsx, and a vitest test of the app. Then type-check an app against the
// published declarations with the strictest common flags, with and without @types/node,
// under moduleResolution node16, nodenext and bundler, and check that mistakes are type
// errors. Prints one line per check and exits non-zero on the first failure.
//
// The native addon is built once for the repository (npm ci); the app reuses that build
// (same sources, same Node) unless TSPTO_SMOKE_BUILD_ADDON=1, which runs the package's own
// install script in the app (`npm rebuild tspto`, ~1 min).
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = (name) => join(repo, "node_modules", ".bin", name);
const work = mkdtempSync(join(tmpdir(), "tspto-smoke-"));
const app = join(work, "app");
const env = { ...process.env, TSPTO_CACHE_DIR: join(work, "cache"), npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
delete env.NODE_OPTIONS;
let failed = false;
const t0 = performance.now();

function ok(what, t = null) {
  console.log(`ok   ${what}${t === null ? "" : ` (${((performance.now() - t) / 1000).toFixed(1)} s)`}`);
}
function fail(what, detail) {
  console.log(`FAIL ${what}\n${String(detail).trimEnd().split("\n").map((l) => `     ${l}`).join("\n")}`);
  failed = true;
}
/** Runs a command; returns { status, out } (stdout + stderr). */
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: app, env, encoding: "utf8", timeout: 240_000, ...opts });
  return { status: r.status ?? 1, out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}
function expectRun(what, cmd, args, expected, opts) {
  const t = performance.now();
  const r = run(cmd, args, opts);
  if (r.status === 0 && r.out.includes(expected)) ok(what, t);
  else fail(what, `exit ${r.status}, expected output containing ${JSON.stringify(expected)}:\n${r.out.slice(-3000)}`);
  return r;
}

try {
  // ------------------------------------------------------------------ pack
  let t = performance.now();
  execFileSync("npm", ["run", "build", "--silent"], { cwd: repo, env, stdio: ["ignore", "ignore", "inherit"] });
  const packed = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], { cwd: repo, env, encoding: "utf8" }))[0];
  const files = packed.files.map((f) => f.path);
  const tarball = join(work, packed.filename);
  const forbidden = files.filter((f) => /^(test|bench|\.ci|examples|src|scripts\/(?!install\.mjs)|native\/build)\//.test(f) || /(^|\/)\.npmrc$|tsconfig|vitest/.test(f));
  const required = ["LICENSE", "README.md", "package.json", "bin/tspto.mjs", "scripts/install.mjs", "dist/index.js", "dist/index.d.ts", "dist/index.js.map",
    "dist/dsl/language.js", "dist/dsl/language.d.ts", "native/binding.gyp", "native/include/tspto_abi.h",
    "dist/browser/index.js", "dist/browser/language.js", "dist/browser/capture.js", "dist/capture.js",
    "dist/plugin/vite.js", "dist/plugin/vite.d.ts", "dist/plugin/rollup.js", "dist/plugin/esbuild.js", "dist/plugin/core.js"];
  const missing = required.filter((f) => !files.includes(f));
  if (forbidden.length || missing.length) fail("tarball contents", `unexpected: ${forbidden.join(", ") || "none"}; missing: ${missing.join(", ") || "none"}`);
  else ok(`tarball ${packed.filename}: ${files.length} files, ${(packed.size / 1024).toFixed(0)} KiB, no test/ bench/ .ci/ src/`, t);

  // ------------------------------------------------------------------ install into an app
  t = performance.now();
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "smoke-app", version: "1.0.0", private: true, type: "module" }, null, 2));
  const install = run("npm", ["install", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", tarball]);
  if (install.status !== 0) throw new Error(`npm install of the tarball failed:\n${install.out}`);
  const pkgDir = join(app, "node_modules", "tspto");
  if (existsSync(join(app, "node_modules", "tsx")) || existsSync(join(app, "node_modules", "vitest"))) fail("no development dependencies in the app", "tsx or vitest was installed");
  else ok("tarball installed into an app (no tsx, no vitest)", t);

  writeFileSync(join(app, "esm.mjs"), `import { pl, randn, zeros, assertClose } from "tspto";
const add = pl.jit(function add(a, b, out) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [64, 64]), pl.load(b, [0, 0], [64, 64])), [0, 0], out);
  });
  return out;
});
const A = randn([64, 64], { seed: 0 }), B = randn([64, 64], { seed: 1 }), out = zeros([64, 64]);
add(A, B, out);
assertClose(out, A.add(B), { rtol: 1e-6 });
console.log("kernel ok: " + (process.argv[2] ?? "esm"));
`);
  // the addon is missing until it is built: the error names the command that builds it in an app
  expectRun("without the addon, the error says `npm rebuild tspto`", process.execPath, ["-e",
    `import("tspto").then(({ ChipWorker, RunConfig }) => { try { new ChipWorker(new RunConfig({ platform: "cpu" })); console.log("no error"); } catch (e) { console.log(e.message); } })`],
  "npm rebuild tspto");

  t = performance.now();
  if (process.env.TSPTO_SMOKE_BUILD_ADDON === "1") {
    const r = run("npm", ["rebuild", "tspto", "--foreground-scripts"]);
    if (r.status !== 0) throw new Error(`npm rebuild tspto failed:\n${r.out}`);
    ok("npm rebuild tspto built the addon in the app", t);
  } else {
    const built = join(repo, "native", "build", "Release", "tspto_native.node");
    if (!existsSync(built)) throw new Error(`${built} is missing: run npm ci (or npm run build:native) in the repository first`);
    mkdirSync(join(pkgDir, "native", "build", "Release"), { recursive: true });
    copyFileSync(built, join(pkgDir, "native", "build", "Release", "tspto_native.node"));
    ok("reused the repository's addon build (TSPTO_SMOKE_BUILD_ADDON=1 builds it in the app)", t);
  }

  // the install script's second half, as it runs in an app (dist/ present): the precompiled header
  expectRun("the install script builds the precompiled header from dist/ (--pch-only)", process.execPath,
    [join(pkgDir, "scripts", "install.mjs"), "--pch-only"], "tspto: precompiled header ready");

  // ------------------------------------------------------------------ kernels from every kind of app
  const imp = run(process.execPath, ["-e", `const t = performance.now(); import("tspto").then(() => console.log((performance.now() - t).toFixed(0)))`]);
  ok(`import "tspto" in a new process: ${imp.out.trim()} ms`);
  expectRun("plain ESM (.mjs)", process.execPath, ["esm.mjs", "esm"], "kernel ok: esm");
  // the same kernel again, from the disk cache: the TypeScript compiler is not loaded
  writeFileSync(join(app, "hit.mjs"), `import { createRequire } from "node:module";
await import("./esm.mjs");
const loaded = Object.keys(createRequire(import.meta.url).cache).some((k) => /[\\\\/]typescript[\\\\/]lib[\\\\/]typescript\\.js$/.test(k));
console.log(loaded ? "typescript loaded" : "typescript not loaded");
`);
  expectRun("a disk-cache hit in a new process does not load the TypeScript compiler", process.execPath, ["hit.mjs", "hit"], "typescript not loaded");

  writeFileSync(join(app, "cjs.cjs"), readFileSync(join(app, "esm.mjs"), "utf8")
    .replace(`import { pl, randn, zeros, assertClose } from "tspto";`, `const { pl, randn, zeros, assertClose } = require("tspto");`)
    .replace("[64, 64]", "[32, 32]").replaceAll("[64, 64]", "[32, 32]"));
  expectRun("CommonJS (.cjs, require of the ESM package)", process.execPath, ["cjs.cjs", "cjs"], "kernel ok: cjs");

  const decorated = `import { pl, randn, zeros, assertClose } from "tspto";
export class Kernels {
  @pl.jit
  static scale(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.store(pl.mul(pl.load(a, [0, 0], [32, 32]), 3), [0, 0], out);
    });
    return out;
  }
}
const A = randn([32, 32], { seed: 2 }), out = zeros([32, 32]);
Kernels.scale(A, out);
assertClose(out, A.mul(3), { rtol: 1e-6 });
console.log("kernel ok: LABEL");
`;
  writeFileSync(join(app, "decorated.ts"), decorated.replace("LABEL", "tsc"));
  writeFileSync(join(app, "tsconfig.emit.json"), JSON.stringify({
    compilerOptions: { target: "ES2022", module: "nodenext", moduleResolution: "nodenext", strict: true, outDir: "out", types: [] }, files: ["decorated.ts"],
  }));
  let r = run(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.emit.json"]);
  if (r.status !== 0) fail("tsc emits the decorated kernel", r.out);
  expectRun("JavaScript emitted by tsc (a @pl.jit static method, TC39 decorators)", process.execPath, ["out/decorated.js"], "kernel ok: tsc");

  // a bundle inlining tspto: esbuild renames the pl namespace (language_exports.at) and lowers decorators
  writeFileSync(join(app, "bundled.ts"), `import { pl, randn, zeros, assertClose } from "tspto";
class Kernels {
  @pl.jit
  static triple(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.mul(pl.load(a, [0, 0], [48, 48]), 3), [0, 0], out); });
    return out;
  }
}
const sub = pl.jit(function sub(a, b, out) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.sub(pl.load(a, [0, 0], [48, 48]), pl.load(b, [0, 0], [48, 48])), [0, 0], out); });
  return out;
});
const A = randn([48, 48], { seed: 4 }), B = randn([48, 48], { seed: 5 });
assertClose(Kernels.triple(A, zeros([48, 48])), A.mul(3), { rtol: 1e-6 });
assertClose(sub(A, B, zeros([48, 48])), A.sub(B), { rtol: 1e-6 });
console.log("kernel ok: bundle");
`);
  for (const format of ["esm", "cjs"]) {
    const outfile = `bundle.${format === "esm" ? "mjs" : "cjs"}`;
    r = run(bin("esbuild"), ["bundled.ts", "--bundle", "--platform=node", "--target=node20", `--format=${format}`, `--outfile=${outfile}`, "--log-level=error"]);
    if (r.status !== 0) fail(`esbuild --format=${format} bundles the app`, r.out);
    expectRun(`an esbuild bundle (--format=${format}, tspto inlined: renamed pl namespace, lowered decorators)`, process.execPath, [outfile], "kernel ok: bundle");
  }

  // a page: the "browser" condition selects dist/browser, the tspto/esbuild plugin precompiles the kernel
  writeFileSync(join(app, "page.ts"), `import { pl, RunConfig, ChipWorker } from "tspto";
export const k = pl.jit(function k(x: pl.Tensor<[4, 8], pl.FP32>, out: pl.Out<pl.Tensor<[4, 8], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, 2)); });
});
export const cfg = new RunConfig({ platform: "webgpu" });
export const W = ChipWorker;
`);
  writeFileSync(join(app, "page_build.mjs"), `import { build } from ${JSON.stringify(join(repo, "node_modules", "esbuild", "lib", "main.js"))};
import tspto from "tspto/esbuild";
const r = await build({ entryPoints: ["page.ts"], bundle: true, platform: "browser", format: "esm", minify: true, write: false, metafile: true, plugins: [tspto()], logLevel: "error" });
const inputs = Object.keys(r.metafile.inputs);
const js = r.outputFiles[0].text;
if (!inputs.some((f) => f.includes("tspto/dist/browser/"))) throw new Error("tspto did not resolve to dist/browser: " + inputs.join(" "));
if (inputs.some((f) => f.includes("typescript/lib"))) throw new Error("the TypeScript compiler was bundled");
if (!js.includes("tspto-precompiled-1")) throw new Error("the kernel was not precompiled");
console.log("page ok: " + js.length + " bytes");
`);
  expectRun("a browser bundle of the app (esbuild --platform=browser with tspto/esbuild: dist/browser, kernel precompiled, no TypeScript compiler)", process.execPath, ["page_build.mjs"], "page ok");

  writeFileSync(join(app, "tsx_kernel.ts"), decorated.replace("LABEL", "tsx").replaceAll("scale", "quad").replaceAll("3)", "4)"));
  expectRun("a .ts file under tsx", bin("tsx"), ["tsx_kernel.ts"], "kernel ok: tsx");

  mkdirSync(join(app, "test"), { recursive: true });
  writeFileSync(join(app, "test", "kernel.test.ts"), `import { expect, test } from "vitest";
import { pl, randn, zeros } from "tspto";
const neg = pl.jit(function neg(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.neg(pl.load(a, [0, 0], [16, 16])), [0, 0], out);
  });
  return out;
});
test("a kernel in the app's vitest", () => {
  const A = randn([16, 16], { seed: 3 }), out = zeros([16, 16]);
  neg(A, out);
  expect(Array.from(out.data)).toEqual(Array.from(A.data, (x) => -x));
});
`);
  expectRun("a vitest test of the app", process.execPath, [join(repo, "node_modules", "vitest", "vitest.mjs"), "run", "--root", app, "--dir", "test"], "1 passed");

  expectRun("the CLI runs from dist/ (npx tspto --version)", process.execPath, [join(app, "node_modules", ".bin", "tspto"), "--version"], packed.version);

  // ------------------------------------------------------------------ types
  writeFileSync(join(app, "types.ts"), `import { pl, zeros, randn, RunConfig, type HostTensor } from "tspto";
import * as lang from "tspto/language";
const k = pl.jit(function k(a: pl.Tensor, n: number, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.mul(pl.load(a, [0, 0], [8, 8]), n), [0, 0], out); });
  return out;
});
const a = randn([8, 8]);
const r: HostTensor = k(a, 2, zeros([8, 8]));
k({ data: new Float32Array(64), shape: [8, 8] }, 2, zeros([8, 8]), new RunConfig({ platform: "interp" }));
// @ts-expect-error a string where the kernel takes a number
k(a, "2", zeros([8, 8]));
// @ts-expect-error one argument missing
k(a, 2);
// @ts-expect-error one argument too many
k(a, 2, zeros([8, 8]), zeros([8, 8]));
export const used: unknown[] = [r, lang.FP32];
`);
  const strict = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, noPropertyAccessFromIndexSignature: true, noImplicitOverride: true, noEmit: true, target: "ES2022", lib: ["ES2022"] };
  const typeRoots = join(repo, "node_modules", "@types");
  for (const [module, moduleResolution] of [["node16", "node16"], ["nodenext", "nodenext"], ["preserve", "bundler"]]) {
    for (const withNode of [false, true]) {
      const name = `tsconfig.${moduleResolution}${withNode ? ".node" : ""}.json`;
      writeFileSync(join(app, name), JSON.stringify({ compilerOptions: { ...strict, module, moduleResolution, types: withNode ? ["node"] : [], ...(withNode ? { typeRoots: [typeRoots] } : {}) }, files: ["types.ts"] }));
      const t1 = performance.now();
      r = run(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", name]);
      const what = `tsc --strict on an app (moduleResolution ${moduleResolution}, ${withNode ? "with" : "without"} @types/node): clean, and mistakes are errors`;
      if (r.status === 0) ok(what, t1);
      else fail(what, r.out);
    }
  }
} catch (e) {
  fail("smoke test", e?.stack ?? e);
} finally {
  if (!failed && !process.env.TSPTO_SMOKE_KEEP) rmSync(work, { recursive: true, force: true });
  else console.log(`work directory: ${work}`);
}
console.log(`package smoke test: ${failed ? "FAILED" : "passed"} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
process.exit(failed ? 1 : 0);
