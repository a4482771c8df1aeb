// The base of the function builder: errors and spans, direction inference (reads/writes through
// aliases), lexical scopes and locals, control frames, definite-assignment flow, and the
// recognition of the `pl` and `Math` namespaces and of compile-time constants.
import { TOSTRING_FILE, TOSTRING_HINT } from "../source.js";
import { ts } from "../typescript.js";
import { TsptoSyntaxError, TsptoTypeError } from "../../ir/errors.js";
import type { Direction, Expr, Span, Var } from "../../ir/nodes.js";
import { isFloat, typeEqual, typeStr, type Type } from "../../ir/types.js";
import type { AnnEnv } from "../annotations.js";
import { evalConst, type ConstVal, type FreeBinding } from "../resolve.js";
import { spanOf } from "../source.js";
import type { BuildEnv, Flow, Frame, Local } from "./types.js";

export abstract class BuilderBase {
  protected readonly scopes: Map<string, Local>[] = [];
  protected readonly frames: Frame[] = [{ kind: "function", loopDepth: 0 }];
  protected flow: Flow = new Set();
  protected scopeDepth = 0;
  /** Declared directions of the parameters (null: inferred). */
  protected readonly paramDirs = new Map<string, Direction | null>();
  protected readonly returns: { types: Type[]; span: Span }[] = [];
  /** Direction inference: tensor variables read / written, through copies (aliases) of parameters. */
  protected readonly reads = new Set<number>();
  protected readonly writes = new Set<number>();
  protected readonly alias = new Map<number, number>();
  protected readonly plCache = new Map<string, boolean>();
  protected readonly annEnv: AnnEnv;

  constructor(protected readonly env: BuildEnv) {
    this.annEnv = { lookup: (name, at) => this.lookupConstBinding(name, at), span: (n) => this.span(n) };
  }

  protected get kernel() { return this.env.mode === "kernel"; }

  // ------------------------------------------------------------ errors and spans

  span(node: ts.Node): Span {
    return spanOf(this.env.src, node);
  }
  protected syntax(code: string, msg: string, node: ts.Node, hint?: string): never {
    throw new TsptoSyntaxError(code, msg, this.span(node), this.withPluginHint(hint));
  }
  protected typeErr(msg: string, node: ts.Node, hint?: string, code = "E_TYPE"): never {
    throw new TsptoTypeError(code, msg, this.span(node), this.withPluginHint(hint));
  }
  /** A kernel parsed from fn.toString() (no source file: a bundle, a page) says what gives better errors. */
  protected withPluginHint(hint?: string): string | undefined {
    if (this.env.src.fromFile || this.env.src.file !== TOSTRING_FILE) return hint;
    return `${hint ? `${hint}; ` : ""}${TOSTRING_HINT}`;
  }

  // ------------------------------------------------------------ returns and parameter directions

  protected inferReturnTypes(): Type[] {
    if (!this.returns.length) return [];
    const first = this.returns[0];
    for (const r of this.returns.slice(1)) {
      if (r.types.length !== first.types.length || !r.types.every((t, i) => typeEqual(t, first.types[i]))) {
        throw new TsptoTypeError("E_TYPE",
          `kernel '${this.env.kernelName}' returns [${r.types.map(typeStr).join(", ")}] here but [${first.types.map(typeStr).join(", ")}] at line ${first.span.line}`,
          r.span, "every return statement must return values of the same types");
      }
    }
    return first.types;
  }

  /** Written and never read → out; written and read → inout; else in. */
  protected inferDir(v: Var): Direction {
    if (v.type.kind !== "tensor") return "in";
    const w = this.writes.has(v.id), r = this.reads.has(v.id);
    return w ? (r ? "inout" : "out") : "in";
  }

  protected root(v: Var): number {
    return this.alias.get(v.id) ?? v.id;
  }
  protected markEffect(e: Expr, read: boolean, write: boolean) {
    if (e.kind !== "var" || e.type.kind !== "tensor") return;
    const id = this.root(e);
    if (read) this.reads.add(id);
    if (write) this.writes.add(id);
  }

  // ------------------------------------------------------------ scopes, locals, flow

  protected declare(l: Local): Local {
    this.scopes[this.scopes.length - 1].set(l.name, l);
    if (this.flow && (l.var || l.folded)) this.flow.add(l);
    return l;
  }
  protected local(name: string): Local | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const l = this.scopes[i].get(name);
      if (l) return l;
    }
    return undefined;
  }
  protected withScope<T>(f: () => T): T {
    this.scopes.push(new Map());
    try {
      return f();
    } finally {
      this.scopes.pop();
    }
  }
  protected get frame(): Frame {
    return this.frames[this.frames.length - 1];
  }
  protected withFrame<T>(kind: Frame["kind"], loop: boolean, f: () => T): T {
    this.frames.push({ kind, loopDepth: loop ? 1 : 0 });
    try {
      return this.withScope(f);
    } finally {
      this.frames.pop();
    }
  }
  protected snapshot(): Flow {
    return this.flow && new Set(this.flow);
  }
  protected static meet(a: Flow, b: Flow): Flow {
    if (a === null) return b;
    if (b === null) return a;
    return new Set([...a].filter((x) => b.has(x)));
  }

  /** Whether `name` (at `at`) is the pl namespace. */
  protected isPl(e: ts.Expression): boolean {
    if (!ts.isIdentifier(e) || this.local(e.text)) return false;
    let r = this.plCache.get(e.text);
    if (r === undefined) {
      r = this.env.resolveFree(e.text, e)?.kind === "pl";
      this.plCache.set(e.text, r);
    }
    return r;
  }
  protected isMath(e: ts.Expression): boolean {
    return ts.isIdentifier(e) && !this.local(e.text) && this.env.resolveFree(e.text, e)?.kind === "math";
  }
  /** `pl.<name>(...)` → name. */
  protected plCallName(call: ts.CallExpression): string | null {
    const c = call.expression;
    return ts.isPropertyAccessExpression(c) && this.isPl(c.expression) && ts.isIdentifier(c.name) ? c.name.text : null;
  }

  /** Identifier lookup for constant evaluation: const locals, folded params, free constants. */
  protected lookupConstBinding(name: string, at: ts.Node): FreeBinding {
    const l = this.local(name);
    if (l) {
      if (l.folded) return { kind: "const", value: typeof l.folded.value === "boolean" ? { k: "bool", v: l.folded.value } : { k: "num", v: l.folded.value, float: isFloat(l.folded.dtype) } };
      if (l.constVal) return { kind: "const", value: l.constVal };
      return { kind: "other", what: `the variable '${name}'` };
    }
    return this.env.resolveFree(name, at);
  }
  /** A compile-time constant, or undefined. */
  protected constOf(e: ts.Expression): ConstVal | undefined {
    return evalConst(e, (n, at) => this.lookupConstBinding(n, at));
  }
}
