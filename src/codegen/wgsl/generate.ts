// Lowered Program -> WGSL for the webgpu platform: one compute-shader module per InCore
// function (the shared SIMT lowering, ../simt/, spelled by ./lang.ts) and the kernel table the
// device reads to build pipelines and pack a dispatch's uniforms. The orchestration is not
// compiled: the webgpu device runs the entry function of program.json in JavaScript
// (src/targets/webgpu/orchestrate.ts), recording one dispatch per call; checkOrchestration
// rejects at build time what it cannot run.
//
// A dispatch's uniforms (one 256-byte-aligned slice per dispatch, bound with a dynamic offset):
// UNIFORM_HEADER_WORDS header words (the SPMD band, the global scratch base, the module id), then
// one word per kernel parameter: a tensor's element offset in device memory, an integer scalar
// (i32), a float scalar (f32 bits), a bool (0 / 1).
import type { Func, Program, Stmt } from "../../ir/index.js";
import { TsptoCompileError, forEachExpr, forEachStmt, numel, typeStr } from "../../ir/index.js";
import { kernelSymbols } from "../cpp/symbols.js";
import { checkSpmdAttr } from "../cpp/spmd.js";
import { comment, internal, staticTensor } from "../cpp/cexpr.js";
import { SimtKernelGen, type FailSite } from "../simt/index.js";
import { checkWgslDType, newNeeds, wgslLang, workgroupFor, WORKGROUP_TILE_LIMIT } from "./lang.js";
import { ACCESSORS, ERRORS_DECL, SUBWORD_STORES, UNIFORM_HEADER_WORDS, WGSL_HELPERS, WGSL_WORKGROUP, memoryDecl, uniformDecl } from "./prelude.js";

/** The generator's version (part of the artifact key). */
export const WGSL_CODEGEN_VERSION = "wgsl-1";

export interface WgslParam { readonly name: string; readonly kind: "tensor" | "int" | "float" | "bool"; readonly dtype: string }
export interface WgslKernelInfo {
  readonly name: string;
  /** The entry point (and file stem). */
  readonly symbol: string;
  /** The module's source. */
  readonly source: string;
  readonly params: readonly WgslParam[];
  /** Words of the uniform block (header + one per parameter). */
  readonly uniformWords: number;
  /** Scratch bytes per workgroup: planned tiles + temporaries. */
  readonly scratchBytes: number;
  /** Tiles in a per-workgroup slice of device memory (else in workgroup memory). */
  readonly globalScratch: boolean;
  /** Workgroup memory the module declares (bytes). */
  readonly workgroupBytes: number;
  /** Stores of sub-word dtypes: device memory bound as atomics. */
  readonly atomics: boolean;
  /** Run-time window checks (the failure record is bound). */
  readonly fails: boolean;
  /** Invocations per workgroup. */
  readonly workgroupSize: number;
}
export interface GeneratedWgsl {
  readonly kernels: readonly WgslKernelInfo[];
  /** Run-time failure sites of the program's kernels (the failure record's site indexes them). */
  readonly sites: readonly FailSite[];
  readonly workgroupSize: number;
}

export function generateWgsl(program: Program): GeneratedWgsl {
  const entry = program.getFunction(program.entry);
  if (!entry) return internal(`program '${program.name}' has no entry function '${program.entry}'`);
  checkOrchestration(program, entry);
  const names = kernelSymbols(program);
  const sites: FailSite[] = [];
  const kernels: WgslKernelInfo[] = [];
  for (const f of program.functions) {
    if (f === entry) continue;
    kernels.push(generateKernel(program, f, names.get(f.name)!, sites));
  }
  return { kernels, sites, workgroupSize: WGSL_WORKGROUP };
}

function generateKernel(program: Program, f: Func, symbol: string, sites: FailSite[]): WgslKernelInfo {
  const planned = f.attrs.minTileElemBytes;
  if (planned !== 4 && f.body.some(hasTiles)) {
    internal(`InCore function '${f.name}' was planned with ${typeof planned === "number" ? planned : "dtype-sized"} bytes per tile element; the webgpu code generator needs 4`, f.span,
      "plan memory with the webgpu target's description (replanMemory with minTileElemBytes 4) before code generation");
  }
  const needs = newNeeds();
  let gen: SimtKernelGen | null = null;
  const threads = workgroupFor(largestTile(f));
  const lang = wgslLang(needs, () => gen!.scratchBytes, threads);
  gen = new SimtKernelGen(f, symbol, sites, lang);
  const body = gen.generate();
  const scratchBytes = gen.scratchBytes + needs.tempHigh;
  const words = Math.max(1, scratchBytes / 4);
  const inWorkgroup = scratchBytes <= WORKGROUP_TILE_LIMIT;
  const params: WgslParam[] = f.params.map((p) => {
    const t = p.var.type;
    if (t.kind === "tensor") return { name: p.var.name, kind: "tensor", dtype: t.dtype };
    if (t.kind !== "scalar") return internal(`parameter '${p.var.name}' of '${f.name}' has type ${typeStr(t)}`, p.var.span);
    const kind = t.dtype === "bool" ? "bool" : t.dtype === "float32" || t.dtype === "float16" || t.dtype === "bfloat16" ? "float" : "int";
    return { name: p.var.name, kind, dtype: t.dtype };
  });
  const uniformWords = UNIFORM_HEADER_WORDS + params.length;
  const wgBytes = (inWorkgroup ? words * 4 : 0) + (needs.reduce ? 4 * threads : 0) + (needs.broadcast ? 4 : 0);
  const header = [
    `// Generated by tspto (src/codegen/wgsl) for program '${comment(program.name)}', kernel '${comment(f.name)}'. Do not edit.`,
    uniformDecl(uniformWords),
    memoryDecl(needs.atomics),
    ...(needs.fails ? [ERRORS_DECL] : []),
    `const TSPTO_SCRATCH_WORDS: i32 = ${inWorkgroup ? 0 : words};`,
    "var<private> tspto_gs: i32;",
    inWorkgroup
      ? `// tiles in workgroup memory (${scratchBytes} bytes)\nvar<workgroup> tspto_smem: array<u32, ${words}>;\nfn tspto_sld(i: i32) -> u32 { return tspto_smem[i]; }\nfn tspto_sst(i: i32, v: u32) { tspto_smem[i] = v; }`
      : `// tiles in device memory (${scratchBytes} bytes per workgroup, from the launch's scratch base)\nfn tspto_sld(i: i32) -> u32 { return tspto_ml(tspto_gs + i); }\nfn tspto_sst(i: i32, v: u32) { tspto_ms(tspto_gs + i, v); }`,
    ...(needs.reduce ? [`var<workgroup> tspto_red: array<u32, ${threads}>;`] : []),
    ...(needs.broadcast ? ["var<workgroup> tspto_bc: u32;"] : []),
    WGSL_HELPERS,
    ACCESSORS,
    ...(needs.atomics ? [SUBWORD_STORES] : []),
    "",
  ];
  return {
    name: f.name, symbol, source: `${header.join("\n")}\n${body}`, params, uniformWords,
    scratchBytes, globalScratch: !inWorkgroup, workgroupBytes: wgBytes, atomics: needs.atomics, fails: needs.fails, workgroupSize: threads,
  };
}

/** Elements of the kernel's largest tile (its block-parallel loops have at most that many steps). */
function largestTile(f: Func): number {
  let m = 1;
  forEachStmt(f.body, (s) => {
    const vs = s.kind === "assign" ? s.targets : s.kind === "for" ? [...s.iterArgs, ...s.results] : s.kind === "while" ? [...s.iterArgs, ...s.results] : s.kind === "if" ? s.results : [];
    for (const v of vs) if (v.type.kind === "tile") m = Math.max(m, numel(v.type.shape));
  });
  return m;
}

const hasTiles = (s: Stmt): boolean => {
  let found = false;
  forEachStmt([s], (x) => {
    if (x.kind === "assign" && x.targets.some((t) => t.type.kind === "tile")) found = true;
  });
  return found;
};

/** Ops the JavaScript orchestration runs (src/targets/webgpu/orchestrate.ts): calls, createTensor, dim and scalar ops. */
const ORCHESTRATION_OPS = new Set(["call", "tensor.create", "tensor.dim"]);

/** The entry must be what the webgpu device's orchestration runs: static tensors, calls and scalars. */
export function checkOrchestration(program: Program, entry: Func): void {
  if (entry.fnKind !== "orchestration") internal(`the entry '${entry.name}' is a ${entry.fnKind} function, expected orchestration`, entry.span);
  for (const p of entry.params) {
    if (p.var.type.kind === "tensor") {
      staticTensor(p.var.type, `parameter '${p.var.name}' of '${entry.name}'`, p.var.span, "webgpu");
      checkWgslDType(p.var.type.dtype, `parameter '${p.var.name}' of '${entry.name}'`, p.var.span);
    }
  }
  forEachExpr(entry.body, (e) => {
    if (e.kind !== "call") return;
    if (e.op === "call") {
      const callee = program.getFunction(String(e.attrs.callee));
      if (!callee || callee.fnKind !== "incore") internal(`call of '${String(e.attrs.callee)}', which is not an InCore function of the program`, e.span);
      if (e.attrs.spmd !== undefined) {
        const a = checkSpmdAttr(e);
        if (a.stop === null) internal(`'${callee!.name}': a split loop with a run-time end on webgpu (dynamic dimensions are rejected before this)`, e.span);
      }
      return;
    }
    if (e.op === "tensor.create") {
      const t = e.type;
      if (t.kind === "tensor") {
        staticTensor(t, "createTensor", e.span, "webgpu");
        checkWgslDType(t.dtype, "createTensor", e.span);
      }
      return;
    }
    if (ORCHESTRATION_OPS.has(e.op) || e.op.startsWith("scalar.")) return;
    throw new TsptoCompileError("E_CODEGEN", `the webgpu orchestration cannot run op '${e.op}' (its entry runs in JavaScript, between dispatches, and never reads device memory)`, e.span,
      "move the op into a pl.at(pl.Level.CORE_GROUP, ...) scope (a kernel), or run on the cpu / interp platform");
  });
}
