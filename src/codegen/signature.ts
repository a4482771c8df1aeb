// What the artifact metadata says about a lowered program's entry: parameters (with their
// directions, shapes, dtypes and specialized scalar values), outputs and returns.
import type { Program, Return, Stmt } from "../ir/index.js";
import { TsptoCompileError, dimSymbolsOf, forEachExpr, returnedParams, shapeStr } from "../ir/index.js";
import type { CompiledMeta, CompiledParam } from "../artifact/index.js";

export interface SignatureOptions {
  /** Can the target take dynamic dimensions (recorded as -1)? */
  readonly dynamicDims: boolean;
  /** The platform name, for the error message when it cannot. */
  readonly platform: string;
}

/** Entry parameters, outputs and returns of a lowered program, for the metadata. */
export function entrySignature(program: Program, opts: SignatureOptions): Pick<CompiledMeta, "params" | "outputIndices" | "returns" | "hasReturn"> {
  const entry = program.getFunction(program.entry);
  if (!entry) throw new TsptoCompileError("E_CODEGEN", `internal: program '${program.name}' has no entry function '${program.entry}'`);
  const params: CompiledParam[] = entry.params.map((p) => {
    const t = p.var.type;
    if (t.kind === "tensor") {
      const shape = t.shape.map((d) => {
        if (typeof d === "number") return d;
        if (!opts.dynamicDims) {
          throw new TsptoCompileError("E_DYNAMIC", `dynamic dimensions are not supported on the ${opts.platform} platform yet (parameter '${p.var.name}')`, p.var.span,
            "give the tensor a static shape, or use the interp platform");
        }
        return -1;
      });
      const dynamic = t.shape.some((d) => typeof d === "string");
      return { name: p.var.name, kind: "tensor", direction: p.dir, shape, ...(dynamic ? { dimNames: t.shape.map((d) => (typeof d === "string" ? d : null)) } : {}), dtype: t.dtype };
    }
    if (t.kind === "scalar") {
      const spec = (entry.attrs.specialized as Record<string, number | boolean> | undefined)?.[p.var.name];
      return { name: p.var.name, kind: "scalar", direction: p.dir, dtype: t.dtype, ...(spec !== undefined ? { value: spec } : {}) };
    }
    throw new TsptoCompileError("E_CODEGEN", `internal: entry parameter '${p.var.name}' is neither a tensor nor a scalar`, p.var.span);
  });
  // a launch buffer's dimension names must be dynamic dimensions of the parameters (every target)
  const symbols = new Set(dimSymbolsOf(entry.params.map((p) => (p.var.type.kind === "tensor" ? p.var.type.shape : null))));
  forEachExpr(entry.body, (e) => {
    if (e.kind !== "call" || e.op !== "tensor.create" || e.type.kind !== "tensor") return;
    const t = e.type;
    for (const d of t.shape) {
      if (typeof d === "string" && !symbols.has(d)) {
        throw new TsptoCompileError("E_DYNAMIC", `createTensor(${shapeStr(t.shape)}): ${JSON.stringify(d)} is not a dynamic dimension of the entry's parameters`, e.span,
          `name a dimension of a parameter's shape annotation (e.g. x: pl.Tensor<[${JSON.stringify(d)}, 64], pl.FP32>), or use a number`);
      }
    }
  });
  const outputIndices = params.flatMap((p, i) => (p.direction === "out" || p.direction === "inout" ? [i] : []));
  let returns: number[] = [];
  let hasReturn = false;
  const findReturn = (ss: readonly Stmt[]): Return | undefined => {
    for (const s of ss) {
      if (s.kind === "return" && s.values.length) return s;
      const inner = s.kind === "for" || s.kind === "while" ? findReturn(s.body) : s.kind === "if" ? findReturn(s.then) ?? findReturn(s.else) : undefined;
      if (inner) return inner;
    }
    return undefined;
  };
  const ret = findReturn(entry.body);
  if (ret) {
    hasReturn = true;
    const idx = returnedParams(entry, program);
    returns = ret.values.map((v, k) => {
      const i = idx[k];
      if (i === undefined) {
        throw new TsptoCompileError("E_RETURN", `the entry '${entry.name}' returns ${v.kind === "var" ? `'${v.name}'` : "a value"} that is not one of its parameters`, v.span,
          "return a parameter tensor (e.g. the output argument); returning new tensors is not supported yet");
      }
      return i;
    });
  }
  return { params, outputIndices, returns, hasReturn };
}

