// WGSL as a SIMT language (../simt/lang.ts): how the shared lowering of tiles onto blocks is
// spelled for WebGPU. A block is a workgroup of 32 to WGSL_WORKGROUP invocations (per kernel:
// its largest tile's elements, rounded up to a power of two; a software adapter pays for every
// invocation of a workgroup, a [1, 64] add needs 64). Tiles live in
// scratch words (every tile element is one 32-bit word: the webgpu target plans scratch with
// DeviceDescription.minTileElemBytes = 4), in workgroup memory when the kernel's tiles and
// temporaries fit WORKGROUP_TILE_LIMIT, else in a per-workgroup slice of device memory;
// tspto_sld / tspto_sst (defined by the module header, ./generate.ts) read and write a scratch
// word. Tensors are element offsets into device memory, read and written through the dtype's
// accessor (./prelude.ts). A workgroup synchronizes with workgroupBarrier(), always in uniform
// control flow: scalars are uniform, rows are combined by a butterfly through workgroup memory
// inside loops every invocation runs the same number of times, and a scalar read from memory
// is broadcast with workgroupUniformLoad. One language object per kernel: it records what the
// kernel's module needs (atomics, the reduction buffer, temporaries past the planned tiles).
import type { DType, Span } from "../../ir/index.js";
import { TsptoCompileError, isFloat } from "../../ir/index.js";
import { spanWhere } from "../cpp/emitters/index.js";
import { comment } from "../cpp/cexpr.js";
import type { ElemArray, SimtEmitter, SimtLang } from "../simt/lang.js";
import { simtEmitterFor } from "../simt/ops.js";
import { WGSL_FORMULAS, roundF, scratchLitW } from "./formulas.js";
import { f32Lit, i32Lit, WGSL_SYNTAX } from "./syntax.js";
import { UNIFORM_HEADER_WORDS, U_GSCRATCH, WGSL_WORKGROUP } from "./prelude.js";

/**
 * Workgroup memory for tiles (bytes): WebGPU guarantees 16 KiB per workgroup
 * (maxComputeWorkgroupStorageSize); the reduction buffer and the broadcast word take the rest.
 */
export const WORKGROUP_TILE_LIMIT = 16384 - 4 * WGSL_WORKGROUP - 64;

/** What one kernel's module needs, filled in while its body is generated. */
export interface WgslKernelNeeds {
  /** Sub-word stores to tensors: device memory is declared atomic. */
  atomics: boolean;
  /** Row reductions combine through the workgroup buffer tspto_red. */
  reduce: boolean;
  /** Scalars read from memory are broadcast through tspto_bc. */
  broadcast: boolean;
  /** Run-time window checks write the failure record. */
  fails: boolean;
  /** Bytes of temporaries past the planned tiles: the high-water mark, and the current top. */
  tempHigh: number;
  tempTop: number;
}

export function newNeeds(): WgslKernelNeeds {
  return { atomics: false, reduce: false, broadcast: false, fails: false, tempHigh: 0, tempTop: 0 };
}

const SUBWORD: ReadonlySet<DType> = new Set<DType>(["float16", "bfloat16", "int8", "uint8", "bool", "int16"]);

/** A dtype webgpu stores (int64 has no WGSL type). */
export function checkWgslDType(d: DType, what: string, span?: Span): void {
  if (d === "int64") {
    throw new TsptoCompileError("E_DTYPE", `${what} is int64, which the webgpu platform does not support (WGSL has no 64-bit integers)`, span,
      "use int32 (pl.INT32) for tensors and tiles on webgpu, or run on the cpu / interp platform");
  }
}

const elemType = (d: DType): string => (isFloat(d) ? "f32" : "i32");

/** Invocations per workgroup for a kernel whose largest tile has `elems` elements: 32 to WGSL_WORKGROUP, a power of two. */
export const workgroupFor = (elems: number): number => Math.min(WGSL_WORKGROUP, Math.max(32, 2 ** Math.ceil(Math.log2(Math.max(1, elems)))));

/**
 * The WGSL language of one kernel; `scratchBytes` is its planned tiles' end (temporaries go
 * past it), `threads` its workgroup size (a multiple of 32).
 */
export function wgslLang(needs: WgslKernelNeeds, scratchBytes: () => number, threads = WGSL_WORKGROUP): SimtLang {
  const tile = (name: string, d: DType): ElemArray => {
    const T = elemType(d);
    return {
      name, ctype: T,
      at: (i) => `bitcast<${T}>(tspto_sld(${name} + ${i}))`,
      set: (i, v) => `tspto_sst(${name} + ${i}, bitcast<u32>(${v}));`,
    };
  };
  const tensorArr = (name: string, d: DType): ElemArray => {
    checkWgslDType(d, "a tensor");
    return {
      name, ctype: elemType(d),
      at: (i) => `tspto_ld_${d}(${name} + ${i})`,
      set: (i, v) => { if (SUBWORD.has(d)) needs.atomics = true; return `tspto_st_${d}(${name} + ${i}, ${v});`; },
    };
  };
  const L: SimtLang = {
    platform: "webgpu",
    syntax: WGSL_SYNTAX,
    threads,
    sharedLimit: WORKGROUP_TILE_LIMIT,
    vec4: false,
    warpShuffle: false,
    nullTensor: "0i",
    emitterFor: (op: string, span: Span): SimtEmitter => simtEmitterFor(L, (o) => WGSL_FORMULAS.get(o), op, span,
      `add a WGSL formula for '${op}' in src/codegen/wgsl/formulas.ts (elementwise, scalar) or src/codegen/simt/ops.ts (tile ops), or use the cpu / interp platform`),
    tileElemBytes: () => 4,

    scratchType: (d) => { checkWgslDType(d, "a tile"); return elemType(d); },
    storageType: (d) => { checkWgslDType(d, "a tensor"); return elemType(d); },
    idx: "i32",
    f32: "f32",
    wideFloat: "f32",
    accInt: "i32",
    i32: "i32",
    tensorLocalType: () => "i32",
    loadConv: (_d, x) => x,
    storeConv: (_d, x) => x,
    roundF,
    roundWide: (d, x) => roundF(d, x),

    cast: (t, x) => `${t}(${x})`,
    cond: (c, a, b) => `select(${b}, ${a}, ${c})`,
    fma: (a, b, c) => `fma(${a}, ${b}, ${c})`,
    fminmax: (kind, a, b) => `tspto_f${kind}(${a}, ${b})`,
    f32Lit,
    int: (v) => i32Lit(v),
    floatExtreme: (kind) => (kind === "max" ? "(-tspto_inf())" : "tspto_inf()"),
    intExtreme: (kind) => (kind === "max" ? "TSPTO_I32_MIN" : "TSPTO_I32_MAX"),
    sumAdd: (d, p, q) => (d === "int32" ? `tspto_add_sat(${p}, ${q})` : `(${p} + ${q})`),
    isNan: (x) => `tspto_isnan(${x})`,
    notNan: (x) => `!tspto_isnan(${x})`,
    scratchLit: scratchLitW,
    tensorElem: (t, idx) => { checkWgslDType(t.type.dtype, `tensor '${t.label}'`); return `tspto_ld_${t.type.dtype}(${t.ptr} + ${idx})`; },

    barrier: "workgroupBarrier();",
    threadLoop: (i, n) => `for (var ${i}: i32 = tspto_tid; ${i} < ${n}; ${i} += ${threads})`,
    laneLoop: (j, lane, n) => `for (var ${j}: i32 = ${lane}; ${j} < ${n}; ${j} += 32)`,
    seqLoop: (j, lo, hi, step) => `for (var ${j}: i32 = ${lo}; ${j} < ${hi}; ${j} += ${step ?? "1"})`,
    groupStrideLoop: (r, warp, m) => `for (var ${r}: i32 = ${warp}; ${r} < ${m}; ${r} += ${threads / 32})`,
    loop1: (head, stmt) => `${head} { ${stmt} }`,
    loopBraced: (head, stmts) => `${head} { ${stmts} }`,
    if1: (c, stmt) => `if (${c}) { ${stmt} }`,
    scratchAt: (addr) => String(addr / 4),
    tilePtr(ctx, name, at, d, _mutable, cmt) {
      ctx.line(`let ${name}: i32 = ${at};${cmt ? `  // ${cmt}` : ""}`);
      return tile(name, d);
    },
    tensorPtr(ctx, name, t, offset, _mutable, _asScratch, cmt) {
      checkWgslDType(t.type.dtype, `tensor '${t.label}'`);
      ctx.line(`let ${name}: i32 = ${t.ptr}${offset === null ? "" : ` + (${offset})`};${cmt ? `  // ${cmt}` : ""}`);
      return tensorArr(name, t.type.dtype);
    },
    laneWarp(ctx, lane, warp) { ctx.line(`let ${lane}: i32 = tspto_tid & 31; let ${warp}: i32 = tspto_tid >> 5u;`); },
    groupCombine(ctx, acc, accType, _lane, _warp, op) {
      // the butterfly of a warp shuffle through workgroup memory: after step sh every
      // invocation holds op(own, partner = tid ^ sh); a barrier before and after each exchange
      needs.reduce = true;
      const sh = ctx.fresh("sh");
      ctx.open(`for (var ${sh}: i32 = 16; ${sh} > 0; ${sh} = ${sh} >> 1u) {`);
      ctx.line(`tspto_red[tspto_tid] = bitcast<u32>(${acc});`);
      ctx.line("workgroupBarrier();");
      ctx.line(`${acc} = ${op(acc, `bitcast<${accType}>(tspto_red[tspto_tid ^ ${sh}])`)};`);
      ctx.line("workgroupBarrier();");
      ctx.close();
    },
    readScalar(ctx, name, ct, code) {
      // a value read from memory is not uniform for WGSL's analysis: one invocation stores its
      // bits, every invocation loads them with workgroupUniformLoad (a barrier), and a barrier
      // keeps the next broadcast from overwriting the word early
      needs.broadcast = true;
      const bits = ct === "double" ? `bitcast<u32>(${code})` : ct === "bool" ? `select(0u, 1u, ${code})` : `bitcast<u32>(${code})`;
      ctx.line(`if (tspto_tid == 0) { tspto_bc = ${bits}; }`);
      const raw = ctx.fresh("bc");
      ctx.line(`let ${raw}: u32 = workgroupUniformLoad(&tspto_bc);`);
      ctx.line("workgroupBarrier();");
      ctx.line(`let ${name}: ${WGSL_SYNTAX.scalarType(ct)} = ${ct === "double" ? `bitcast<f32>(${raw})` : ct === "bool" ? `(${raw} != 0u)` : `bitcast<i32>(${raw})`};`);
    },
    failAny(_ctx, site, offsets) {
      needs.fails = true;
      const o = [...offsets.slice(0, 8), ...new Array(Math.max(0, 8 - offsets.length)).fill("0i")];
      return `tspto_fail(${site}, array<i32, 8>(${o.join(", ")}));`;
    },
    failRecord(ctx, site, offsets) {
      needs.fails = true;
      const o = [...offsets.slice(0, 8), ...new Array(Math.max(0, 8 - offsets.length)).fill("0i")];
      ctx.line(`if (tspto_tid == 0) { tspto_fail(${site}, array<i32, 8>(${o.join(", ")})); }`);
    },

    prologue(k) {
      const f = k.func;
      for (const p of f.params) if (p.var.type.kind === "tensor") checkWgslDType(p.var.type.dtype, `parameter '${p.var.name}'`, p.var.span);
      k.push(`// InCore function '${comment(f.name)}' (${comment(spanWhere(f.span))}): one workgroup per task, ${threads} invocations`);
      k.push(`@compute @workgroup_size(${threads})`);
      k.push(`fn ${k.symbol}(@builtin(local_invocation_index) tspto_lii: u32, @builtin(workgroup_id) tspto_wid: vec3<u32>, @builtin(num_workgroups) tspto_nwg: vec3<u32>) {`);
      k.line("let tspto_tid = i32(tspto_lii);");
      k.line("let tspto_wg = i32(tspto_wid.x);");
      k.line("let tspto_ng = i32(tspto_nwg.x);");
      // the global scratch slice of this workgroup (used only where tiles live in device memory)
      k.line(`tspto_gs = tspto_word(${U_GSCRATCH}) + tspto_wg * TSPTO_SCRATCH_WORDS;`);
      k.declareParamsFrom((i, tensor) => (tensor ? `tspto_word(${UNIFORM_HEADER_WORDS + i})` : `tspto_slot(${i}, tspto_wg, tspto_ng)`),
        (name, _t, raw) => `let ${name}: i32 = ${raw};`);
    },
    copyTile(ctx, dst, src, bytes) {
      const i = ctx.fresh("i");
      ctx.line(`for (var ${i}: i32 = tspto_tid; ${i} < ${bytes / 4}; ${i} += ${threads}) { tspto_sst(${dst} + ${i}, tspto_sld(${src} + ${i})); }`);
    },
    declareTemp(ctx, bytes) {
      // scratch words past the planned tiles (and past the temporaries still held)
      const at = scratchBytes() + needs.tempTop;
      needs.tempTop += Math.ceil(bytes / 64) * 64;
      needs.tempHigh = Math.max(needs.tempHigh, needs.tempTop);
      const tmp = ctx.fresh("tmp");
      ctx.line(`let ${tmp}: i32 = ${at / 4};  // a temporary of ${bytes} bytes past the planned tiles`);
      return tmp;
    },
    freeTemp: (tmp) => { needs.tempTop = 0; return `// ${tmp} released`; },
    freeTemps: (tmps) => { needs.tempTop = 0; return `// ${tmps.join(", ")} released`; },
  };
  return L;
}
