// Helpers for the codegen tests: hand-built lowered programs, the standalone harness
// (harness/harness.cc) that runs a generated library without the native addon, a seeded
// PRNG, and independent reference formulas.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  NO_SPAN, Program, getOp, inferCall, mkAssign, mkCall, mkConst, mkEval, mkFunc, mkList, mkReturn, mkVar, exprType, tileBytes,
  tensorT, voidT, scalarT, verifyProgram,
  type Attrs, type Direction, type Span, type DType, type Expr, type Func, type Stmt, type TileType, type Var,
} from "../../src/ir/index.js";
import { getTarget } from "../../src/targets/index.js";
import { runChild } from "../setup/child.js";
import type { ArtifactDump } from "../../src/artifact/index.js";

export const INCLUDE_DIR = fileURLToPath(new URL("../../native/include", import.meta.url));
const HARNESS_SRC = fileURLToPath(new URL("./harness/harness.cc", import.meta.url));

// ------------------------------------------------------------------ temp dirs
const created: string[] = [];
/** A fresh temporary directory, removed by cleanup() (kept when TSPTO_KEEP_TEST_DIRS=1). */
export function tmpDir(tag: string): string {
  const d = mkdtempSync(join(tmpdir(), `tspto-cg-${tag}-`));
  created.push(d);
  return d;
}
export function cleanup(): void {
  if (process.env.TSPTO_KEEP_TEST_DIRS === "1") return;
  for (const d of created.splice(0)) rmSync(d, { recursive: true, force: true });
}

// ------------------------------------------------------------------ PRNG
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ------------------------------------------------------------------ IR building
export const c = (v: number | boolean, dtype?: DType) => mkConst(v, dtype);
export const call = (op: string, args: readonly Expr[], attrs: Attrs = {}, span: Span = NO_SPAN) => mkCall(op, args, attrs, inferCall(getOp(op), args, attrs, span), span);
export const load = (t: Var, offsets: readonly Expr[], shape: number[], validShape?: number[], span?: Span) =>
  call("tile.load", [t, mkList(offsets)], validShape ? { shape, validShape } : { shape }, span);
export const store = (tile: Expr, offsets: readonly Expr[], out: Var, span?: Span) => call("tile.store", [tile, mkList(offsets), out], {}, span);
export const tensorVar = (name: string, shape: number[], dtype: DType = "float32") => mkVar(name, tensorT(shape, dtype));
export const scalarVar = (name: string, dtype: DType = "int64") => mkVar(name, scalarT(dtype));

/** Scratch addresses: every tile gets a fresh 64-byte aligned slot (no reuse) unless given one. */
export class Planner {
  next = 0;
  alloc(t: TileType): number {
    const a = this.next;
    this.next += tileBytes(t);
    return a;
  }
}

/** Statement list builder. */
export class B {
  readonly stmts: Stmt[] = [];
  constructor(readonly plan: Planner = new Planner()) {}
  /** `name = value`; tiles get `addr` (default: a fresh slot). */
  let(name: string, value: Expr, addr?: number): Var {
    const v = mkVar(name, this.typed(value, addr));
    this.stmts.push(mkAssign([v], value));
    return v;
  }
  /** A tile-typed (or other) variable of `value`'s type with an address (for iterArgs/results). */
  typed(value: Expr, addr?: number) {
    const t = exprType(value);
    return t.kind === "tile" ? { ...t, addr: addr ?? this.plan.alloc(t) } : t;
  }
  eval(e: Expr): void { this.stmts.push(mkEval(e)); }
  push(...s: Stmt[]): void { this.stmts.push(...s); }
}

export function kernel(name: string, params: [Var, Direction][], body: B | Stmt[], scratchBytes?: number): Func {
  const stmts = body instanceof B ? body.stmts : body;
  const sb = scratchBytes ?? (body instanceof B ? body.plan.next : 0);
  return mkFunc({ name, fnKind: "incore", params: params.map(([v, dir]) => ({ var: v, dir })), returnTypes: [], body: stmts, attrs: { scratchBytes: sb } });
}

/** `callee(args)` as the orchestration's task launch (accesses from the callee's param directions). */
export function launch(callee: Func, args: readonly Expr[], scopeId = 0): Expr {
  const accesses = callee.params.flatMap((p, i) => (p.var.type.kind === "tensor" ? [{ arg: i, mode: p.dir === "in" ? "read" : p.dir === "out" ? "write" : "readwrite" }] : []));
  return mkCall("call", args, { callee: callee.name, scopeId, accesses }, voidT);
}

/** A program whose entry passes its params straight to one kernel (same names and dirs). */
export function singleKernelProgram(name: string, params: [Var, Direction][], build: (b: B, ps: Var[]) => void, opts: { verify?: boolean } = {}): Program {
  const kps = params.map(([v, d]) => [mkVar(v.name, v.type), d] as [Var, Direction]);
  const b = new B();
  build(b, kps.map(([v]) => v));
  const k = kernel(`${name}_k`, kps, b);
  const outs = params.filter(([, d]) => d !== "in").map(([v]) => v);
  const entry = mkFunc({
    name, fnKind: "orchestration", params: params.map(([v, dir]) => ({ var: v, dir })), returnTypes: outs.slice(0, 1).map((v) => v.type),
    body: [mkEval(launch(k, params.map(([v]) => v))), mkReturn(outs.slice(0, 1))],
  });
  const p = new Program(name, name, [entry, k]);
  if (opts.verify !== false) verifyProgram(p, { ssa: true, outlined: true });
  return p;
}

/** The seed: entry(a, b, out) launches an InCore kernel that loads two [n, n] tiles, adds, stores. */
export function seedProgram(name = "seed_add", n = 128): Program {
  const a = tensorVar("a", [n, n]), b = tensorVar("b", [n, n]), out = tensorVar("out", [n, n]);
  return singleKernelProgram(name, [[a, "in"], [b, "in"], [out, "out"]], (k, [ka, kb, ko]) => {
    const ta = k.let("ta", load(ka, [c(0), c(0)], [n, n]));
    const tb = k.let("tb", load(kb, [c(0), c(0)], [n, n]));
    const s = k.let("s", call("tile.add", [ta, tb]));
    k.eval(store(s, [c(0), c(0)], ko));
  });
}

// ------------------------------------------------------------------ harness
let harnessBin: string | null = null;
export function harness(): string {
  if (harnessBin) return harnessBin;
  const src = readFileSync(HARNESS_SRC);
  const hdr = readFileSync(join(INCLUDE_DIR, "tspto_abi.h"));
  const h = createHash("sha256").update(src).update(hdr).digest("hex").slice(0, 16);
  const dir = join(tmpdir(), "tspto-test");
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, `codegen-harness-${h}`);
  if (!existsSync(bin)) {
    const tmp = `${bin}.tmp-${process.pid}`;
    const cxx = process.env.HARNESS_CXX ?? "g++";
    const r = spawnSync(cxx, ["-std=c++17", "-O1", "-I", INCLUDE_DIR, "-o", tmp, HARNESS_SRC, "-ldl"], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`building the harness failed:\n${r.stderr}${r.error ?? ""}`);
    renameSync(tmp, bin);
  }
  harnessBin = bin;
  return bin;
}

export type Storage = Float32Array | Uint16Array | Int8Array | Int16Array | Int32Array | BigInt64Array | Uint8Array;
export type HArg =
  | { tensor: Storage }
  | { int: number | bigint }
  | { float: number }
  | { bool: boolean };

export interface Task { name: string; scope: number; nargs: number; accesses: { param: number; nbytes: number; mode: number }[] }
export interface RunResult { rc: number; fails: string[]; tasks: Task[]; tensors: (Storage | null)[]; stdout: string }

function like(a: Storage, buf: Buffer): Storage {
  const copy = new Uint8Array(buf.byteLength);
  copy.set(buf);
  const C = a.constructor as new (b: ArrayBuffer) => Storage;
  return new C(copy.buffer);
}

/**
 * Run the library of an artifact directory on the given entry arguments (tensors are copied;
 * results returned). `scratchDump`: a file the harness appends each task's scratch arena to.
 */
export function run(outputDir: string, args: readonly HArg[], opts: { scratchDump?: string } = {}): RunResult {
  const dir = mkdtempSync(join(tmpdir(), "tspto-run-"));
  const spec: string[] = [];
  args.forEach((a, i) => {
    if ("tensor" in a) {
      const inp = join(dir, `in${i}.bin`), out = join(dir, `out${i}.bin`);
      writeFileSync(inp, new Uint8Array(a.tensor.buffer, a.tensor.byteOffset, a.tensor.byteLength));
      spec.push(`T ${a.tensor.byteLength} ${inp} ${out}`);
    } else if ("int" in a) spec.push(`I ${a.int}`);
    else if ("float" in a) spec.push(`F ${Number.isNaN(a.float) ? "nan" : a.float === Infinity ? "inf" : a.float === -Infinity ? "-inf" : a.float.toExponential(17)}`);
    else spec.push(`B ${a.bool ? 1 : 0}`);
  });
  writeFileSync(join(dir, "spec.txt"), `${spec.join("\n")}\n`);
  const env = opts.scratchDump ? { ...process.env, TSPTO_HARNESS_SCRATCH: opts.scratchDump } : process.env;
  const r = spawnSync(harness(), [join(outputDir, "build", "libprogram.so"), join(dir, "spec.txt")], { encoding: "utf8", maxBuffer: 64 << 20, env });
  if (r.status !== 0) throw new Error(`harness failed (${r.status} ${r.signal ?? ""}):\n${r.stderr}\n${r.stdout}`);
  const lines = r.stdout.split("\n");
  const rcLine = lines.find((l) => l.startsWith("RC "));
  if (!rcLine) throw new Error(`harness printed no RC:\n${r.stdout}\n${r.stderr}`);
  const tasks: Task[] = lines.filter((l) => l.startsWith("TASK ")).map((l) => {
    const [, name, scope, nargs, ...acc] = l.split(" ");
    return {
      name, scope: Number(scope), nargs: Number(nargs),
      accesses: acc.map((x) => { const [p, n, m] = x.split(":").map(Number); return { param: p, nbytes: n, mode: m }; }),
    };
  });
  const result = {
    rc: Number(rcLine.slice(3)),
    fails: lines.filter((l) => l.startsWith("FAIL ")).map((l) => l.slice(5)),
    tasks,
    tensors: args.map((a, i) => ("tensor" in a ? like(a.tensor, readFileSync(join(dir, `out${i}.bin`))) : null)),
    stdout: r.stdout,
  };
  rmSync(dir, { recursive: true, force: true });
  return result;
}

// ------------------------------------------------------------------ comparisons
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, rtol: number, atol: number, what: string): void {
  if (actual.length !== expected.length) throw new Error(`${what}: length ${actual.length} != ${expected.length}`);
  let bad = 0;
  const msgs: string[] = [];
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    const ok = (Number.isNaN(a) && Number.isNaN(e)) || a === e || Math.abs(a - e) <= atol + rtol * Math.abs(e);
    if (!ok) { bad++; if (msgs.length < 8) msgs.push(`[${i}] got ${a}, expected ${e}`); }
  }
  if (bad) throw new Error(`${what}: ${bad}/${actual.length} elements differ:\n  ${msgs.join("\n  ")}`);
}
export function expectExact(actual: ArrayLike<number | bigint>, expected: ArrayLike<number | bigint>, what: string): void {
  if (actual.length !== expected.length) throw new Error(`${what}: length ${actual.length} != ${expected.length}`);
  let bad = 0;
  const msgs: string[] = [];
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    const ok = a === e || (typeof a === "number" && typeof e === "number" && Number.isNaN(a) && Number.isNaN(e));
    if (!ok) { bad++; if (msgs.length < 8) msgs.push(`[${i}] got ${a}, expected ${e}`); }
  }
  if (bad) throw new Error(`${what}: ${bad}/${actual.length} elements differ:\n  ${msgs.join("\n  ")}`);
}

// ------------------------------------------------------------------ building artifacts
/** Builds a lowered program into an artifact with the named target (the targets' build, as ir.compile does). */
export function compileArtifact(p: Program, opts: { platform: string; packageVersion: string; outputDir?: string; dumps?: ArtifactDump[] }) {
  const { platform, ...rest } = opts;
  return getTarget(platform).build(p, rest);
}
/** compileArtifact with the compiler off the event loop (the target's buildAsync where it has one). */
export async function compileArtifactAsync(p: Program, opts: { platform: string; packageVersion: string; outputDir?: string; dumps?: ArtifactDump[] }) {
  const { platform, ...rest } = opts;
  const t = getTarget(platform);
  return t.buildAsync ? t.buildAsync(p, rest) : t.build(p, rest);
}

/**
 * A child process run to its end without blocking the test worker's event loop: a spawnSync of
 * a compile or a long run starves vitest's own worker messages, which time out after 60 s
 * ("Timeout calling onTaskUpdate") on a busy machine.
 */
export async function execAsync(cmd: string, args: readonly string[], opts: { stdout?: boolean } = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const r = await runChild(cmd, args);
  return { status: r.status, stdout: opts.stdout ? r.stdout : "", stderr: r.stderr };
}