// The ONNX backend node tests (Debian's libonnx-testdata: ONNX 1.12's single-op cases, each a
// model.onnx and test_data_set_*/{input,output}_*.pb) run through tspto kernels: each case's
// graph is translated (onnx_ops.ts) into kernel source, cases are batched into one pl.jit
// entry (one C++ compile per batch; a batch that fails to build or run is split until the
// failing case is alone), run on each platform and compared with the expected outputs.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HostTensor, RunConfig, type DType } from "../../src/index.js";
import { readModel, readTensor, type OnnxModel, type OnnxTensor } from "./onnx_proto.js";
import { DTYPE_OF, Emit, Skip, constantValue, numel, translatorOf, type V } from "./onnx_ops.js";

/** Where Debian's libonnx-testdata puts the node tests. */
export const ONNX_NODE_DIR = "/usr/share/libonnx-testdata/data/node";
const SRC_INDEX = fileURLToPath(new URL("../../src/index.ts", import.meta.url));

const PL_DT: Record<DType, string> = {
  float32: "pl.FP32", float16: "pl.FP16", bfloat16: "pl.BF16", int8: "pl.INT8", int16: "pl.INT16", int32: "pl.INT32", int64: "pl.INT64", uint8: "pl.UINT8", bool: "pl.BOOL",
};

/**
 * Tolerances: |got - want| <= atol + rtol |want| per element (NaN matches NaN, infinities
 * match exactly); integers and bools exactly. By output dtype, with documented per-op
 * exceptions (docs/conformance.md).
 */
export const TOLERANCE: Readonly<Record<string, { rtol: number; atol: number }>> = {
  float32: { rtol: 1e-5, atol: 1e-6 }, float16: { rtol: 1e-3, atol: 1e-4 }, bfloat16: { rtol: 8e-3, atol: 1e-3 },
};
/** Ops whose float32 results need more than rtol 1e-5 (why: see docs/conformance.md). */
export const OP_TOLERANCE: Readonly<Record<string, { rtol: number; atol: number }>> = {};

export interface Prepared {
  name: string;
  op: string;
  /** Kernel source for the case's statements (parameters are named c<k>_...). */
  params: string[];
  pre: string[];
  stmts: string[];
  args: () => HostTensor[];
  outputs: { index: number; param: string; dtype: DType; expected: OnnxTensor; tol: { rtol: number; atol: number } | null }[];
}
export type CaseResult = { name: string; op: string; status: "pass" } | { name: string; op: string; status: "skip"; reason: string } | { name: string; op: string; status: "fail"; reason: string };

/** The op a case tests (its single node's op type, or the ops of a multi-node graph). */
export function caseOp(m: OnnxModel): string {
  const ops = [...new Set(m.nodes.map((n) => n.opType))];
  return ops.length === 1 ? ops[0] : `(graph: ${ops.join(", ")})`;
}

function hostOf(t: OnnxTensor, d: DType, shape: number[]): HostTensor {
  const v = t.values!;
  let data;
  switch (d) {
    case "float32": data = Float32Array.from(v); break;
    case "float16": case "bfloat16": data = Uint16Array.from(t.bits16 ?? v); break;
    case "int8": data = Int8Array.from(v); break;
    case "int16": data = Int16Array.from(v); break;
    case "int32": data = Int32Array.from(v); break;
    case "int64": data = BigInt64Array.from(v, (x) => BigInt(x)); break;
    case "uint8": case "bool": data = Uint8Array.from(v); break;
  }
  return new HostTensor(data, shape, d);
}
const shapeOf = (dims: number[]) => (dims.length ? dims : [1]);

/** Values of a stored tensor when the model's type says what its bits are (bfloat16 is stored as UINT16). */
function retype(t: OnnxTensor, elemType: string | null): OnnxTensor {
  if (elemType === "BFLOAT16" && t.dtype === "UINT16") {
    const dv = new DataView(new ArrayBuffer(4));
    const bits = t.values!;
    return { ...t, dtype: "BFLOAT16", bits16: bits, values: bits.map((h) => { dv.setUint32(0, h << 16); return dv.getFloat32(0); }) };
  }
  return t;
}

/** Translates case `dir` (test_data_set_0) into kernel statements with parameter prefix `p`; throws Skip with the reason. */
export function prepareCase(dir: string, p: string): Prepared {
  const name = dir.split("/").pop()!;
  const m = readModel(readFileSync(join(dir, "model.onnx")));
  const op = caseOp(m);
  const ds = join(dir, "test_data_set_0");
  if (!existsSync(ds)) throw new Skip("no test data set");
  const files = readdirSync(ds);
  const readPb = (f: string) => { try { return readTensor(readFileSync(join(ds, f))); } catch (e) { throw new Skip(`test data ${f} is not a tensor (${(e as Error).message})`); } };
  for (const vi of [...m.inputs, ...m.outputs]) if (vi.elemType === null) throw new Skip(`'${vi.name}' is a sequence, map or optional, not a tensor`);
  const inputs = m.inputs.map((vi, i) => (files.includes(`input_${i}.pb`) ? retype(readPb(`input_${i}.pb`), vi.elemType) : null));
  const outputs = m.outputs.map((vi, i) => { if (!files.includes(`output_${i}.pb`)) throw new Skip(`no output_${i}.pb`); return retype(readPb(`output_${i}.pb`), vi.elemType); });
  for (const t of [...inputs, ...outputs]) if (t && t.dims.some((d) => d === 0)) throw new Skip("a zero-size tensor: tspto tensors have no zero-size dimensions");
  const params: string[] = [];
  const hosts: (() => HostTensor)[] = [];
  const values = new Map<string, V>();
  m.inputs.forEach((vi, i) => {
    const t = inputs[i];
    if (!t) throw new Skip(`input '${vi.name}' has no test data`);
    const d = DTYPE_OF[vi.elemType ?? t.dtype];
    if (!d || t.values === null) {
      // not a tspto dtype: usable only as a parameterizing value (never a kernel operand)
      values.set(vi.name, { ref: `__no_dtype_${vi.elemType ?? t.dtype}__`, shape: shapeOf(t.dims), dtype: "int64", data: t.values });
      return;
    }
    const ref = `${p}in${i}`;
    params.push(`${ref}: pl.Tensor`);
    hosts.push(() => hostOf(t, d, shapeOf(t.dims)));
    values.set(vi.name, { ref, shape: shapeOf(t.dims), dtype: d, data: t.values });
  });
  // graph outputs: pl.Out parameters of the expected shapes and dtypes
  const outParams = new Map<string, { ref: string; shape: number[]; dtype: DType; written: boolean; index: number }>();
  m.outputs.forEach((vi, i) => {
    const t = outputs[i];
    const d = DTYPE_OF[vi.elemType ?? t.dtype];
    if (!d) throw new Skip(`output '${vi.name}' is ${vi.elemType ?? t.dtype}: no tspto dtype`);
    outParams.set(vi.name, { ref: `${p}out${i}`, shape: shapeOf(t.dims), dtype: d, written: false, index: i });
  });
  const e = new Emit(p, (onnxName, shape, dtype) => {
    const o = outParams.get(onnxName);
    if (!o || o.written || o.dtype !== dtype || o.shape.length !== shape.length || o.shape.some((x, i) => x !== shape[i])) return null;
    o.written = true;
    return o.ref;
  });
  for (const node of m.nodes) {
    if (node.domain && node.domain !== "ai.onnx") throw new Skip(`op of domain ${node.domain}`);
    if (node.opType === "Constant") {
      const t = constantValue(node);
      if (!t) throw new Skip("a Constant of a non-tensor value");
      const d = DTYPE_OF[t.dtype];
      if (!d || !t.values) { values.set(node.outputs[0], { ref: `__no_dtype_${t.dtype}__`, shape: shapeOf(t.dims), dtype: "int64", data: t.values, static: true }); continue; }
      values.set(node.outputs[0], e.constant(t.values, shapeOf(t.dims), d));
      continue;
    }
    const tr = translatorOf(node.opType);
    if (!tr) throw new Skip(`tspto has no counterpart for ONNX ${node.opType}`);
    const ins = node.inputs.map((n) => (n === "" ? null : values.get(n) ?? null));
    for (const [k, n] of node.inputs.entries()) if (n !== "" && !ins[k]) throw new Skip(`input '${n}' of ${node.opType} is not produced by a translated node`);
    const outs = tr({ node, ins, e, opset: m.opset });
    if (outs.length < node.outputs.filter((o) => o !== "").length) throw new Skip(`${node.opType}: only ${outs.length} of its ${node.outputs.length} outputs are produced`);
    outs.forEach((v, k) => values.set(node.outputs[k], v));
  }
  if (e.stmts.some((s) => s.includes("__no_dtype_"))) {
    const d = /__no_dtype_(\w+?)__/.exec(e.stmts.join(" "))![1];
    throw new Skip(`an operand of ${d}: no tspto dtype`);
  }
  // outputs not written in place (another shape): reshape into the parameter
  for (const [onnxName, o] of outParams) {
    if (o.written) continue;
    const v = values.get(onnxName);
    if (!v) throw new Skip(`output '${onnxName}' is not produced`);
    if (v.dtype !== o.dtype) throw new Error(`translated ${op}: output '${onnxName}' is ${v.dtype}, ONNX's is ${o.dtype}`);
    e.stmts.push(`pl.assign(${o.ref}, ${numel(v.shape) === numel(o.shape) && v.shape.join() !== o.shape.join() ? `pl.reshape(${v.ref}, [${o.shape.join(", ")}])` : v.ref});`);
  }
  // the graph's constants that the statements use: input tensors of host data
  const all = [...e.pre, ...e.stmts].join("\n");
  for (const [ref, k] of e.constants) {
    if (!new RegExp(`\\b${ref}\\b`).test(all)) continue;
    params.push(`${ref}: pl.Tensor`);
    hosts.push(() => hostOf({ name: ref, dims: k.shape, dtype: "", values: k.values }, k.dtype, k.shape));
  }
  const outList = [...outParams.values()].sort((a, b) => a.index - b.index);
  for (const o of outList) { params.push(`${o.ref}: pl.Out<pl.Tensor>`); }
  const outHosts = outList.map((o) => () => new HostTensor(new (typedFor(o.dtype))(numel(o.shape)) as never, o.shape, o.dtype));
  return {
    name, op, params, pre: e.pre, stmts: e.stmts,
    args: () => [...hosts.map((h) => h()), ...outHosts.map((h) => h())],
    outputs: outList.map((o) => ({ index: o.index, param: o.ref, dtype: o.dtype, expected: outputs[o.index], tol: TOLERANCE[o.dtype] ? OP_TOLERANCE[op] ?? TOLERANCE[o.dtype] : null })),
  };
}

function typedFor(d: DType) {
  switch (d) {
    case "float32": return Float32Array;
    case "float16": case "bfloat16": return Uint16Array;
    case "int8": return Int8Array;
    case "int16": return Int16Array;
    case "int32": return Int32Array;
    case "int64": return BigInt64Array;
    default: return Uint8Array;
  }
}

function decode(t: HostTensor): number[] {
  const d = t.dtype;
  const dv = new DataView(new ArrayBuffer(4));
  if (d === "bfloat16") return Array.from(t.data as Uint16Array, (h) => { dv.setUint32(0, h << 16); return dv.getFloat32(0); });
  if (d === "float16") return Array.from(t.data as Uint16Array, (h) => {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    return e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  });
  if (d === "int64") return Array.from(t.data as BigInt64Array, Number);
  return Array.from(t.data as ArrayLike<number>);
}

/** The first element that differs, described; null when all agree. */
export function compareOutput(got: HostTensor, want: OnnxTensor, tol: { rtol: number; atol: number } | null): string | null {
  const g = decode(got), w = want.values!;
  if (g.length !== w.length) return `${g.length} elements, ${w.length} expected`;
  let worst = -1, worstErr = 0;
  for (let i = 0; i < g.length; i++) {
    const a = g[i], b = w[i];
    if (Number.isNaN(b) ? Number.isNaN(a) : !tol ? a === b : Number.isFinite(b) ? Math.abs(a - b) <= tol.atol + tol.rtol * Math.abs(b) : a === b) continue;
    const err = Number.isFinite(a - b) ? Math.abs(a - b) / (Math.abs(b) || 1) : Infinity;
    if (worst < 0 || err > worstErr) { worst = i; worstErr = err; }
  }
  return worst < 0 ? null : `element ${worst}: got ${g[worst]}, expected ${w[worst]}${tol ? ` (rtol ${tol.rtol}, atol ${tol.atol})` : " (exact)"}`;
}

let work: string | null = null;
function workDir(): string {
  if (!work) {
    work = mkdtempSync(join(tmpdir(), "tspto-onnx-"));
    writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
  }
  return work;
}
export function cleanupOnnx(): void { if (work) rmSync(work, { recursive: true, force: true }); work = null; }

let modules = 0;
/** One module with one pl.jit entry holding the cases' scopes. */
async function buildBatch(cases: Prepared[]): Promise<(...a: unknown[]) => unknown> {
  const dir = join(workDir(), `b${modules++}`);
  mkdirSync(dir, { recursive: true });
  const body = cases.map((c) => [...c.pre.map((s) => `  ${s}`), ...c.stmts.map((s) => `  pl.at(pl.Level.CORE_GROUP, () => { ${s} });`)].join("\n")).join("\n");
  const first = cases[0].outputs[0].param;
  const src = `// generated by test/conformance/onnx_runner.ts: ${cases.map((c) => c.name).join(", ")}
import { pl } from ${JSON.stringify(SRC_INDEX)};
export const kernel = pl.jit(function onnx_batch(${cases.flatMap((c) => c.params).join(", ")}) {
${body}
  return ${first};
});
`;
  const file = join(dir, "kernel.ts");
  writeFileSync(file, src);
  return ((await import(pathToFileURL(file).href)) as { kernel: (...a: unknown[]) => unknown }).kernel;
}

/** Runs prepared cases on `platform` in batches; a batch that fails is split until each failure is one case. */
export async function runPrepared(cases: Prepared[], platform: string, batch = 40): Promise<Map<string, string | null>> {
  const result = new Map<string, string | null>();
  const cfg = new RunConfig({ platform });
  const attempt = async (group: Prepared[]): Promise<void> => {
    let args: HostTensor[][];
    try {
      const kernel = await buildBatch(group);
      args = group.map((c) => c.args());
      kernel(...args.flat(), cfg);
    } catch (e) {
      if (group.length === 1) { result.set(group[0].name, `${platform}: ${(e as Error).message.split("\n").slice(0, 4).join(" / ")}`); return; }
      const h = Math.ceil(group.length / 2);
      await attempt(group.slice(0, h));
      await attempt(group.slice(h));
      return;
    }
    group.forEach((c, k) => {
      const a = args[k];
      const nIn = a.length - c.outputs.length;
      let why: string | null = null;
      c.outputs.forEach((o, j) => { why ??= compareOutput(a[nIn + j], o.expected, o.tol); if (why) why = `${platform} output ${o.index}: ${why}`; });
      result.set(c.name, why);
    });
  };
  for (let i = 0; i < cases.length; i += batch) await attempt(cases.slice(i, i + batch));
  return result;
}

/** Every node test: prepared (or skipped with the reason), run on each platform, compared. */
export async function runOnnxNodeTests(platforms: readonly string[], filter?: (name: string) => boolean): Promise<CaseResult[]> {
  const dirs = readdirSync(ONNX_NODE_DIR).filter((d) => d.startsWith("test_") && (!filter || filter(d))).sort();
  const results: CaseResult[] = [];
  const prepared: Prepared[] = [];
  dirs.forEach((d, k) => {
    const dir = join(ONNX_NODE_DIR, d);
    let op = "?";
    try { op = caseOp(readModel(readFileSync(join(dir, "model.onnx")))); } catch { /* reported below */ }
    try {
      prepared.push(prepareCase(dir, `c${k}_`));
    } catch (e) {
      if (e instanceof Skip) results.push({ name: d, op, status: "skip", reason: e.message });
      else results.push({ name: d, op, status: "fail", reason: `translation: ${(e as Error).message}` });
    }
  });
  const failures = new Map<string, string>();
  for (const p of platforms) {
    for (const [name, why] of await runPrepared(prepared, p)) if (why && !failures.has(name)) failures.set(name, why);
  }
  for (const c of prepared) {
    const why = failures.get(c.name);
    results.push(why ? { name: c.name, op: c.op, status: "fail", reason: why } : { name: c.name, op: c.op, status: "pass" });
  }
  return results.sort((a, b) => (a.name < b.name ? -1 : 1));
}
