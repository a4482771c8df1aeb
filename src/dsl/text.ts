// parseProgramText: reads the kernel source `Program.asText()` prints back into a Program
// that is structurally equal to the printed one. The text is a module of
//   const f = pl.jit(function f(a: pl.Tensor<[4, 8], pl.FP32>, ...): RET { ... }, { attrs: {...} });
// declarations (pl.jit.incore / pl.jit.inline for the other kinds); functions call each other
// by name; every parameter and return type is fully annotated; nothing is folded.
import { ts } from "./typescript.js";
import { TsptoSyntaxError } from "../ir/errors.js";
import type { AttrValue, Attrs, Direction, Func, FunctionKind } from "../ir/nodes.js";
import { Program } from "../ir/program.js";
import type { Type } from "../ir/types.js";
import { annStr, annType, readAnnotation, type Ann, type AnnEnv } from "./annotations.js";
import { FunctionBuilder, type BuildEnv, type CalleeInfo, type ParamSpec } from "./builder/index.js";
import { constToValue, evalConst, type FreeBinding } from "./resolve.js";
import { jitCallKind, skipParens, sourceFromText, spanOf, type KernelFnNode, type SourceText } from "./source.js";

interface Decl {
  readonly name: string;
  readonly kind: FunctionKind;
  readonly node: KernelFnNode;
  readonly params: readonly { name: string; node: ts.Node; type: Type; dir: Direction }[];
  readonly returnTypes: readonly Type[];
  readonly attrs: Attrs;
}

function syntax(src: SourceText, node: ts.Node, msg: string, hint?: string): never {
  throw new TsptoSyntaxError("E_SYNTAX", msg, spanOf(src, node), hint);
}

const GLOBALS = (name: string): FreeBinding =>
  name === "pl" ? { kind: "pl" } : name === "Math" ? { kind: "math" }
    : name === "NaN" ? { kind: "const", value: { k: "num", v: NaN, float: true } }
      : name === "Infinity" ? { kind: "const", value: { k: "num", v: Infinity, float: true } } : null;

function fullType(src: SourceText, node: ts.Node, a: Ann, what: string): Type {
  const t = annType(a);
  if (!t) syntax(src, node, `${what} must be fully annotated in IR text, got ${annStr(a)}`);
  return t;
}

function returnTypes(src: SourceText, node: ts.TypeNode | undefined, env: AnnEnv): Type[] {
  if (!node) return [];
  const a = readAnnotation(node, env).ann;
  if (a.kind === "void") return [];
  if (a.kind === "tuple") return a.elems.map((e) => fullType(src, node, e, "a return type"));
  return [fullType(src, node, a, "the return type")];
}

/** Parse IR text (as printed by `Program.asText()`). */
export function parseProgramText(text: string, file = "<ir>"): Program {
  const src = sourceFromText(text, file);
  const env: AnnEnv = { lookup: (n) => GLOBALS(n), span: (n) => spanOf(src, n) };
  const decls: Decl[] = [];
  for (const s of src.sf.statements) {
    if (ts.isImportDeclaration(s)) continue;
    if (!ts.isVariableStatement(s) || s.declarationList.declarations.length !== 1) {
      syntax(src, s, "IR text holds one `const f = pl.jit(function f(...) { ... });` declaration per function");
    }
    const d = s.declarationList.declarations[0];
    const init = d.initializer && skipParens(d.initializer);
    const kind = init && ts.isCallExpression(init) ? jitCallKind(init) : null;
    const fn = kind && (init as ts.CallExpression).arguments[0];
    if (!kind || !fn || !ts.isFunctionExpression(fn) || !ts.isIdentifier(d.name)) {
      syntax(src, d, "expected `const f = pl.jit(function f(...) { ... })` (or pl.jit.incore / pl.jit.inline)");
    }
    const name = d.name.text;
    const params = fn.parameters.map((p) => {
      if (!ts.isIdentifier(p.name)) syntax(src, p, "parameters are plain names");
      const r = readAnnotation(p.type, env);
      return { name: p.name.text, node: p.name as ts.Node, type: fullType(src, p, r.ann, `parameter '${p.name.text}'`), dir: r.dir ?? "in" };
    });
    let attrs: Attrs = {};
    const opts = (init as ts.CallExpression).arguments[1];
    if (opts) {
      const c = evalConst(opts, (n) => GLOBALS(n));
      const v = c && (constToValue(c) as Record<string, unknown>);
      if (!v || typeof v !== "object" || Array.isArray(v) || Object.keys(v).some((k) => k !== "attrs")) syntax(src, opts, "function options are { attrs: { ... } } of constants");
      attrs = (v.attrs ?? {}) as Record<string, AttrValue>;
    }
    if (decls.some((x) => x.name === name)) syntax(src, d, `function '${name}' is defined twice`);
    decls.push({ name, kind, node: fn, params, returnTypes: returnTypes(src, fn.type, env), attrs });
  }
  if (!decls.length) throw new TsptoSyntaxError("E_SYNTAX", "IR text defines no functions", { file, line: 1, col: 1 });

  // The header names the program and its entry: `// tspto IR: program "name", entry f`.
  const header = /^\/\/ tspto IR: program ("(?:[^"\\]|\\.)*"), entry (\S+)/m.exec(text);
  const orch = decls.filter((d) => d.kind === "orchestration");
  const entry = header?.[2] ?? (orch.length === 1 ? orch[0].name : decls[decls.length - 1].name);
  if (!decls.some((d) => d.name === entry)) throw new TsptoSyntaxError("E_SYNTAX", `the entry '${entry}' is not defined`, { file, line: 1, col: 1 });
  const progName = header ? (JSON.parse(header[1]) as string) : entry;

  const funcs: Func[] = decls.map((d) => {
    const benv: BuildEnv = {
      mode: "text", src, kernelName: d.name, fnKind: d.kind,
      resolveFree(name) {
        const callee = decls.find((x) => x.name === name);
        return callee ? { kind: "kernel", name, kernelKind: callee.kind } : GLOBALS(name);
      },
      callee(ref, args, call, span): CalleeInfo {
        const c = decls.find((x) => x.name === ref.name)!;
        if (c.params.length !== args.length) {
          throw new TsptoSyntaxError("E_ARITY", `function '${c.name}' takes ${c.params.length} arguments, got ${args.length}`, span);
        }
        void call;
        return { name: c.name, dirs: c.params.map((p) => p.dir), returnTypes: c.returnTypes };
      },
    };
    const specs: ParamSpec[] = d.params.map((p) => ({ name: p.name, node: p.node, type: p.type, dir: p.dir }));
    return new FunctionBuilder(benv).build(d.node, d.name, specs, { returnTypes: d.returnTypes, attrs: d.attrs });
  });
  const entryFn = funcs.find((f) => f.name === entry)!;
  return new Program(progName, entry, funcs, entryFn.span);
}

/**
 * Print `p`, parse the text back and check the result is structurally equal; throws with the
 * first difference and both texts when not. Tests call it on every program they build.
 */
export function roundTrip(p: Program): void {
  const text = p.asText();
  let q: Program;
  try {
    q = parseProgramText(text);
  } catch (e) {
    throw new Error(`round trip failed: the printed program does not parse back: ${(e as Error).message}\n--- printed ---\n${text}`, { cause: e });
  }
  const diff = p.structuralDiff(q);
  if (diff !== null) {
    throw new Error(`round trip failed: ${diff}\n--- printed ---\n${text}\n--- reparsed and printed ---\n${q.asText()}`);
  }
}
