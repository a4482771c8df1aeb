// The tspto build plugins (src/plugin/core.ts; tspto/esbuild, tspto/rollup, tspto/vite): kernels
// found at build time with their original source, site and folded constants, precompiled to IR;
// the same kernel compiled through the plugin's bundle and through Node gives structurally equal
// IR (src/ir/equal.ts); without precompiled IR for the call's types the page parses as usual.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { randn, zeros, type HostTensor } from "tspto";
import tsptoEsbuild from "tspto/esbuild";
import tsptoRollup from "tspto/rollup";
import tsptoVite from "tspto/vite";
import { transformKernels } from "../../src/plugin/core.js";
import { precompiledHits, precompiledOf } from "../../src/dsl/precompiled.js";
import { programsEqual } from "../../src/ir/equal.js";
import type { Program } from "../../src/ir/index.js";
import * as direct from "./fixtures/kernels.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/kernels.ts", import.meta.url));
type Lowerable = { lower(...a: unknown[]): Program; def: Parameters<typeof precompiledOf>[0] };

describe("the tspto build plugin", () => {
  it("finds pl.jit, @pl.jit kernels, wraps each with its site and precompiles those whose annotations fix every type", () => {
    const code = readFileSync(FIXTURE, "utf8");
    const r = transformKernels(code, FIXTURE)!;
    expect(r.kernels).toBe(4);
    expect(r.precompiled).toBe(3); // plain's pl.Tensor has no shape
    expect(r.code.split("\n").length).toBe(code.split("\n").length); // lines keep their numbers
    expect(r.code).toContain('from "tspto/capture"');
    // the kernels' part of the module, named relative to the build root and versioned by content
    expect(r.code).toMatch(/__tspto_source\("test\/plugin\/fixtures\/kernels\.ts\\u0000[0-9a-f]{16}", "\\n\\n\\nimport \{ pl \} from/);
    expect(r.code).toMatch(/__tspto_source\("test\/plugin\/fixtures\/consts\.ts\\u0000[0-9a-f]{16}", "\\nexport const SCALE = 0.5;"/); // the imported module's constants travel too
    const head = r.code.slice(0, r.code.indexOf("// Kernels of the plugin tests"));
    expect(head).toContain("__tspto_source(");
    expect(head).not.toContain("an annotated softmax"); // the file's header comment stays out of the captured text
    expect(r.code).not.toContain(dirname(FIXTURE));
    expect(r.code).toMatch(/@__tspto_site\("test\/plugin\/fixtures\/kernels\.ts\\u0000[0-9a-f]{16}", 22, 3, /);
    expect(transformKernels(code, FIXTURE, { precompile: false })!.code).toMatch(/__tspto_site\("[^"]+kernels\.ts\\u0000[0-9a-f]{16}", 22, 3, undefined, pl\.jit\)/);
    expect(transformKernels(code, FIXTURE, { root: dirname(FIXTURE) })!.code).toMatch(/__tspto_site\("kernels\.ts\\u0000/);
    expect(transformKernels("export const x = 1;", "/a/b.ts")).toBeNull();
    expect(transformKernels(code, "/app/node_modules/x/kernels.ts")).toBeNull();
  });

  it("the three adapters are default-exported factories over the one transform", () => {
    expect(tsptoVite().enforce).toBe("pre");
    expect(tsptoVite().name).toBe("tspto");
    const roll = tsptoRollup();
    expect(roll.transform(readFileSync(FIXTURE, "utf8"), FIXTURE)?.code).toContain("__tspto_site(");
    expect(roll.resolveId("typescript", "/x/node_modules/tspto/dist/browser/chunks/chunk-A.js")).toBe("\0tspto-no-parser");
    expect(tsptoRollup({ parser: true }).resolveId("typescript", "/x/node_modules/tspto/dist/browser/chunks/chunk-A.js")).toBeNull();
    expect(roll.resolveId("typescript", "/app/src/main.ts")).toBeNull();
    expect(typeof tsptoEsbuild().setup).toBe("function");
  });

  it("the same kernels compiled through an esbuild bundle made with the plugin and through Node give structurally equal IR", async () => {
    const { build } = await import("esbuild");
    const dir = mkdtempSync(join(tmpdir(), "tspto-plugin-"));
    const out = join(dir, "bundle.mjs");
    await build({ entryPoints: [FIXTURE], bundle: true, format: "esm", platform: "node", outfile: out, external: ["tspto", "tspto/*"], plugins: [tsptoEsbuild()], target: "es2022", logLevel: "error" });
    const bundled = (await import(/* @vite-ignore */ out)) as typeof direct;
    const cases: [string, Lowerable, Lowerable, HostTensor[]][] = [
      ["softmax", bundled.softmax as never, direct.softmax as never, [randn([8, 32], { seed: 1 }), zeros([8, 32])]],
      ["linear", bundled.linear as never, direct.linear as never, [randn([16, 24], { seed: 2 }), randn([24, 40], { seed: 3 }), randn([1, 40], { seed: 4 }), zeros([16, 40])]],
      ["K.scaled", bundled.K.scaled as never, direct.K.scaled as never, [randn([8, 32], { seed: 5 }), zeros([8, 32])]],
    ];
    for (const [name, viaPlugin, viaNode, args] of cases) {
      expect(precompiledOf(viaPlugin.def)?.programs.length, name).toBe(1);
      expect(precompiledOf(viaNode.def), name).toBeUndefined();
      expect(viaPlugin.def.site?.file, name).toBe("test/plugin/fixtures/kernels.ts");
      const before = precompiledHits();
      const a = viaPlugin.lower(...args);
      expect(precompiledHits(), `${name} lowered from its precompiled IR`).toBe(before + 1);
      const b = viaNode.lower(...args);
      expect(programsEqual(a, b), name).toBeNull();
    }
    // no precompiled program for other shapes: the bundle's kernel parses its registered source
    const p = bundled.plain as unknown as Lowerable, q = direct.plain as unknown as Lowerable;
    expect(precompiledOf(p.def)?.programs).toEqual([]);
    expect(programsEqual(p.lower(randn([4, 8], { seed: 6 }), zeros([4, 8])), q.lower(randn([4, 8], { seed: 6 }), zeros([4, 8])))).toBeNull();
  }, 120_000);
});
