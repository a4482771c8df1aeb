// ONNX operators as tspto kernel source: each translator turns one node of a backend test
// (its attributes, the shapes and dtypes of its inputs, and the values of the small inputs
// that parameterize it: shapes, axes, bounds) into tensor-level tspto statements, or says
// why tspto cannot express it (the case is then skipped and counted, not failed).
//
// Every node's result is written to its own tensor (a pl.Out parameter for a graph output, a
// pl.createTensor for an intermediate), one pl.assign per pl.at scope. ONNX's
// multidirectional broadcasting aligns ranks with leading 1s (a reshape); reductions, softmax
// and arg-reductions over any axes move those axes last with pl.transpose swaps and reduce the
// rows of a 2-D view.
import type { DType } from "../../src/index.js";
import type { OnnxAttr, OnnxNode, OnnxTensor } from "./onnx_proto.js";

/** ONNX element type -> tspto dtype (the others have none). */
export const DTYPE_OF: Readonly<Record<string, DType>> = {
  FLOAT: "float32", FLOAT16: "float16", BFLOAT16: "bfloat16", INT8: "int8", INT16: "int16", INT32: "int32", INT64: "int64", UINT8: "uint8", BOOL: "bool",
};
const PL_DT: Record<DType, string> = {
  float32: "pl.FP32", float16: "pl.FP16", bfloat16: "pl.BF16", int8: "pl.INT8", int16: "pl.INT16", int32: "pl.INT32", int64: "pl.INT64", uint8: "pl.UINT8", bool: "pl.BOOL",
};
const isFloat = (d: DType) => d === "float32" || d === "float16" || d === "bfloat16";

/** A tensor of the program: its variable, shape (rank >= 1; ONNX rank 0 is [1]) and dtype; `data` when its values are known (graph inputs, constants). */
export interface V { ref: string; shape: number[]; dtype: DType; data?: number[] | null; static?: boolean }

export class Skip extends Error {}
const skip = (why: string): never => { throw new Skip(why); };

/** Collects one case's statements. */
export class Emit {
  readonly pre: string[] = [];
  readonly stmts: string[] = [];
  /** Host data the kernel takes as extra input tensors (constants of the graph), by parameter name. */
  readonly constants = new Map<string, { values: number[]; shape: number[]; dtype: DType }>();
  #n = 0;
  /** A tensor of values known when the kernel is built (a Constant, a folded shape computation): an input parameter. */
  constant(values: number[], shape: number[], dtype: DType): V {
    const ref = `${this.prefix}k${this.constants.size}`;
    this.constants.set(ref, { values, shape, dtype });
    return { ref, shape, dtype, data: values, static: true };
  }
  constructor(readonly prefix: string, readonly outTarget: (onnxName: string, shape: number[], dtype: DType) => string | null) {}
  /** A fresh intermediate tensor (pl.createTensor in the orchestration). */
  tmp(shape: number[], dtype: DType): string {
    const name = `${this.prefix}t${this.#n++}`;
    this.pre.push(`const ${name} = pl.createTensor([${shape.join(", ")}], ${PL_DT[dtype]});`);
    return name;
  }
  /** The value `expr` of `shape`/`dtype` written to the node output `onnxName` (a graph output's parameter, else a new tensor). */
  value(expr: string, shape: number[], dtype: DType, onnxName?: string): V {
    const target = (onnxName !== undefined ? this.outTarget(onnxName, shape, dtype) : null) ?? this.tmp(shape, dtype);
    this.stmts.push(`pl.assign(${target}, ${expr});`);
    return { ref: target, shape, dtype };
  }
  reshape(v: V, shape: number[], onnxName?: string): V {
    if (numel(shape) !== numel(v.shape)) throw new Error(`internal: reshape [${v.shape}] -> [${shape}]`);
    if (onnxName === undefined && sameShape(shape, v.shape)) return v;
    if (sameShape(shape, v.shape)) return this.value(v.ref, shape, v.dtype, onnxName);
    return this.value(`pl.reshape(${v.ref}, [${shape.join(", ")}])`, shape, v.dtype, onnxName);
  }
  /** v with its axes in the order `perm` (one pl.transpose per swap). */
  permute(v: V, perm: number[]): V {
    const cur = v.shape.map((_, i) => i);
    let x = v;
    for (let i = 0; i < perm.length; i++) {
      const j = cur.indexOf(perm[i]);
      if (j === i) continue;
      const shape = [...x.shape];
      [shape[i], shape[j]] = [shape[j], shape[i]];
      [cur[i], cur[j]] = [cur[j], cur[i]];
      x = this.value(`pl.transpose(${x.ref}, ${i}, ${j})`, shape, x.dtype);
    }
    return x;
  }
  /** v with leading 1s up to `rank` (ONNX broadcasting aligns trailing dimensions). */
  rank(v: V, rank: number): V {
    return v.shape.length >= rank ? v : this.reshape(v, [...new Array(rank - v.shape.length).fill(1), ...v.shape]);
  }
}

export const numel = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const sameShape = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);
function broadcast(shapes: number[][]): number[] {
  const r = Math.max(...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let k = 0; k < r; k++) {
    let d = 1;
    for (const s of shapes) {
      const e = s[s.length - r + k] ?? 1;
      if (e !== 1 && d !== 1 && e !== d) skip(`shapes [${shapes.map((x) => `[${x}]`).join(", ")}] do not broadcast`);
      if (e !== 1) d = e;
    }
    out.push(d);
  }
  return out;
}

/** A number as kernel source (NaN, ±Infinity and -0 included). */
export function num(v: number, d: DType): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (!isFloat(d)) return String(Math.trunc(v));
  const s = Object.is(v, -0) ? "-0.0" : String(v);
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

const attrI = (n: OnnxNode, k: string, def: number): number => { const a = n.attrs.get(k); return a?.kind === "int" ? a.value : def; };
const attrF = (n: OnnxNode, k: string, def: number): number => { const a = n.attrs.get(k); return a?.kind === "float" ? a.value : a?.kind === "int" ? a.value : def; };
const attrInts = (n: OnnxNode, k: string): number[] | null => { const a = n.attrs.get(k); return a?.kind === "ints" ? a.value : null; };
const attrS = (n: OnnxNode, k: string, def: string): string => { const a = n.attrs.get(k); return a?.kind === "string" ? a.value : def; };

/** The values of a parameterizing input (shape, axes, bounds) that the case's data gives. */
function known(v: V | null, what: string): number[] {
  if (!v) return skip(`${what} is missing`);
  if (!v.data) return skip(`${what} is computed in the graph, not given: tspto needs it when the kernel is built`);
  return v.data;
}
const normAxis = (a: number, rank: number) => (a < 0 ? a + rank : a);

export interface Ctx { node: OnnxNode; ins: (V | null)[]; e: Emit; opset: number }
type Translator = (c: Ctx) => V[];

function needDTypes(c: Ctx, ok: (d: DType) => boolean, what: string): void {
  for (const v of c.ins) if (v && !ok(v.dtype)) skip(`${c.node.opType} of ${v.dtype}: ${what}`);
}

/** An elementwise node: operands broadcast (ranks aligned), `f` builds the expression from their variables. */
function elementwise(f: (xs: string[], d: DType, c: Ctx) => string, opts: { out?: (d: DType) => DType; floatOnly?: boolean; intOnly?: boolean; inputs?: number } = {}): Translator {
  return (c) => {
    const ins = c.ins.slice(0, opts.inputs ?? c.ins.length).filter((v): v is V => !!v);
    if (opts.floatOnly) needDTypes(c, isFloat, "tspto's op takes float dtypes only");
    if (opts.intOnly) needDTypes(c, (d) => !isFloat(d) && d !== "bool", "tspto's op takes integer dtypes only");
    const shape = broadcast(ins.map((v) => v.shape));
    const xs = ins.map((v) => c.e.rank(v, shape.length).ref);
    const d = ins[0].dtype;
    return [c.e.value(f(xs, d, c), shape, opts.out ? opts.out(d) : d, c.node.outputs[0])];
  };
}
const unary = (op: string, opts?: { floatOnly?: boolean; intOnly?: boolean }) => elementwise(([x]) => `pl.${op}(${x})`, opts);
const binary = (op: string, opts?: { floatOnly?: boolean; intOnly?: boolean }) => elementwise(([a, b]) => `pl.${op}(${a}, ${b})`, opts);
const variadic = (op: string) => elementwise((xs) => xs.slice(1).reduce((acc, x) => `pl.${op}(${acc}, ${x})`, xs[0]));
const compare = (mode: string) => elementwise(([a, b]) => `pl.cmp(${a}, ${b}, "${mode}")`, { out: () => "bool" });

/** Reduce `axes` of v (keepdims or not) with `rowOp` over the rows of a 2-D view: the reduced axes moved last. */
function reduceAxes(c: Ctx, v: V, axes: number[], keepdims: boolean, rowOp: (x: string) => string, outD: DType, post?: (x: string) => string): V {
  const r = v.shape.length;
  const red = [...new Set(axes.map((a) => normAxis(a, r)))].sort((a, b) => a - b);
  const keep = v.shape.map((_, i) => i).filter((i) => !red.includes(i));
  const perm = [...keep, ...red];
  const moved = c.e.permute(v, perm);
  const lead = numel(keep.map((i) => v.shape[i])), len = numel(red.map((i) => v.shape[i]));
  const flat = c.e.reshape(moved, [lead, len]);
  const outShape = keepdims ? v.shape.map((d, i) => (red.includes(i) ? 1 : d)) : keep.map((i) => v.shape[i]);
  const s = outShape.length ? outShape : [1];
  const red2 = c.e.value(rowOp(flat.ref), [lead, 1], outD);
  const fin = post ? c.e.value(post(red2.ref), [lead, 1], outD) : red2;
  return c.e.reshape(fin, s, c.node.outputs[0]);
}

function reduceOp(kind: "Sum" | "Max" | "Min" | "Prod" | "Mean" | "SumSquare" | "L1" | "L2" | "LogSum" | "LogSumExp"): Translator {
  return (c) => {
    const x = c.ins[0]!;
    if (x.dtype === "bool") skip("reductions of bool tensors: tspto reduces numbers");
    // opset 13 ReduceSum (and opset 18 for the others) takes axes as an input
    let axes = attrInts(c.node, "axes");
    if (!axes && c.ins[1]) axes = known(c.ins[1], "the axes input");
    const noop = attrI(c.node, "noop_with_empty_axes", 0) === 1;
    if (!axes || axes.length === 0) {
      if (noop) return [c.e.value(x.ref, x.shape, x.dtype, c.node.outputs[0])];
      axes = x.shape.map((_, i) => i);
    }
    const keepdims = attrI(c.node, "keepdims", 1) === 1;
    const count = numel(axes.map((a) => x.shape[normAxis(a, x.shape.length)]));
    if (!isFloat(x.dtype) && ["Mean", "L2", "LogSum", "LogSumExp"].includes(kind)) skip(`Reduce${kind} of ${x.dtype}: a float result of integers`);
    const row = { Sum: "rowSum", Max: "rowMax", Min: "rowMin", Prod: "rowProd", Mean: "rowSum", SumSquare: "rowSum", L1: "rowSum", L2: "rowSum", LogSum: "rowSum", LogSumExp: "rowSum" }[kind];
    const inner = { SumSquare: (t: string) => `pl.mul(${t}, ${t})`, L1: (t: string) => `pl.abs(${t})`, L2: (t: string) => `pl.mul(${t}, ${t})`, LogSumExp: (t: string) => `pl.exp(${t})` }[kind as string] as ((t: string) => string) | undefined;
    const post = { Mean: (t: string) => `pl.div(${t}, ${num(count, x.dtype)})`, L2: (t: string) => `pl.sqrt(${t})`, LogSum: (t: string) => `pl.log(${t})`, LogSumExp: (t: string) => `pl.log(${t})` }[kind as string] as ((t: string) => string) | undefined;
    return [reduceAxes(c, x, axes, keepdims, (t) => `pl.${row}(${inner ? inner(t) : t})`, x.dtype, post)];
  };
}

/** ArgMax / ArgMin: tspto's rowArgmax gives int32 (first on ties); ONNX's result is int64. */
function argOp(kind: "max" | "min"): Translator {
  return (c) => {
    const x = c.ins[0]!;
    if (attrI(c.node, "select_last_index", 0) === 1) skip("select_last_index=1: tspto's arg-reductions return the first index of the extreme");
    if (x.dtype === "bool") skip("arg-reductions of bool tensors");
    const axis = normAxis(attrI(c.node, "axis", 0), x.shape.length);
    const keepdims = attrI(c.node, "keepdims", 1) === 1;
    const r = x.shape.length;
    const keep = x.shape.map((_, i) => i).filter((i) => i !== axis);
    const moved = c.e.permute(x, [...keep, axis]);
    const lead = numel(keep.map((i) => x.shape[i]));
    const flat = c.e.reshape(moved, [lead, x.shape[axis]]);
    const idx = c.e.value(`pl.row${kind === "max" ? "Argmax" : "Argmin"}(${flat.ref})`, [lead, 1], "int32");
    const outShape = keepdims ? x.shape.map((d, i) => (i === axis ? 1 : d)) : keep.map((i) => x.shape[i]);
    void r;
    const wide = c.e.value(`pl.cast(${idx.ref}, pl.INT64)`, [lead, 1], "int64");
    return [c.e.reshape(wide, outShape.length ? outShape : [1], c.node.outputs[0])];
  };
}

/** Softmax / LogSoftmax along `axis` (opset >= 13), or over the 2-D coercion [prod(0..axis), prod(axis..)] before. */
function softmaxOp(log: boolean): Translator {
  return (c) => {
    const x = c.ins[0]!;
    if (!isFloat(x.dtype)) skip("softmax of integers");
    const r = x.shape.length;
    const axis = normAxis(attrI(c.node, "axis", c.opset >= 13 ? -1 : 1), r);
    let flat: V, back: (v: V) => V;
    if (c.opset >= 13) {
      const keep = x.shape.map((_, i) => i).filter((i) => i !== axis);
      const perm = [...keep, axis];
      const moved = c.e.permute(x, perm);
      const lead = numel(keep.map((i) => x.shape[i]));
      flat = c.e.reshape(moved, [lead, x.shape[axis]]);
      const inv = perm.map((_, i) => perm.indexOf(i));
      back = (v) => {
        const un = c.e.reshape(v, moved.shape);
        const p = c.e.permute(un, inv);
        return c.e.reshape(p, x.shape, c.node.outputs[0]);
      };
    } else {
      flat = c.e.reshape(x, [numel(x.shape.slice(0, axis)), numel(x.shape.slice(axis))]);
      back = (v) => c.e.reshape(v, x.shape, c.node.outputs[0]);
    }
    const [m, n] = flat.shape;
    const sh = c.e.value(`pl.sub(${flat.ref}, pl.rowMax(${flat.ref}))`, [m, n], x.dtype);
    const out = log
      ? c.e.value(`pl.sub(${sh.ref}, pl.log(pl.rowSum(pl.exp(${sh.ref}))))`, [m, n], x.dtype)
      : c.e.value(`pl.div(pl.exp(${sh.ref}), pl.rowSum(pl.exp(${sh.ref})))`, [m, n], x.dtype);
    return [back(out)];
  };
}

function castTo(d: DType, from: DType): string {
  // ONNX Cast: float -> integer truncates (C); to a float format nearest-even, but ONNX's
  // bfloat16 conversion drops the low mantissa bits (trunc); integers -> floats nearest-even
  const mode = isFloat(from) && !isFloat(d) && d !== "bool" ? "trunc" : d === "bfloat16" && from === "float32" ? "trunc" : "rint";
  return `pl.cast(X, ${PL_DT[d]}, "${mode}")`;
}

const matmul: Translator = (c) => {
  const [a, b] = c.ins as V[];
  if (a.dtype !== b.dtype) skip(`MatMul of ${a.dtype} and ${b.dtype}`);
  if (!isFloat(a.dtype) && a.dtype !== "int8") skip(`MatMul of ${a.dtype}: tspto's matmul takes float and int8 inputs`);
  const outD: DType = isFloat(a.dtype) ? "float32" : "int32";
  if (a.dtype !== "float32") skip(`MatMul of ${a.dtype}: ONNX's result is ${a.dtype}, tspto accumulates and returns ${outD}`);
  let as = a.shape, bs = b.shape;
  const a1 = as.length === 1, b1 = bs.length === 1;
  const A = a1 ? c.e.reshape(a, [1, as[0]]) : a;
  const Bv = b1 ? c.e.reshape(b, [bs[0], 1]) : b;
  as = A.shape; bs = Bv.shape;
  const M = as[as.length - 2], K = as[as.length - 1], N = bs[bs.length - 1];
  const batchA = as.slice(0, -2), batchB = bs.slice(0, -2);
  const batch = broadcast([batchA, batchB]);
  const onnxOut = [...batch, ...(a1 ? [] : [M]), ...(b1 ? [] : [N])];
  if (!batch.length) return [c.e.reshape(c.e.value(`pl.matmul(${A.ref}, ${Bv.ref})`, [M, N], outD), onnxOut.length ? onnxOut : [1], c.node.outputs[0])];
  if (!sameShape(batchA, batch) || !sameShape(batchB, batch)) skip("MatMul with broadcast batch dimensions");
  const Bn = numel(batch);
  const A3 = c.e.reshape(A, [Bn, M, K]), B3 = c.e.reshape(Bv, [Bn, K, N]);
  const r = c.e.value(`pl.batchMatmul(${A3.ref}, ${B3.ref})`, [Bn, M, N], outD);
  return [c.e.reshape(r, onnxOut, c.node.outputs[0])];
};

const gemm: Translator = (c) => {
  const [a, b, cc] = c.ins;
  if (a!.dtype !== "float32" || b!.dtype !== "float32") skip(`Gemm of ${a!.dtype}`);
  const tA = attrI(c.node, "transA", 0) === 1, tB = attrI(c.node, "transB", 0) === 1;
  const alpha = attrF(c.node, "alpha", 1), beta = attrF(c.node, "beta", 1);
  const M = tA ? a!.shape[1] : a!.shape[0], N = tB ? b!.shape[0] : b!.shape[1];
  const opts = [tA ? "aTrans: true" : "", tB ? "bTrans: true" : ""].filter(Boolean);
  let expr = `pl.matmul(${a!.ref}, ${b!.ref}${opts.length ? `, { ${opts.join(", ")} }` : ""})`;
  if (alpha !== 1) expr = `pl.mul(${expr}, ${num(alpha, "float32")})`;
  if (cc) {
    broadcast([cc.shape, [M, N]]);
    const C = c.e.rank(cc, 2);
    expr = `pl.add(${expr}, ${beta !== 1 ? `pl.mul(${C.ref}, ${num(beta, "float32")})` : C.ref})`;
  }
  return [c.e.value(expr, [M, N], "float32", c.node.outputs[0])];
};

function reshapeTo(c: Ctx, shape: number[]): V[] {
  const x = c.ins[0]!;
  return [c.e.reshape(x, shape.length ? shape : [1], c.node.outputs[0])];
}

/**
 * Floor / Ceil / Round (half to even) of floats, through a cast to int64 in that mode and
 * back: exact for finite values within ±2^53, which the case's data must be (a NaN or an
 * infinity would come back as 0 or a saturated integer).
 */
function roundOp(mode: "floor" | "ceil" | "rint"): Translator {
  return (c) => {
    const x = c.ins[0]!;
    if (!isFloat(x.dtype)) skip("rounding of integers");
    if (!x.data) skip("the input is computed in the graph: its range is unknown when the kernel is built");
    if (x.data!.some((v) => !Number.isFinite(v) || Math.abs(v) >= 2 ** 53)) skip("non-finite or huge inputs: rounding goes through int64");
    return elementwise(([v], d) => `pl.cast(pl.cast(${v}, pl.INT64, "${mode}"), ${PL_DT[d]})`)(c);
  };
}

/**
 * LayerNormalization (opset 17): over the axes from `axis` on, Y = (X - mean) / sqrt(var +
 * epsilon) * scale + B, with the optional outputs Mean and InvStdDev (the reduced axes kept as 1).
 */
const layerNorm: Translator = (c) => {
  const [x, scale, bias] = c.ins;
  if (x!.dtype !== "float32") skip(`LayerNormalization of ${x!.dtype}`);
  const r = x!.shape.length;
  const axis = normAxis(attrI(c.node, "axis", -1), r);
  const eps = attrF(c.node, "epsilon", 1e-5);
  const lead = numel(x!.shape.slice(0, axis)), len = numel(x!.shape.slice(axis));
  const flat = c.e.reshape(x!, [lead, len]);
  // a reduction inside an expression broadcasts back to the expression's shape: the [lead, 1] statistics are statements of their own
  const sum = c.e.value(`pl.rowSum(${flat.ref})`, [lead, 1], "float32");
  const mean = c.e.value(`pl.div(${sum.ref}, ${num(len, "float32")})`, [lead, 1], "float32");
  const dev = c.e.value(`pl.sub(${flat.ref}, ${mean.ref})`, [lead, len], "float32");
  const sq = c.e.value(`pl.rowSum(pl.mul(${dev.ref}, ${dev.ref}))`, [lead, 1], "float32");
  const inv = c.e.value(`pl.recip(pl.sqrt(pl.add(pl.div(${sq.ref}, ${num(len, "float32")}), ${num(eps, "float32")})))`, [lead, 1], "float32");
  const row = (v: V) => c.e.reshape(v, [1, len]);
  let y = `pl.mul(pl.mul(${dev.ref}, ${inv.ref}), ${row(scale!).ref})`;
  if (bias) y = `pl.add(${y}, ${row(bias).ref})`;
  const Y = c.e.reshape(c.e.value(y, [lead, len], "float32"), x!.shape, c.node.outputs[0]);
  const kept = x!.shape.map((d, i) => (i < axis ? d : 1));
  const outs = [Y];
  if (c.node.outputs[1]) outs.push(c.e.reshape(mean, kept, c.node.outputs[1]));
  if (c.node.outputs[2]) outs.push(c.e.reshape(inv, kept, c.node.outputs[2]));
  return outs;
};

/**
 * Shape computations on values known when the kernel is built (a Constant, or the static
 * shape of a tensor): folded on the host into constants, as an importer folds them; the
 * tensors they shape are computed by the kernel. Graph inputs are never folded.
 */
const FOLD: Record<string, (c: Ctx, xs: V[]) => { values: number[]; shape: number[]; dtype: DType } | null> = {
  Shape: (c, [x]) => {
    const r = x.shape.length, start = normAxis(attrI(c.node, "start", 0), r), end = c.node.attrs.has("end") ? normAxis(attrI(c.node, "end", r), r) : r;
    const v = x.shape.slice(start, end);
    return { values: v, shape: [v.length || 1], dtype: "int64" };
  },
  Size: (_c, [x]) => ({ values: [numel(x.shape)], shape: [1], dtype: "int64" }),
};
function foldStatic(c: Ctx): V[] | null {
  const xs = c.ins.filter((v): v is V => !!v);
  const f = FOLD[c.node.opType];
  if (f) {
    const r = f(c, xs);
    return r ? [c.e.constant(r.values, r.shape, r.dtype)] : null;
  }
  if (!xs.length || !xs.every((v) => v.static && v.data)) return null;
  const [a, b] = xs;
  const d = a.dtype;
  const ew = (g: (p: number, q: number) => number): V | null => {
    if (!b || !(a.data!.length === b.data!.length || b.data!.length === 1 || a.data!.length === 1)) return null;
    const n = Math.max(a.data!.length, b.data!.length);
    const vals = Array.from({ length: n }, (_, i) => g(a.data![a.data!.length === 1 ? 0 : i], b.data![b.data!.length === 1 ? 0 : i]));
    return c.e.constant(isFloat(d) ? vals : vals.map(Math.trunc), a.data!.length >= b.data!.length ? a.shape : b.shape, d);
  };
  switch (c.node.opType) {
    case "Identity": return [a];
    case "Neg": return [c.e.constant(a.data!.map((v) => -v), a.shape, d)];
    case "Add": { const v = ew((p, q) => p + q); return v ? [v] : null; }
    case "Sub": { const v = ew((p, q) => p - q); return v ? [v] : null; }
    case "Mul": { const v = ew((p, q) => p * q); return v ? [v] : null; }
    case "Cast": {
      const to = DTYPE_OF[onnxTypeName(c.node.attrs.get("to"))];
      return to && !isFloat(to) && to !== "bool" ? [c.e.constant(a.data!.map(Math.trunc), a.shape, to)] : null;
    }
    case "Concat": return a.shape.length === 1 ? [c.e.constant(xs.flatMap((v) => v.data!), [xs.reduce((s, v) => s + v.data!.length, 0)], d)] : null;
    case "Unsqueeze": case "Squeeze": case "Reshape": case "Flatten": return [{ ...a }];
    case "ConstantOfShape": {
      const t = c.node.attrs.get("value");
      const tv = t?.kind === "tensor" ? t.value : null;
      const td = tv ? DTYPE_OF[tv.dtype] : "float32";
      const n = numel(a.data!);
      if (!td || n === 0 || n > 4096) return null;
      return [c.e.constant(new Array(n).fill(tv?.values?.[0] ?? 0), a.data!.length ? a.data! : [1], td)];
    }
    default: return null;
  }
}

/** Per-channel parameters [C] of an [N, C, ...] tensor, shaped [1, C, 1, ...] to broadcast. */
const channel = (c: Ctx, v: V, rank: number): V => c.e.reshape(v, [1, v.shape[0], ...new Array(rank - 2).fill(1)]);

/** BatchNormalization in inference mode: (x - mean) / sqrt(var + epsilon) * scale + B per channel. */
const batchNorm: Translator = (c) => {
  const [x, scale, b, mean, vr] = c.ins as V[];
  if (attrI(c.node, "training_mode", 0) === 1) skip("training_mode=1: the running statistics are outputs of a training step");
  if (x.dtype !== "float32") skip(`BatchNormalization of ${x.dtype}`);
  const r = x.shape.length, eps = num(attrF(c.node, "epsilon", 1e-5), "float32");
  const [S, Bc, M, Vc] = [scale, b, mean, vr].map((v) => channel(c, v, r));
  return [c.e.value(`pl.add(pl.mul(pl.div(pl.sub(${x.ref}, ${M.ref}), pl.sqrt(pl.add(${Vc.ref}, ${eps}))), ${S.ref}), ${Bc.ref})`, x.shape, "float32", c.node.outputs[0])];
};

/** InstanceNormalization: per (n, c), normalized over the spatial axes, then scale and B per channel. */
const instanceNorm: Translator = (c) => {
  const [x, scale, b] = c.ins as V[];
  if (x.dtype !== "float32") skip(`InstanceNormalization of ${x.dtype}`);
  const r = x.shape.length, eps = attrF(c.node, "epsilon", 1e-5);
  const lead = x.shape[0] * x.shape[1], len = numel(x.shape.slice(2));
  const flat = c.e.reshape(x, [lead, len]);
  const sum = c.e.value(`pl.rowSum(${flat.ref})`, [lead, 1], "float32");
  const dev = c.e.value(`pl.sub(${flat.ref}, pl.div(${sum.ref}, ${num(len, "float32")}))`, [lead, len], "float32");
  const sq = c.e.value(`pl.rowSum(pl.mul(${dev.ref}, ${dev.ref}))`, [lead, 1], "float32");
  const inv = c.e.value(`pl.recip(pl.sqrt(pl.add(pl.div(${sq.ref}, ${num(len, "float32")}), ${num(eps, "float32")})))`, [lead, 1], "float32");
  const norm = c.e.reshape(c.e.value(`pl.mul(${dev.ref}, ${inv.ref})`, [lead, len], "float32"), x.shape);
  const [S, Bc] = [scale, b].map((v) => channel(c, v, r));
  return [c.e.value(`pl.add(pl.mul(${norm.ref}, ${S.ref}), ${Bc.ref})`, x.shape, "float32", c.node.outputs[0])];
};

/** GlobalAveragePool / GlobalMaxPool: a reduction over the spatial axes, kept as 1. */
const globalPool = (kind: "Mean" | "Max"): Translator => (c) => {
  const x = c.ins[0]!;
  const axes = x.shape.map((_, i) => i).slice(2);
  return reduceOp(kind)({ ...c, node: { ...c.node, attrs: new Map([...c.node.attrs, ["axes", { kind: "ints", value: axes }], ["keepdims", { kind: "int", value: 1 }]]) } });
};

/** DepthToSpace / SpaceToDepth: a reshape to 6-D, a transpose of it, a reshape back. */
const depthSpace = (toSpace: boolean): Translator => (c) => {
  const x = c.ins[0]!;
  if (x.shape.length !== 4) skip("a rank other than 4");
  const [N, C, H, W] = x.shape, b = attrI(c.node, "blocksize", 1);
  if (toSpace) {
    const crd = attrS(c.node, "mode", "DCR") === "CRD";
    const six = crd ? [N, C / (b * b), b, b, H, W] : [N, b, b, C / (b * b), H, W];
    const perm = crd ? [0, 1, 4, 2, 5, 3] : [0, 3, 4, 1, 5, 2];
    const t = c.e.permute(c.e.reshape(x, six), perm);
    return [c.e.reshape(t, [N, C / (b * b), H * b, W * b], c.node.outputs[0])];
  }
  const t = c.e.permute(c.e.reshape(x, [N, C, H / b, b, W / b, b]), [0, 3, 5, 1, 2, 4]);
  return [c.e.reshape(t, [N, C * b * b, H / b, W / b], c.node.outputs[0])];
};

const TRANSLATORS: Record<string, Translator> = {
  Identity: (c) => [c.e.value(c.ins[0]!.ref, c.ins[0]!.shape, c.ins[0]!.dtype, c.node.outputs[0])],
  Abs: unary("abs"), Neg: unary("neg"), Relu: unary("relu"),
  Exp: unary("exp", { floatOnly: true }), Log: unary("log", { floatOnly: true }), Sqrt: unary("sqrt", { floatOnly: true }),
  Reciprocal: unary("recip", { floatOnly: true }), Sigmoid: unary("sigmoid", { floatOnly: true }), Tanh: unary("tanh", { floatOnly: true }),
  Erf: unary("erf", { floatOnly: true }), Sin: unary("sin", { floatOnly: true }), Cos: unary("cos", { floatOnly: true }),
  Tan: elementwise(([x]) => `pl.div(pl.sin(${x}), pl.cos(${x}))`, { floatOnly: true }),
  Sinh: elementwise(([x]) => `pl.mul(pl.sub(pl.exp(${x}), pl.exp(pl.neg(${x}))), 0.5)`, { floatOnly: true }),
  Cosh: elementwise(([x]) => `pl.mul(pl.add(pl.exp(${x}), pl.exp(pl.neg(${x}))), 0.5)`, { floatOnly: true }),
  Softsign: elementwise(([x]) => `pl.div(${x}, pl.add(pl.abs(${x}), 1.0))`, { floatOnly: true }),
  Softplus: elementwise(([x]) => `pl.log(pl.add(pl.exp(${x}), 1.0))`, { floatOnly: true }),
  LeakyRelu: elementwise(([x], d, c) => `pl.lrelu(${x}, ${num(attrF(c.node, "alpha", 0.01), d)})`, { floatOnly: true }),
  ThresholdedRelu: elementwise(([x], d, c) => `pl.sel(pl.cmp(${x}, ${num(attrF(c.node, "alpha", 1), d)}, "gt"), ${x}, 0.0)`, { floatOnly: true }),
  Elu: elementwise(([x], d, c) => `pl.sel(pl.cmp(${x}, 0.0, "lt"), pl.mul(pl.sub(pl.exp(${x}), 1.0), ${num(attrF(c.node, "alpha", 1), d)}), ${x})`, { floatOnly: true }),
  Selu: elementwise(([x], d, c) => {
    const a = num(attrF(c.node, "alpha", 1.67326319217681884765625), d), g = num(attrF(c.node, "gamma", 1.05070102214813232421875), d);
    return `pl.mul(pl.sel(pl.cmp(${x}, 0.0, "le"), pl.mul(pl.sub(pl.exp(${x}), 1.0), ${a}), ${x}), ${g})`;
  }, { floatOnly: true }),
  Celu: elementwise(([x], d, c) => {
    const a = attrF(c.node, "alpha", 1);
    return `pl.add(pl.maximum(${x}, 0.0), pl.minimum(pl.mul(pl.sub(pl.exp(pl.div(${x}, ${num(a, d)})), 1.0), ${num(a, d)}), 0.0))`;
  }, { floatOnly: true }),
  HardSigmoid: elementwise(([x], d, c) => `pl.maximum(pl.minimum(pl.add(pl.mul(${x}, ${num(attrF(c.node, "alpha", 0.2), d)}), ${num(attrF(c.node, "beta", 0.5), d)}), 1.0), 0.0)`, { floatOnly: true }),
  HardSwish: elementwise(([x]) => `pl.mul(${x}, pl.maximum(pl.minimum(pl.add(pl.mul(${x}, ${num(1 / 6, "float32")}), 0.5), 1.0), 0.0))`, { floatOnly: true }),
  Sign: elementwise(([x], d) => `pl.sel(pl.cmp(${x}, 0, "gt"), ${num(1, d)}, pl.sel(pl.cmp(${x}, 0, "lt"), ${num(-1, d)}, pl.expands(${x}, 0)))`),
  IsNaN: elementwise(([x]) => `pl.cmp(${x}, ${x}, "ne")`, { floatOnly: true, out: () => "bool" }),
  IsInf: elementwise(([x], _d, c) => {
    const pos = attrI(c.node, "detect_positive", 1) === 1, neg = attrI(c.node, "detect_negative", 1) === 1;
    if (pos && neg) return `pl.cmp(pl.abs(${x}), Infinity, "eq")`;
    return pos ? `pl.cmp(${x}, Infinity, "eq")` : neg ? `pl.cmp(${x}, -Infinity, "eq")` : `pl.cmp(${x}, ${x}, "ne")`;
  }, { floatOnly: true, out: () => "bool" }),
  Floor: roundOp("floor"), Ceil: roundOp("ceil"), Round: roundOp("rint"),
  Add: binary("add"), Sub: binary("sub"), Mul: binary("mul"), Div: binary("div"),
  Pow: (c) => {
    const [a, b] = c.ins as V[];
    if (!isFloat(a.dtype)) skip(`Pow of a ${a.dtype} base: tspto's pow takes float dtypes`);
    return elementwise(([x, y]) => `pl.pow(${x}, ${b.dtype === a.dtype ? y : `pl.cast(${y}, ${PL_DT[a.dtype]})`})`)(c);
  },
  Mod: (c) => {
    const fmod = attrI(c.node, "fmod", 0) === 1;
    return binary(fmod ? "fmod" : "rem")(c);
  },
  Max: variadic("maximum"), Min: variadic("minimum"), Sum: variadic("add"),
  Mean: (c) => {
    const n = c.ins.filter(Boolean).length;
    needDTypes(c, isFloat, "a float mean");
    return elementwise((xs, d) => `pl.div(${xs.slice(1).reduce((acc, x) => `pl.add(${acc}, ${x})`, xs[0])}, ${num(n, d)})`)(c);
  },
  Equal: compare("eq"), Less: compare("lt"), Greater: compare("gt"), LessOrEqual: compare("le"), GreaterOrEqual: compare("ge"),
  Not: elementwise(([x]) => `pl.cmp(${x}, 0, "eq")`, { out: () => "bool" }),
  And: elementwise(([a, b]) => `pl.sel(${a}, ${b}, ${a})`),
  Or: elementwise(([a, b]) => `pl.sel(${a}, ${a}, ${b})`),
  Xor: elementwise(([a, b]) => `pl.cmp(${a}, ${b}, "ne")`, { out: () => "bool" }),
  Where: (c) => {
    const [m, a, b] = c.ins as V[];
    const shape = broadcast([m.shape, a.shape, b.shape]);
    const [M, A, Bv] = [m, a, b].map((v) => c.e.rank(v, shape.length));
    // a broadcast mask or operand: stretch it first (sel takes equal shapes or numbers)
    const full = (v: V) => (sameShape(v.shape, shape) ? v : c.e.value(`pl.broadcastTo(${v.ref}, [${shape.join(", ")}])`, shape, v.dtype));
    return [c.e.value(`pl.sel(${full(M).ref}, ${full(A).ref}, ${full(Bv).ref})`, shape, a.dtype, c.node.outputs[0])];
  },
  PRelu: elementwise(([x, s]) => `pl.sel(pl.cmp(${x}, 0.0, "lt"), pl.mul(${x}, ${s}), ${x})`, { floatOnly: true }),
  BitShift: (c) => {
    const dir = attrS(c.node, "direction", "");
    return elementwise(([a, b]) => `pl.${dir === "LEFT" ? "shl" : "shr"}(${a}, ${b})`, { intOnly: true })(c);
  },
  Clip: (c) => {
    const x = c.ins[0]!;
    const lo = c.opset >= 11 ? (c.ins[1] ? known(c.ins[1], "Clip's min")[0] : null) : attrF(c.node, "min", -Infinity);
    const hi = c.opset >= 11 ? (c.ins[2] ? known(c.ins[2], "Clip's max")[0] : null) : attrF(c.node, "max", Infinity);
    let expr = x.ref;
    if (lo !== null && lo !== -Infinity) expr = `pl.maximum(${expr}, ${num(lo, x.dtype)})`;
    if (hi !== null && hi !== Infinity) expr = `pl.minimum(${expr}, ${num(hi, x.dtype)})`;
    return [c.e.value(expr, x.shape, x.dtype, c.node.outputs[0])];
  },
  Cast: (c) => {
    const to = c.node.attrs.get("to");
    const d = DTYPE_OF[onnxTypeName(to)];
    if (!d) skip(`Cast to ${onnxTypeName(to)}: no tspto dtype`);
    const x = c.ins[0]!;
    return [c.e.value(castTo(d, x.dtype).replace("X", x.ref), x.shape, d, c.node.outputs[0])];
  },
  CastLike: (c) => {
    const x = c.ins[0]!, like = c.ins[1]!;
    return [c.e.value(castTo(like.dtype, x.dtype).replace("X", x.ref), x.shape, like.dtype, c.node.outputs[0])];
  },
  MatMul: matmul, Gemm: gemm, LayerNormalization: layerNorm,
  BatchNormalization: batchNorm, InstanceNormalization: instanceNorm,
  GlobalAveragePool: globalPool("Mean"), GlobalMaxPool: globalPool("Max"),
  DepthToSpace: depthSpace(true), SpaceToDepth: depthSpace(false),
  Shrink: elementwise(([x], d, c) => {
    const l = num(attrF(c.node, "lambd", 0.5), d), b = num(attrF(c.node, "bias", 0), d);
    return `pl.sel(pl.cmp(${x}, -${l}, "lt"), pl.add(${x}, ${b}), pl.sel(pl.cmp(${x}, ${l}, "gt"), pl.sub(${x}, ${b}), 0.0))`;
  }, { floatOnly: true }),
  Dropout: (c) => {
    const x = c.ins[0]!;
    const training = c.ins[2] ? known(c.ins[2], "Dropout's training_mode")[0] !== 0 : false;
    const ratio = c.ins[1] ? known(c.ins[1], "Dropout's ratio")[0] : attrF(c.node, "ratio", 0.5);
    if (training && ratio !== 0) skip("training_mode with a ratio above 0: a random mask");
    const outs = [c.e.value(x.ref, x.shape, x.dtype, c.node.outputs[0])];
    if (c.node.outputs[1]) outs.push(c.e.value(`pl.full([${x.shape.join(", ")}], pl.BOOL, 1)`, x.shape, "bool", c.node.outputs[1]));
    return outs;
  },
  Split: (c) => {
    const x = c.ins[0]!;
    const r = x.shape.length, axis = normAxis(attrI(c.node, "axis", 0), r);
    const n = c.node.outputs.length;
    const parts = attrInts(c.node, "split") ?? (c.ins[1] ? known(c.ins[1], "Split's split") : new Array(n).fill(x.shape[axis] / n));
    if (parts.some((q) => !Number.isInteger(q) || q <= 0)) skip("uneven or empty parts");
    let off = 0;
    return parts.map((q, k) => {
      const shape = x.shape.map((d, i) => (i === axis ? q : d));
      const o = x.shape.map((_, i) => (i === axis ? off : 0));
      off += q;
      return c.e.value(`pl.slice(${x.ref}, [${shape.join(", ")}], [${o.join(", ")}])`, shape, x.dtype, c.node.outputs[k]);
    });
  },
  Pad: (c) => {
    const x = c.ins[0]!;
    if (attrS(c.node, "mode", "constant") !== "constant") skip(`Pad mode "${attrS(c.node, "mode", "")}": only constant padding is an assemble`);
    const pads = attrInts(c.node, "pads") ?? known(c.ins[1], "Pad's pads");
    const value = c.ins[2] ? known(c.ins[2], "Pad's constant value")[0] : attrF(c.node, "value", 0);
    const r = x.shape.length;
    if (pads.some((p) => p < 0)) skip("negative pads (cropping)");
    const shape = x.shape.map((d, i) => d + pads[i] + pads[i + r]);
    const out = c.e.value(`pl.full([${shape.join(", ")}], ${PL_DT[x.dtype]}, ${num(value, x.dtype)})`, shape, x.dtype, c.node.outputs[0]);
    c.e.stmts.push(`pl.assemble(${out.ref}, ${x.ref}, [${pads.slice(0, r).join(", ")}]);`);
    return [out];
  },
  Tile: (c) => {
    const x = c.ins[0]!;
    const reps = known(c.ins[1], "Tile's repeats");
    const shape = x.shape.map((d, i) => d * reps[i]);
    if (numel(reps) > 512) skip("more than 512 copies");
    const target = c.e.outTarget(c.node.outputs[0], shape, x.dtype) ?? c.e.tmp(shape, x.dtype);
    const idx = reps.map(() => 0);
    for (let k = 0; k < numel(reps); k++) {
      let q = k;
      for (let i = reps.length - 1; i >= 0; i--) { idx[i] = q % reps[i]; q = Math.floor(q / reps[i]); }
      c.e.stmts.push(`pl.assemble(${target}, ${x.ref}, [${idx.map((j, i) => j * x.shape[i]).join(", ")}]);`);
    }
    return [{ ref: target, shape, dtype: x.dtype }];
  },
  // Gather along any axis through tspto's row gather of a 2-D table: the axis moved first and
  // the rest flattened ([D, rest]), the indices flattened and made non-negative (ONNX counts
  // -1 from the end), the gathered rows reshaped to [...indices, ...rest] and the index axes
  // moved back to where the axis was.
  Gather: (c) => {
    const [x, idx] = c.ins as V[];
    if (idx.dtype !== "int32" && idx.dtype !== "int64") skip(`Gather with ${idx.dtype} indices`);
    const r = x.shape.length;
    const axis = normAxis(attrI(c.node, "axis", 0), r);
    const D = x.shape[axis];
    const others = x.shape.filter((_, i) => i !== axis);
    const moved = c.e.permute(x, [axis, ...x.shape.map((_, i) => i).filter((i) => i !== axis)]);
    const table = c.e.reshape(moved, [D, numel(others)]);
    const flat = c.e.reshape(idx, [numel(idx.shape)]);
    const pos = c.e.value(`pl.sel(pl.cmp(${flat.ref}, 0, "lt"), pl.add(${flat.ref}, ${D}), ${flat.ref})`, flat.shape, idx.dtype);
    const rows = c.e.value(`pl.gather(${table.ref}, ${pos.ref}, 0)`, [flat.shape[0], numel(others)], x.dtype);
    const q = idx.shape.length;
    const grouped = c.e.reshape(rows, [...idx.shape, ...others]);
    const perm = [...others.slice(0, axis).map((_, i) => q + i), ...idx.shape.map((_, i) => i), ...others.slice(axis).map((_, i) => q + axis + i)];
    const out = c.e.permute(grouped, perm);
    return [c.e.reshape(out, out.shape, c.node.outputs[0])];
  },
  Shape: () => skip("Shape of a computed value"), Size: () => skip("Size of a computed value"),
  Softmax: softmaxOp(false), LogSoftmax: softmaxOp(true),
  ReduceSum: reduceOp("Sum"), ReduceMax: reduceOp("Max"), ReduceMin: reduceOp("Min"), ReduceProd: reduceOp("Prod"), ReduceMean: reduceOp("Mean"),
  ReduceSumSquare: reduceOp("SumSquare"), ReduceL1: reduceOp("L1"), ReduceL2: reduceOp("L2"), ReduceLogSum: reduceOp("LogSum"), ReduceLogSumExp: reduceOp("LogSumExp"),
  ArgMax: argOp("max"), ArgMin: argOp("min"),
  Transpose: (c) => {
    const x = c.ins[0]!;
    const perm = attrInts(c.node, "perm") ?? x.shape.map((_, i) => x.shape.length - 1 - i);
    const p = c.e.permute(x, perm);
    return [c.e.value(p.ref, p.shape, p.dtype, c.node.outputs[0])];
  },
  Reshape: (c) => {
    const x = c.ins[0]!;
    const spec = known(c.ins[1], "Reshape's shape");
    const allowzero = attrI(c.node, "allowzero", 0) === 1;
    const shape = spec.map((d, i) => (d === 0 && !allowzero ? x.shape[i] : d));
    const k = shape.indexOf(-1);
    if (k >= 0) shape[k] = numel(x.shape) / numel(shape.filter((d) => d !== -1));
    return reshapeTo(c, shape);
  },
  Flatten: (c) => {
    const x = c.ins[0]!;
    const axis = normAxis(attrI(c.node, "axis", 1), x.shape.length);
    return reshapeTo(c, [numel(x.shape.slice(0, axis)), numel(x.shape.slice(axis))]);
  },
  Squeeze: (c) => {
    const x = c.ins[0]!;
    const axes = (attrInts(c.node, "axes") ?? (c.ins[1] ? known(c.ins[1], "Squeeze's axes") : x.shape.map((d, i) => (d === 1 ? i : -1)).filter((i) => i >= 0))).map((a) => normAxis(a, x.shape.length));
    return reshapeTo(c, x.shape.filter((_, i) => !axes.includes(i)));
  },
  Unsqueeze: (c) => {
    const x = c.ins[0]!;
    const axes = attrInts(c.node, "axes") ?? known(c.ins[1], "Unsqueeze's axes");
    const r = x.shape.length + axes.length;
    const norm = axes.map((a) => normAxis(a, r));
    const out: number[] = [];
    let k = 0;
    for (let i = 0; i < r; i++) out.push(norm.includes(i) ? 1 : x.shape[k++]);
    return reshapeTo(c, out);
  },
  Expand: (c) => {
    const x = c.ins[0]!;
    const shape = broadcast([x.shape, known(c.ins[1], "Expand's shape")]);
    const X = c.e.rank(x, shape.length);
    return [c.e.value(sameShape(X.shape, shape) ? X.ref : `pl.broadcastTo(${X.ref}, [${shape.join(", ")}])`, shape, x.dtype, c.node.outputs[0])];
  },
  Concat: (c) => {
    const xs = c.ins.filter((v): v is V => !!v);
    const r = xs[0].shape.length;
    const axis = normAxis(attrI(c.node, "axis", 0), r);
    const shape = [...xs[0].shape];
    shape[axis] = xs.reduce((s, v) => s + v.shape[axis], 0);
    const target = c.e.outTarget(c.node.outputs[0], shape, xs[0].dtype) ?? c.e.tmp(shape, xs[0].dtype);
    let off = 0;
    for (const v of xs) {
      const o = shape.map((_, i) => (i === axis ? off : 0));
      c.e.stmts.push(`pl.assemble(${target}, ${v.ref}, [${o.join(", ")}]);`);
      off += v.shape[axis];
    }
    return [{ ref: target, shape, dtype: xs[0].dtype }];
  },
  Slice: (c) => {
    const x = c.ins[0]!;
    const r = x.shape.length;
    if (x.static && x.data && r === 1 && (!c.ins[4] || known(c.ins[4], "Slice's steps").every((s) => s === 1))) {
      const dim = x.data.length, clampI = (v: number) => Math.min(Math.max(v < 0 ? v + dim : v, 0), dim);
      const vals = x.data.slice(clampI(known(c.ins[1], "starts")[0]), clampI(known(c.ins[2], "ends")[0]));
      if (vals.length) return [c.e.constant(vals, [vals.length], x.dtype)];
    }
    const starts = known(c.ins[1], "Slice's starts"), ends = known(c.ins[2], "Slice's ends");
    const axes = c.ins[3] ? known(c.ins[3], "Slice's axes").map((a) => normAxis(a, r)) : starts.map((_, i) => i);
    const steps = c.ins[4] ? known(c.ins[4], "Slice's steps") : starts.map(() => 1);
    if (steps.some((s) => s !== 1)) skip("Slice with steps other than 1: tspto's slice is a contiguous window");
    const off = new Array(r).fill(0), shape = [...x.shape];
    axes.forEach((a, k) => {
      const dim = x.shape[a];
      const clampI = (v: number) => Math.min(Math.max(v < 0 ? v + dim : v, 0), dim);
      const s = clampI(starts[k]), e = clampI(ends[k]);
      off[a] = s; shape[a] = Math.max(0, e - s);
    });
    if (shape.some((d) => d === 0)) skip("an empty slice: tspto tensors have no zero-size dimensions");
    return [c.e.value(`pl.slice(${x.ref}, [${shape.join(", ")}], [${off.join(", ")}])`, shape, x.dtype, c.node.outputs[0])];
  },
  ConstantOfShape: (c) => {
    const shape = known(c.ins[0], "ConstantOfShape's shape");
    const t = c.node.attrs.get("value");
    const tv = t?.kind === "tensor" ? t.value : null;
    const d = tv ? DTYPE_OF[tv.dtype] : "float32";
    if (!d) skip(`ConstantOfShape of ${tv?.dtype}`);
    if (!shape.length || shape.some((s) => s === 0)) skip("a zero-size or rank-0 constant");
    const v = tv?.values?.[0] ?? 0;
    return [c.e.value(`pl.full([${shape.join(", ")}], ${PL_DT[d]}, ${num(v, d)})`, shape, d, c.node.outputs[0])];
  },
};

function onnxTypeName(a: OnnxAttr | undefined): string {
  const names: Record<number, string> = { 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 16: "BFLOAT16" };
  return a?.kind === "int" ? names[a.value] ?? `type ${a.value}` : "?";
}

/** The translator of an op (host folding first, for shape computations on static values), or null when tspto has no counterpart. */
export function translatorOf(op: string): Translator | null {
  const t = TRANSLATORS[op];
  if (!t && !FOLD[op]) return null;
  return (c) => foldStatic(c) ?? (t ? t(c) : skip(`${op} of values computed in the graph`));
}
export const TRANSLATED_OPS = Object.keys(TRANSLATORS).sort();

/** A Constant node's value as a tensor of known data. */
export function constantValue(node: OnnxNode): OnnxTensor | null {
  const a = node.attrs.get("value");
  if (a?.kind === "tensor") return a.value;
  const f = node.attrs.get("value_float"), i = node.attrs.get("value_int"), fs = node.attrs.get("value_floats"), is = node.attrs.get("value_ints");
  if (f?.kind === "float") return { name: "", dims: [], dtype: "FLOAT", values: [f.value] };
  if (i?.kind === "int") return { name: "", dims: [], dtype: "INT64", values: [i.value] };
  if (fs?.kind === "floats") return { name: "", dims: [fs.value.length], dtype: "FLOAT", values: fs.value };
  if (is?.kind === "ints") return { name: "", dims: [is.value.length], dtype: "INT64", values: is.value };
  return null;
}
