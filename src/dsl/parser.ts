// parseKernel: a kernel definition + its argument bindings → an ir.Program.
//
// The jit layer binds the call's arguments to the kernel's parameters (paramInfo tells it
// which are tensors and scalars and what the annotations fix), then calls parseKernel. The
// result holds the entry function plus every sub-kernel reachable from it (pl.jit.incore →
// an InCore function, pl.jit.inline → an Inline function), each specialized on the argument
// types at its call site; one kernel called with two type signatures becomes `name` and
// `name_1`.
import { ts } from "./typescript.js";
import { TsptoSyntaxError, TsptoTypeError } from "../ir/errors.js";
import { exprType, mkConst, type Direction, type Expr, type Func, type Span } from "../ir/nodes.js";
import { Program } from "../ir/program.js";
import { dimsEqual, scalarT, tensorT, typeStr, type Dim, type Type } from "../ir/types.js";
import { annStr, annType, readAnnotation, type AnnEnv, type ReadAnn } from "./annotations.js";
import { FunctionBuilder, type BuildEnv, type CalleeInfo, type KernelRef, type ParamSpec } from "./builder/index.js";
import type { KernelDef } from "./kernel.js";
import { Resolver } from "./resolve.js";
import { locateKernel, registerSnippet, spanOf, type KernelSource } from "./source.js";

/** One argument bound to a kernel parameter, in parameter order. */
export interface ParamBinding {
  readonly name: string;
  /** The argument's type: a tensor (shape, dtype) or a scalar. */
  readonly type: Type;
  /** A specialized scalar: uses of the parameter fold to this constant (the parameter stays in the signature). */
  readonly value?: number | boolean;
}

/** What the signature alone says about a parameter (annotation-only, cheap, cached). */
export interface ParamInfo {
  readonly name: string;
  /**
   * The complete type an annotation fixes: `pl.Tensor<[M, N], pl.FP32>` (string dims are
   * symbolic), `pl.Scalar<pl.INT32>` (a dynamic scalar, not specialized on its value).
   * null for `pl.Tensor`, `number`, `boolean` and unannotated parameters.
   */
  readonly annotated: Type | null;
  /** From `pl.Out<...>` / `pl.InOut<...>`; absent when the direction is inferred from the body. */
  readonly dir?: Direction;
  /** "unknown" for unannotated parameters (plain JavaScript): the argument decides. */
  readonly kind: "tensor" | "scalar" | "unknown";
  readonly span: Span;
}

interface SourceParam {
  readonly name: string;
  readonly node: ts.ParameterDeclaration;
  readonly ann: ReadAnn;
}

function kernelParams(def: KernelDef, ks: KernelSource, resolver: Resolver): SourceParam[] {
  const env: AnnEnv = { lookup: (n, at) => resolver.resolve(n, at), span: (n) => spanOf(ks.src, n) };
  const out: SourceParam[] = [];
  for (const p of ks.node.parameters) {
    const bad = (what: string): never => {
      throw new TsptoSyntaxError("E_SYNTAX", `${what} are not supported in kernel parameters ('${def.name}')`, spanOf(ks.src, p),
        "kernel parameters are plain names: function k(a: pl.Tensor, n: number)");
    };
    if (!ts.isIdentifier(p.name)) bad("destructured parameters");
    const name = (p.name as ts.Identifier).text;
    if (name === "this") continue; // a TypeScript `this` parameter
    if (p.dotDotDotToken) bad("rest parameters");
    if (p.initializer) bad("default values");
    if (p.questionToken) bad("optional parameters");
    out.push({ name, node: p, ann: readAnnotation(p.type, env) });
  }
  return out;
}

const infoCache = new WeakMap<KernelDef, { key: string; info: readonly ParamInfo[] }>();

/** The kernel's parameters as its signature declares them (for binding arguments before parseKernel). */
export function paramInfo(def: KernelDef): readonly ParamInfo[] {
  const ks = locateKernel(def);
  const hit = infoCache.get(def);
  if (hit && hit.key === ks.src.hash) return hit.info;
  registerSnippet(ks.src);
  const params = kernelParams(def, ks, new Resolver(def, ks.src, ks.node));
  const info = params.map((p): ParamInfo => {
    const a = p.ann.ann;
    const kind = a.kind === "tensor" ? "tensor" : a.kind === "scalar" ? "scalar" : "unknown";
    const annotated = a.kind === "scalar" && a.plain ? null : annType(a);
    return { name: p.name, annotated, ...(p.ann.dir ? { dir: p.ann.dir } : {}), kind, span: spanOf(ks.src, p.node) };
  });
  infoCache.set(def, { key: ks.src.hash, info });
  return info;
}

/** Parse a kernel specialized on `bind` (one binding per parameter) into a Program. */
export function parseKernel(def: KernelDef, bind: readonly ParamBinding[]): Program {
  const pb = new ProgramBuilder();
  const entry = pb.build(def, bind, null);
  return new Program(def.name, entry.name, pb.funcs, entry.span);
}

class ProgramBuilder {
  readonly funcs: Func[] = [];
  private readonly specs = new Map<string, CalleeInfo>();
  private readonly names = new Set<string>();
  private readonly building = new Set<number>();

  private uniqueName(base: string): string {
    let n = base;
    for (let k = 1; this.names.has(n); k++) n = `${base}_${k}`;
    this.names.add(n);
    return n;
  }

  /** Build `def`'s function specialized on `bind`; `callSpan` locates the call of a sub-kernel. */
  build(def: KernelDef, bind: readonly ParamBinding[], callSpan: Span | null): Func {
    const ks = locateKernel(def);
    registerSnippet(ks.src);
    const resolver = new Resolver(def, ks.src, ks.node);
    const params = kernelParams(def, ks, resolver);
    if (params.length !== bind.length) {
      throw new TsptoTypeError("E_ARITY",
        `kernel '${def.name}' takes ${params.length} argument${params.length === 1 ? "" : "s"} (${params.map((p) => p.name).join(", ")}), got ${bind.length}`,
        callSpan ?? spanOf(ks.src, ks.node), "pass one argument per kernel parameter");
    }
    const name = this.uniqueName(def.name);
    const env: BuildEnv = {
      mode: "kernel", src: ks.src, kernelName: def.name, fnKind: def.kind,
      resolveFree: (n, at) => resolver.resolve(n, at),
      callee: (ref, args, _call, span) => this.callee(ref, args, span),
    };
    const specs = params.map((p, i) => this.bindParam(def, ks, p, bind[i], callSpan));
    this.building.add(def.id);
    try {
      const f = new FunctionBuilder(env).build(ks.node, name, specs, { attrs: def.opts.attrs });
      this.funcs.push(f);
      return f;
    } finally {
      this.building.delete(def.id);
    }
  }

  /** Check a binding against the parameter's annotation; the annotation's symbolic dims and scalar dtype win. */
  private bindParam(def: KernelDef, ks: KernelSource, p: SourceParam, b: ParamBinding, callSpan: Span | null): ParamSpec {
    const { ann, dir } = p.ann;
    const at = spanOf(ks.src, p.node.type ?? p.node);
    const mismatch = (): never => {
      throw new TsptoTypeError("E_SIGNATURE",
        `parameter '${p.name}' of kernel '${def.name}' is annotated ${annStr(ann)} but the argument is ${typeStr(b.type)}`, at,
        callSpan ? `the call is at ${callSpan.file}:${callSpan.line}:${callSpan.col}` : "pass an argument of the annotated shape and dtype, or relax the annotation (pl.Tensor)");
    };
    let type: Type = b.type;
    switch (ann.kind) {
      case "tensor": {
        if (b.type.kind !== "tensor") mismatch();
        const t = b.type as Extract<Type, { kind: "tensor" }>;
        if (ann.dtype && ann.dtype !== t.dtype) mismatch();
        let shape: readonly Dim[] = t.shape;
        if (ann.shape) {
          if (ann.shape.length !== t.shape.length) mismatch();
          shape = ann.shape.map((d, i) => {
            if (typeof d === "number" && d !== t.shape[i]) mismatch();
            return d;
          });
        }
        type = dimsEqual(shape, t.shape) ? t : tensorT(shape, t.dtype);
        break;
      }
      case "scalar": {
        if (b.type.kind !== "scalar") mismatch();
        const bd = (b.type as Extract<Type, { kind: "scalar" }>).dtype;
        if ((ann.dtype === "bool") !== (bd === "bool")) mismatch();
        if (ann.dtype && !ann.plain) type = scalarT(ann.dtype);
        break;
      }
      case "tile": {
        const t = ann.type as Extract<Type, { kind: "tile" }> | null;
        if (b.type.kind !== "tile") mismatch();
        if (t && (!dimsEqual(t.shape, (b.type as typeof t).shape) || t.dtype !== (b.type as typeof t).dtype || t.mem !== (b.type as typeof t).mem)) mismatch();
        type = t ?? b.type;
        break;
      }
      case "none":
        break;
      default:
        throw new TsptoSyntaxError("E_SYNTAX", `unsupported annotation for parameter '${p.name}'`, at);
    }
    let folded;
    if (b.value !== undefined) {
      if (type.kind !== "scalar") mismatch();
      folded = mkConst(b.value, typeof b.value === "boolean" ? "bool" : (type as Extract<Type, { kind: "scalar" }>).dtype, spanOf(ks.src, p.node.name));
    }
    return { name: p.name, node: p.node.name, type, dir: dir ?? (type.kind === "tensor" && ann.kind !== "tensor" ? null : "in"), folded };
  }

  /** A call of a sub-kernel: specialize it on the argument types (once per signature). */
  private callee(ref: KernelRef, args: readonly Expr[], span: Span): CalleeInfo {
    const def = ref.def;
    if (!def) {
      throw new TsptoSyntaxError("E_UNRESOLVED", `kernel '${ref.name}' has not been defined yet (its pl.jit.${ref.kernelKind === "orchestration" ? "" : ref.kernelKind} call has not run)`, span,
        "define sub-kernels before the entry that calls them is first used");
    }
    const types = args.map(exprType);
    const key = `${def.id}|${JSON.stringify(types)}`;
    const hit = this.specs.get(key);
    if (hit) return hit;
    if (this.building.has(def.id)) {
      throw new TsptoSyntaxError("E_SYNTAX", `kernel '${def.name}' calls itself; recursion is not supported in kernels`, span);
    }
    const f = this.build(def, types.map((type, i) => ({ name: `#${i}`, type })), span);
    const info: CalleeInfo = { name: f.name, dirs: f.params.map((p) => p.dir), returnTypes: f.returnTypes };
    this.specs.set(key, info);
    return info;
  }
}
