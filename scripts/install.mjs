#!/usr/bin/env node
// tspto's install step (`npm install` / `npm rebuild tspto`): builds the native runtime addon
// with node-gyp (offline, against Node's headers), then precompiles the generated programs'
// standard headers. Plain JavaScript, so that it runs where tspto is a dependency (no tsx).
//   node scripts/install.mjs             preflight, addon, precompiled header
//   node scripts/install.mjs --pch-only  the precompiled header only (after `npm run build`)
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** The path of a command on $PATH (or the command itself when it is a path), or null. */
function which(cmd) {
  if (cmd.includes("/")) return existsSync(cmd) ? cmd : null;
  for (const d of (process.env.PATH ?? "").split(delimiter)) {
    if (d && existsSync(join(d, cmd))) return join(d, cmd);
  }
  return null;
}

/** What is missing to build the addon, as one line naming what to install; null when nothing is. */
export function preflight() {
  const missing = [];
  const cxx = process.env.CXX?.trim();
  if (cxx ? !which(cxx.split(/\s+/)[0]) : !["c++", "g++", "clang++"].some(which)) {
    missing.push(cxx ? `the C++ compiler $CXX=${cxx}` : "a C++17 compiler (g++ or clang++)");
  }
  if (process.platform !== "win32" && !which("make")) missing.push("make");
  if (!process.env.PYTHON && !which("python3") && !which("python")) missing.push("python3");
  if (!missing.length) return null;
  const how = process.platform === "darwin" ? "`xcode-select --install`" : "e.g. `sudo apt-get install g++ make python3` (Debian/Ubuntu) or `sudo dnf install gcc-c++ make python3`";
  return `tspto: cannot build its native runtime: ${missing.join(", ")} not found; install ${missing.length > 1 ? "them" : "it"} (${how}), then run \`npm rebuild tspto\``;
}

async function precompiledHeader() {
  const built = join(root, "dist", "targets", "cpu", "index.js");
  if (!existsSync(built)) {
    console.log("tspto: precompiled header deferred (dist/ not built yet; `npm run build` builds it)");
    return;
  }
  try {
    const { installPrecompiledHeader } = await import(pathToFileURL(built).href);
    const h = installPrecompiledHeader();
    console.log(h ? `tspto: precompiled header ready (${h}.gch)` : "tspto: no precompiled header (toolchain without gcc PCH support); programs compile without one");
  } catch (e) {
    // best effort: without it the first compile builds the header, or compiles without one
    console.log(`tspto: precompiled header skipped (${e?.message ?? e})`);
  }
}

function nodeGyp() {
  try {
    return [process.execPath, createRequire(join(root, "package.json")).resolve("node-gyp/bin/node-gyp.js")];
  } catch {
    // npm's own copy (npm sets npm_config_node_gyp for scripts)
    const bundled = process.env.npm_config_node_gyp;
    return bundled ? [process.execPath, bundled] : ["node-gyp"];
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!process.argv.includes("--pch-only")) {
    const why = preflight();
    if (why) {
      console.error(why);
      process.exit(1);
    }
    const [cmd, ...pre] = nodeGyp();
    const r = spawnSync(cmd, [...pre, "rebuild", "--directory", join(root, "native")], { stdio: "inherit", cwd: root });
    if (r.status !== 0) {
      console.error(`tspto: building the native runtime failed (node-gyp exit ${r.status ?? r.signal}); the output above says why. Fix it, then run \`npm rebuild tspto\``);
      process.exit(r.status || 1);
    }
  }
  await precompiledHeader();
}
