// The pl namespace and kernel definitions: constants, declarations for every registry op,
// jit wrappers and their defs, the definition registry, and locating source (file, toString).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import * as pl from "../../src/language.js";
import { pl as plFromRoot } from "tspto";
import * as plFromPackage from "tspto/language";
import {
  allKernelDefs, defineKernel, findKernelDefs, isKernelDef, kernelDefOf, kernelDefsIn, locateKernel, paramInfo, parseKernel,
  roundTrip, sourceHash, type KernelDef,
} from "../../src/dsl/index.js";
import { opsOf, defOf, f32, fn, parse, where } from "./helpers.js";
import { plOpNames, scalarT, tensorT, type Scope } from "../../src/ir/index.js";

const FILE = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("the pl namespace", () => {
  it("exports dtype, memory and level constants usable as values and types", () => {
    const dt: pl.FP32 = pl.FP32;
    expect([pl.FP32, pl.FP16, pl.BF16, pl.INT8, pl.INT16, pl.INT32, pl.INT64, pl.UINT8, pl.BOOL]).toEqual(
      ["float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"]);
    const m: pl.Mem = pl.Mem.Acc;
    expect([pl.Mem.Vec, pl.Mem.Mat, pl.Mem.Left, pl.Mem.Right, m, pl.Mem.Bias]).toEqual(["Vec", "Mat", "Left", "Right", "Acc", "Bias"]);
    const lvl: pl.Level = pl.Level.CORE_GROUP;
    expect(lvl).toBe("CORE_GROUP");
    expect(dt).toBe("float32");
  });

  it("declares every registry op and the statement helpers", () => {
    const members = pl as unknown as Record<string, unknown>;
    for (const name of plOpNames()) expect(typeof members[name], `pl.${name}`).toBe("function");
    for (const name of ["at", "range", "forRange", "whileLoop", "ifElse", "yield", "break", "continue", "const", "withAttrs", "jit"]) {
      expect(typeof members[name], `pl.${name}`).toBe("function");
    }
    expect(typeof pl.jit.incore).toBe("function");
    expect(typeof pl.jit.inline).toBe("function");
  });

  it("is the same module from the package root and tspto/language", () => {
    expect(plFromRoot.jit).toBe(pl.jit);
    expect(plFromPackage.add).toBe(pl.add);
  });
});

const helper = pl.jit.incore(function helper(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.store(pl.load(a, [0, 0], [8, 8]), [0, 0], out);
});
const inlined = pl.jit.inline(function inlined(t: pl.Tile) {
  return pl.abs(t);
});
const entry = pl.jit(function entry(a: pl.Tensor, out: pl.Out<pl.Tensor>) { // MARK:entry
  helper(a, out);
});

describe("jit wrappers", () => {
  it("record KernelDefs with their definition site", () => {
    for (const [k, kind, name] of [[entry, "orchestration", "entry"], [helper, "incore", "helper"], [inlined, "inline", "inlined"]] as const) {
      const def = kernelDefOf(k)!;
      expect(isKernelDef(def)).toBe(true);
      expect(def).toMatchObject({ kind, name, decorated: false, opts: {} });
      expect(def.site?.file).toBe(FILE);
      expect(typeof k).toBe("function");
    }
    expect(defOf(entry).site!.line).toBe(where(FILE, "MARK:entry", "pl.jit").line);
    expect(defOf(entry).site!.col).toBe(where(FILE, "MARK:entry", "jit(").col);
  });

  it("keeps a registry by file and name", () => {
    expect(findKernelDefs("helper", FILE)).toContain(defOf(helper));
    expect(kernelDefsIn(FILE)).toEqual(expect.arrayContaining([defOf(helper), defOf(inlined), defOf(entry)]));
    expect(allKernelDefs()).toContain(defOf(entry));
    expect(findKernelDefs("helper", "/nowhere.ts")).toEqual([]);
  });

  it("sub-kernel wrappers are not entries", () => {
    expect(() => (helper as unknown as (...a: unknown[]) => unknown)(1, 2)).toThrow(/pl\.jit\.incore kernel/);
  });

  it("an entry calling an incore kernel by name", () => {
    const p = parse(entry, f32(8, 8), f32(8, 8));
    expect(p.functions.map((f) => f.name).sort()).toEqual(["entry", "helper"]);
    expect(opsOf(fn(p))).toEqual(["call:helper"]);
    expect(fn(p).params.map((q) => q.dir)).toEqual(["in", "out"]);
  });
});

// ---------------------------------------------------------------- source fallback

describe("source location", () => {
  it("finds a function defined elsewhere in the file and passed by name", () => {
    function byName(a: pl.Tensor) {
      return a;
    }
    const k = pl.jit.incore(byName);
    const ks = locateKernel(defOf(k));
    expect(ks.src.file).toBe(FILE);
    expect(ks.src.fromFile).toBe(true);
    expect(ks.node.getText(ks.src.sf)).toMatch(/^function byName/);
  });

  it("falls back to fn.toString() when no source file is available", () => {
    const dyn = new Function("return function dyn(a, out) {\n  pl.at(pl.Level.CORE_GROUP, () => {\n    pl.store(pl.exp(pl.load(a, [0, 0], [4, 4])), [0, 0], out);\n  });\n}")();
    const def = defineKernel("orchestration", dyn, {}, "dyn", null);
    const ks = locateKernel(def);
    expect(ks.src.fromFile).toBe(false);
    expect(ks.src.file).toBe("<fn.toString>");
    const p = parseKernel(def, [{ name: "a", type: f32(4, 4) }, { name: "out", type: f32(4, 4) }]);
    roundTrip(p);
    const f = fn(p);
    expect(f.params.map((q) => q.dir)).toEqual(["in", "out"]); // inferred: no annotations in plain JS
    const store = (f.body[0] as Scope).body[0];
    expect(store.span).toMatchObject({ file: "<fn.toString>", line: 3, col: 5 });
    expect(paramInfo(def).map((i) => i.kind)).toEqual(["unknown", "unknown"]);
  });

  it("parses a method's toString (wrapped in an object literal) and reports errors relative to the snippet", () => {
    // (a vitest-transformed method's toString names its imports differently, so build one from text)
    const obj = new Function("return { m(a) {\n  return pl.exp(a);\n} }")() as { m: (a: unknown) => unknown };
    const def = defineKernel("orchestration", obj.m, {}, "m", { file: "/does/not/exist.ts", line: 1, col: 1 });
    expect(locateKernel(def).src.fromFile).toBe(false);
    expect(() => parseKernel(def, [{ name: "a", type: f32(4, 4) }])).toThrow(/Misplaced tensor op 'tensor\.exp'[^]*<fn\.toString>:2:10\n {2}2 \| {3}return pl\.exp\(a\);/);
  });

  it("a kernel in a file that changed on disk is re-read (text hash)", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-dsl-"));
    const file = join(dir, "k.ts");
    writeFileSync(file, "const k = pl.jit(function k(a) {\n  return a;\n});\n");
    const def = defineKernel("orchestration", function k(a: unknown) { return a; }, {}, "k", { file, line: 1, col: 15 });
    const h1 = sourceHash(def);
    expect(locateKernel(def).src.fromFile).toBe(true);
    writeFileSync(file, "const k = pl.jit(function k(a) {\n  const b = a;\n  return b;\n});\n// longer\n");
    expect(sourceHash(def)).not.toBe(h1);
    expect(locateKernel(def).node.getText()).toContain("const b = a;");
  });
});

// ---------------------------------------------------------------- outside vitest

describe("under tsx", () => {
  it("captures the source-mapped site, parses the file and folds consts", () => {
    const dir = mkdtempSync(join(ROOT, "test/dsl/fixtures/tmp-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const script = join(dir, "script.ts");
    writeFileSync(script, [
      `import * as pl from "../../../../src/language.js";`,
      `import { parseKernel, paramInfo } from "../../../../src/dsl/index.js";`,
      `import { tensorT } from "../../../../src/ir/index.js";`,
      `const N = 8 * 2;`,
      ``,
      `class K {`,
      `  @pl.jit`,
      `  static dec(a: pl.Tensor, out: pl.Out<pl.Tensor>) {`,
      `    pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.exp(pl.load(a, [0, 0], [N, N])), [0, 0], out); });`,
      `  }`,
      `}`,
      `const k = pl.jit(function k(a: pl.Tensor, out: pl.Out<pl.Tensor>) {`,
      `  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.exp(pl.load(a, [0, 0], [N, N])), [0, 0], out); });`,
      `});`,
      `const t = tensorT([16, 16], "float32");`,
      `for (const f of [k, K.dec]) {`,
      `  const def = (f as unknown as { def: any }).def;`,
      `  const p = parseKernel(def, paramInfo(def).map((i) => ({ name: i.name, type: t })));`,
      `  const s = (p.functions[0].body[0] as any).body[0].span;`,
      `  console.log(JSON.stringify({ name: p.entry, site: def.site.line, line: s.line, col: s.col, file: s.file === def.site.file }));`,
      `}`,
    ].join("\n"));
    const out = execFileSync(join(ROOT, "node_modules/.bin/tsx"), [script], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { name: "k", site: 12, line: 13, col: 38, file: true },
      { name: "dec", site: 8, line: 9, col: 40, file: true },
    ]);
  }, 60_000);
});

// ---------------------------------------------------------------- defs are plain data

describe("KernelDef", () => {
  it("is frozen and carries options", () => {
    const k = pl.jit.inline(function opt(a: pl.Tensor) { return a; }, { scope: { X: 1 }, attrs: { a: 1 } });
    const def: KernelDef = defOf(k);
    expect(Object.isFrozen(def)).toBe(true);
    expect(def.opts).toEqual({ scope: { X: 1 }, attrs: { a: 1 } });
    expect(scalarT("int64")).toEqual(scalarT("int64"));
    expect(tensorT([1], "float32").kind).toBe("tensor");
  });
});
