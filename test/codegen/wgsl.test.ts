// The WGSL code generator without a GPU: every op that can reach code generation has a WGSL
// formula; what the webgpu platform cannot run is a compile error that says so (int64,
// integer constants beyond i32, orchestration ops that would read device memory); generated
// modules have the promised structure (workgroups of 256, barriers in uniform control flow,
// big tiles in device memory, atomics only for sub-word stores). The modules compile on a
// WebGPU implementation in test/targets/webgpu/.
import { describe, expect, it } from "vitest";
import { allOps, NO_SPAN, TsptoCompileError } from "../../src/ir/index.js";
import "../../src/ir/ops/index.js";
import { generateWgsl, wgslLang, f32Lit, i32Lit } from "../../src/codegen/wgsl/index.js";
import { newNeeds } from "../../src/codegen/wgsl/lang.js";
import { pl, ir, RunConfig, randn, zeros, tensor } from "tspto";
import { replanMemory } from "../../src/passes/index.js";
import { webgpuTarget } from "../../src/targets/webgpu/index.js";
import type { Program } from "../../src/ir/index.js";
import { indexingPrograms } from "../ops/fixtures/indexing.js";

const forWebgpu = (p: Program) => replanMemory(p, { scratchCapacity: webgpuTarget.description.scratchBytes, minTileElemBytes: 4 });
const LOWERED_AWAY = (op: string) => op.startsWith("tensor.") && op !== "tensor.read";
const codeOf = (f: () => unknown): { code: string; message: string } => {
  try { f(); } catch (e) { return { code: (e as TsptoCompileError).code, message: (e as Error).message }; }
  return { code: "", message: "no error" };
};

const softmaxK = pl.jit(function softmaxK(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [64, 256]);
    const tmp = pl.createTile([64, 256], pl.FP32, pl.Mem.Vec);
    const mx: pl.Tile<[64, 1], pl.FP32> = pl.rowMax(t, tmp);
    const e = pl.exp(pl.rowExpandSub(t, mx));
    const s: pl.Tile<[64, 1], pl.FP32> = pl.rowSum(e, tmp);
    pl.store(pl.rowExpandDiv(e, s), [0, 0], out);
  });
  return out;
});
const small = pl.jit(function small(a: pl.Tensor, out: pl.Out<pl.Tensor>, mask: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.exp(t), [0, 0], out);
    pl.store(pl.cmp(t, 0, "gt"), [0, 0], mask);
  });
  return out;
});
const mm = pl.jit(function mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [64, 64]);
    const y = pl.load(b, [0, 0], [64, 64]);
    pl.store(pl.exp(pl.matmul(x, y)), [0, 0], c);
  });
  return c;
});
const intTensor = pl.jit(function intTensor(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, 1)); });
  return out;
});
const bigConst = pl.jit(function bigConst(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.mul(t, 5000000000), [0, 0], out);
  });
  return out;
});

describe("wgsl formulas", () => {
  it("every tile and scalar op of the registry (and tensor.read) has one", () => {
    const L = wgslLang(newNeeds(), () => 0);
    const missing: string[] = [];
    for (const op of allOps()) {
      if (LOWERED_AWAY(op.name) || op.level === "orchestration" || op.loweredBy) continue;
      try { L.emitterFor(op.name, NO_SPAN); } catch { missing.push(op.name); }
    }
    expect(missing).toEqual([]);
  });

  it("an op without a formula is a TsptoCompileError naming it", () => {
    const e = codeOf(() => wgslLang(newNeeds(), () => 0).emitterFor("tile.frobnicate", NO_SPAN));
    expect(e.code).toBe("E_CODEGEN");
    expect(e.message).toContain("the webgpu code generator has no formula for op 'tile.frobnicate'");
    expect(e.message).toContain("src/codegen/wgsl/formulas.ts");
  });

  it("literals: NaN and infinities at run time (a WGSL compiler rejects them as constants), fp32 within its range, i32 only", () => {
    expect(f32Lit(NaN)).toBe("tspto_nan()");
    expect(f32Lit(-Infinity)).toBe("(-tspto_inf())");
    // the largest fp32: a decimal that reads back as it and stays within range (3.4028235e38f would be out of range)
    const max = f32Lit(3.4028234663852886e38);
    expect(Math.fround(Number(max.slice(0, -1)))).toBe(3.4028234663852886e38);
    expect(Number(max.slice(0, -1))).toBeLessThanOrEqual(3.4028234663852886e38);
    expect(f32Lit(0.1)).toBe("0.1f");
    expect(f32Lit(-1e30)).toBe("(-1.0e+30f)");
    expect(i32Lit(-(2 ** 31))).toBe("(-2147483647i - 1i)");
    const e = codeOf(() => i32Lit(2 ** 31));
    expect(e.code).toBe("E_DTYPE");
    expect(e.message).toContain("the integer constant 2147483648 does not fit the 32-bit integers of the webgpu platform");
  });
});

describe("wgsl modules", () => {
  it("a small kernel: one module, a workgroup sized to its largest tile, tiles in workgroup memory, atomics for the bool store only", () => {
    const g = generateWgsl(forWebgpu(small.lower(randn([8, 16]), zeros([8, 16]), zeros([8, 16], "bool"))));
    expect(g.kernels).toHaveLength(1);
    const k = g.kernels[0];
    expect(k.source).toContain("@compute @workgroup_size(128)"); // [8, 16] tiles: 128 invocations
    expect(k.workgroupSize).toBe(128);
    expect(k.source).toContain("fn k_small_incore_0(");
    expect(k.atomics).toBe(true); // bool mask: sub-word stores
    expect(k.source).toContain("var<storage, read_write> tspto_mem: array<atomic<u32>>;");
    expect(k.source).toContain("tspto_st_bool(");
    expect(k.globalScratch).toBe(false);
    const seed = generateWgsl(forWebgpu(intTensor.lower(randn([8, 16]), zeros([8, 16]))));
    expect(seed.kernels[0].atomics).toBe(false);
    expect(seed.kernels[0].source).toContain("var<storage, read_write> tspto_mem: array<u32>;");
  });

  it("row reductions: a butterfly through workgroup memory in loops every invocation runs (barriers in uniform control flow)", () => {
    const g = generateWgsl(forWebgpu(softmaxK.lower(randn([64, 256]), zeros([64, 256]))));
    const src = g.kernels[0].source;
    expect(src).toContain("var<workgroup> tspto_red: array<u32, 256>;");
    // the row batches are a loop over a constant range (not over the invocation's own row)
    expect(src).toMatch(/for \(var _rb\d+: i32 = 0; _rb\d+ < \d+; _rb\d+ \+= 8\) \{\n\s*let _r\d+: i32 = _rb\d+ \+ _warp\d+;/);
    expect(src).toMatch(/tspto_red\[tspto_tid\] = bitcast<u32>\(_acc\d+\);\n\s*workgroupBarrier\(\);/);
  });

  it("tiles beyond workgroup memory live in a per-workgroup slice of device memory", () => {
    const g = generateWgsl(forWebgpu(mm.lower(randn([64, 64]), randn([64, 64]), zeros([64, 64]))));
    const k = g.kernels[0];
    expect(k.workgroupSize).toBe(256);
    expect(k.globalScratch).toBe(true); // two [64, 64] fp32 operands and the result: 48 KiB
    expect(k.scratchBytes).toBeGreaterThan(16384);
    expect(k.source).toContain("fn tspto_sld(i: i32) -> u32 { return tspto_ml(tspto_gs + i); }");
    expect(k.source).toContain(`const TSPTO_SCRATCH_WORDS: i32 = ${k.scratchBytes / 4};`);
  });

  it("int64 tensors and out-of-range integer constants are E_DTYPE compile errors", () => {
    const i64 = codeOf(() => ir.compile(intTensor.lower(tensor([1, 2, 3, 4], { dtype: "int64", shape: [2, 2] }), zeros([2, 2], "int64")), { platform: "webgpu" }));
    expect(i64.code).toBe("E_DTYPE");
    expect(i64.message).toContain("is int64, which the webgpu platform does not support (WGSL has no 64-bit integers)");
    expect(i64.message).toContain("use int32 (pl.INT32)");
    const big = codeOf(() => ir.compile(bigConst.lower(tensor(new Int32Array(128), { shape: [8, 16] }), zeros([8, 16], "int32")), { platform: "webgpu" }));
    expect(big.code).toBe("E_DTYPE");
  });

  it("dynamic dimensions are an E_DYNAMIC compile error on webgpu", () => {
    const dyn = pl.jit(function dyn(x: pl.Tensor<["M", 64], pl.FP32>, out: pl.Out<pl.Tensor<["M", 64], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.exp(x)); });
    });
    const e = codeOf(() => ir.compile(dyn.lower(randn([8, 64]), zeros([8, 64]), new RunConfig({ platform: "webgpu" })), { platform: "webgpu" }));
    expect(e.code).toBe("E_DYNAMIC");
    expect(e.message).toContain("webgpu platform");
  });

  it("a tensor-level slice of run-time extent is E_DYNAMIC on webgpu; iota, gather and gatherLoad generate workgroup-parallel code with checked indices", () => {
    const prefix = pl.jit(function prefix(x: pl.Tensor<[64, 32], pl.FP32>, n: pl.Scalar<pl.INT32>, out: pl.Out<pl.Tensor<[64, 32], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.slice(x, [n, 32], [0, 0])); });
    });
    const e = codeOf(() => generateWgsl(forWebgpu(prefix.lower(randn([64, 32]), 4, zeros([64, 32]), new RunConfig({ platform: "webgpu" })))));
    expect(e.code).toBe("E_DYNAMIC");
    expect(e.message).toContain("a tensor-level pl.slice of run-time extent is not supported on the webgpu platform yet");
    const g = generateWgsl(forWebgpu(indexingPrograms().get("embed")!));
    const src = g.kernels.map((k) => k.source).join("\n");
    expect(src).toMatch(/\/\/ \w+ = tile\.gatherLoad/);
    expect(src).toContain("tspto_fail(");
    const iota = generateWgsl(forWebgpu(indexingPrograms().get("iotas")!));
    expect(iota.kernels.map((k) => k.source).join("\n")).toMatch(/\/\/ \w+ = tile\.iota/);
  });
});
