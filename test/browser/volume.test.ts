// The page's in-memory volume (src/browser/node/fs.ts) stays bounded: the jit holds the artifacts of
// the specializations it caches (src/artifact/volatile.ts), an evicted or cleared one leaves the
// volume, a page keeps no disk cache; each directory indexes its entries (no call scans the volume).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as vol from "../../src/browser/node/fs.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("the page's in-memory volume", () => {
  it("holds only the artifacts of the specializations the jit caches, and none after clearCache()", async () => {
    const { build } = await import("esbuild");
    const { browserOptions } = (await import(/* @vite-ignore */ join(ROOT, "scripts", "build-browser.mjs"))) as { browserOptions: () => Record<string, unknown> };
    // inside the package, so that the bundle's `typescript` import resolves
    mkdirSync(join(ROOT, "node_modules", ".cache"), { recursive: true });
    const out = join(mkdtempSync(join(ROOT, "node_modules", ".cache", "tspto-volume-")), "volume.mjs");
    await build({ ...browserOptions(), entryPoints: [fileURLToPath(new URL("./volume_entry.ts", import.meta.url))], outfile: out, external: ["typescript"] });
    const r = spawnSync(process.execPath, [out, "300"], { encoding: "utf8", timeout: 120_000, cwd: ROOT });
    const line = r.stdout.split("\n").find((l) => l.startsWith("VOLUME "));
    expect(line, r.stderr.slice(-2000)).toBeTruthy();
    const v = JSON.parse(line!.slice(7)) as { held: { files: number }; cached: number; cleared: { files: number }; firstMs: number; lastMs: number };
    console.log(`volume: ${v.held.files} files for ${v.cached} cached of 300 specializations; ${v.cleared.files} after clearCache(); ${v.firstMs.toFixed(1)} -> ${v.lastMs.toFixed(1)} ms per compile`);
    expect(v.cached).toBe(256); // the jit's in-memory bound
    expect(v.held.files).toBeLessThanOrEqual(v.cached * 4); // program, meta, marker, kernels: no disk cache, no front memo
    expect(v.cleared.files).toBe(0);
  }, 180_000);

  it("indexes directories: readdir, rename and rm see exactly their own subtree", () => {
    vol.mkdirSync("/t/a/b", { recursive: true });
    vol.writeFileSync("/t/a/b/f1", "x");
    vol.writeFileSync("/t/a/f2", "yy");
    vol.mkdirSync("/t/ab");
    vol.writeFileSync("/t/ab/f3", "zzz"); // shares the prefix "/t/a"
    expect(vol.readdirSync("/t")).toEqual(["a", "ab"]);
    vol.renameSync("/t/a", "/t/c");
    expect(vol.readdirSync("/t")).toEqual(["ab", "c"]);
    expect(vol.readFileSync("/t/c/b/f1", "utf8")).toBe("x");
    expect(vol.existsSync("/t/a/b/f1")).toBe(false);
    expect(() => vol.rmdirSync("/t/c")).toThrow(/ENOTEMPTY/);
    expect(() => vol.renameSync("/t/c", "/t/c/b/inside")).toThrow(/EINVAL/);
    vol.rmSync("/t/c", { recursive: true });
    expect(vol.readdirSync("/t")).toEqual(["ab"]);
    expect(vol.readFileSync("/t/ab/f3", "utf8")).toBe("zzz");
    vol.writeFileSync("/t/ab/f4", "w");
    vol.renameSync("/t/ab/f4", "/t/ab/f3"); // over a file
    expect(vol.readdirSync("/t/ab")).toEqual(["f3"]);
    expect(vol.readFileSync("/t/ab/f3", "utf8")).toBe("w");
    vol.unlinkSync("/t/ab/f3");
    vol.rmdirSync("/t/ab");
    expect(vol.readdirSync("/t")).toEqual([]);
    expect(vol.IN_MEMORY_VOLUME).toBe(true);
    expect(vol.volumeStats().files).toBe(0);
  });
});
