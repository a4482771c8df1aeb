// asText(): prints a Program as kernel source. The text is valid TypeScript written against
// `tspto/language`, and src/dsl's parseProgramText reads it back to a structurally equal
// Program. The forms, one per IR construct:
//   functions      const f = pl.jit(function f(a: pl.Tensor<[4, 8], pl.FP32>, ...): RET { ... }, { attrs: {...} });
//                  (pl.jit.incore / pl.jit.inline for the other kinds; attrs only when non-empty)
//   tile types     pl.Tile<[4, 8], pl.FP32, pl.Mem.Vec>, with a 4th argument { validShape: [..]; addr: N } when set
//   assign         const x = e;  |  let x = e; ... x = e2;  (pre-SSA rebinding)  |  const [a, b] = f(...);
//                  a variable whose type differs from its value's (a tile given an address) is annotated: const t: pl.Tile<...> = e;
//                  a pre-SSA let assigned in several blocks is declared first: let x: T; ... x = e;
//   constants      7 (int64) | 7.0 / 1e-5 (float32) | true | pl.const(7, pl.INT32) (other dtypes); negation of a
//                  number or of a sign-led operand is parenthesized: -(1), -(-x) (-1 is the constant)
//   ops            pl.<op>(...) per the registry's params; scalar ops as operators / Math.<fn>
//   calls          callee(args)
//   extra attrs    a call's attributes that the forms above do not spell (added by passes):
//                  pl.withAttrs(callee(args), { "scopeId": 0, ... })
//   for            for (const i of pl.range(start, stop, step)) { ... }          (no carried values)
//                  const [r] = pl.forRange(start, stop, step, [init], (i: pl.Scalar<pl.INT64>, a: T) => { ...; pl.yield(v); });
//   while          while (c) { ... }  |  const [r] = pl.whileLoop([init], (a: T) => c, (a: T) => { ...; pl.yield(v); });
//   if             if (c) { ... } else { ... }  |  const [r] = pl.ifElse(c, () => { ...; pl.yield(v); }, () => { ...; pl.yield(w); });
//   yield/break/continue with values: pl.yield(..) / pl.break(..) / pl.continue(..); without: break; continue;
//   return         return;  |  return x;  |  return [a, b];
//   scope          pl.at(pl.Level.CORE_GROUP, () => { ... });
import type { Program } from "./program.js";
import type { AttrValue, Attrs, Expr, Func, ListExpr, Stmt, Var } from "./nodes.js";
import { getOp, runtimeDims, type OpDef } from "./registry.js";
import { DTYPE_CONST, typeEqual, type DType, type Dim, type Type } from "./types.js";
import { exprType } from "./nodes.js";
import { forEachStmt } from "./visit.js";

const RESERVED = new Set(("break case catch class const continue debugger default delete do else enum export extends false finally for " +
  "function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static " +
  "implements interface package private protected public await async of pl Math undefined NaN Infinity arguments eval").split(" "));

const dtypeText = (d: DType) => `pl.${DTYPE_CONST[d]}`;
const dimText = (d: Dim) => (typeof d === "number" ? String(d) : JSON.stringify(d));
const dimsText = (ds: readonly Dim[]) => `[${ds.map(dimText).join(", ")}]`;

export function typeText(t: Type): string {
  switch (t.kind) {
    case "scalar": return `pl.Scalar<${dtypeText(t.dtype)}>`;
    case "tensor": return `pl.Tensor<${dimsText(t.shape)}, ${dtypeText(t.dtype)}>`;
    case "tile": {
      const extra: string[] = [];
      if (t.validShape) extra.push(`validShape: ${dimsText(t.validShape)}`);
      if (t.addr !== null) extra.push(`addr: ${t.addr}`);
      return `pl.Tile<${dimsText(t.shape)}, ${dtypeText(t.dtype)}, pl.Mem.${t.mem}${extra.length ? `, { ${extra.join("; ")} }` : ""}>`;
    }
    case "tuple": case "list": return `[${t.elems.map(typeText).join(", ")}]`;
    case "void": return "void";
  }
}

function attrText(v: AttrValue): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return `[${v.map(attrText).join(", ")}]`;
  if (typeof v === "object") return `{ ${Object.entries(v as Record<string, AttrValue>).map(([k, x]) => `${JSON.stringify(k)}: ${attrText(x)}`).join(", ")} }`;
  if (typeof v === "number") return numText(v);
  return JSON.stringify(v);
}
function numText(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  return Object.is(v, -0) ? "-0" : String(v);
}
/** Attributes of a call that its printed form does not carry (null when none). */
function extraAttrs(e: Extract<Expr, { kind: "call" }>): Attrs | null {
  let spelled: Set<string>;
  if (e.op === "call") spelled = new Set(["callee"]);
  else {
    const op = getOp(e.op);
    spelled = new Set(op.operator || op.mathFn ? [] : op.params.flatMap((p) =>
      p.kind === "options" ? Object.keys(p.options ?? {}) : p.kind === "value" || p.kind === "values" ? [] : [p.name]));
  }
  const extra = Object.entries(e.attrs).filter(([k, v]) => !spelled.has(k) && v !== undefined && v !== null);
  return extra.length ? Object.fromEntries(extra) : null;
}

function floatText(v: number): string {
  const s = numText(v);
  return /[.eEIN]/.test(s) ? s : `${s}.0`;
}

class Namer {
  private used = new Set<string>();
  private names = new Map<number, string>();
  constructor(taken: Iterable<string>) { for (const t of taken) this.used.add(t); }
  name(v: Var): string {
    let n = this.names.get(v.id);
    if (n) return n;
    let base = v.name.replace(/[^A-Za-z0-9_$]/g, "_");
    if (!base || /^[0-9]/.test(base)) base = `v_${base}`;
    if (RESERVED.has(base)) base = `${base}_`;
    n = base;
    for (let k = 1; this.used.has(n); k++) n = `${base}_${k}`;
    this.used.add(n);
    this.names.set(v.id, n);
    return n;
  }
}

const PREC: Record<string, number> = { "||": 1, "&&": 2, "===": 3, "!==": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6 };

class Printer {
  private out: string[] = [];
  private namer!: Namer;
  private rebound = new Set<number>();
  private declared = new Set<number>();
  constructor(private readonly fnNames: Set<string>) {}

  expr(e: Expr, parentPrec = 0): string {
    switch (e.kind) {
      case "var": return this.namer.name(e);
      case "const":
        if (typeof e.value === "boolean") return String(e.value);
        if (e.dtype === "int64") return numText(e.value);
        if (e.dtype === "float32") return floatText(e.value);
        return `pl.const(${numText(e.value)}, ${dtypeText(e.dtype)})`;
      case "list": return `[${e.items.map((i) => this.expr(i)).join(", ")}]`;
      case "call": {
        // attributes the source form does not spell (added by passes) ride along in pl.withAttrs
        const extra = extraAttrs(e);
        if (extra) return `pl.withAttrs(${this.callText(e, 0)}, ${attrText(extra)})`;
        return this.callText(e, parentPrec);
      }
    }
  }

  private callText(e: Extract<Expr, { kind: "call" }>, parentPrec: number): string {
    if (e.op === "call") return `${String(e.attrs.callee)}(${e.args.map((a) => this.expr(a)).join(", ")})`;
    const op = getOp(e.op);
    if (op.operator) {
      if (e.args.length === 1) {
        // `-1` reads back as the constant -1 and `--x` as a decrement: parenthesize a
        // numeric or sign-led operand so that `-(1)` / `-(-x)` stay negations.
        const a = this.expr(e.args[0], 10);
        return `${op.operator}${/^[-+!0-9.]|^(?:NaN|Infinity)$|^pl\.const\(/.test(a) ? `(${a})` : a}`;
      }
      const p = PREC[op.operator] ?? 0;
      const s = `${this.expr(e.args[0], p)} ${op.operator} ${this.expr(e.args[1], p + 1)}`;
      return p < parentPrec ? `(${s})` : s;
    }
    if (op.mathFn) return `Math.${op.mathFn}(${e.args.map((a) => this.expr(a)).join(", ")})`;
    return `pl.${op.pl}(${this.opArgs(op, e.args, e.attrs).join(", ")})`;
  }

  private opArgs(op: OpDef, args: readonly Expr[], attrs: Attrs): string[] {
    const parts: string[] = [];
    // runtime extents of "dims" options (validShape: [n - i, 64]) are trailing list operands
    const { lists, first } = runtimeDims(op, args, attrs);
    let ai = 0;
    for (const p of op.params) {
      switch (p.kind) {
        case "value": case "values": if (ai < first) parts.push(this.expr(args[ai++])); break; // an optional operand may be absent
        case "options": {
          const keys = Object.keys(p.options ?? {}).filter((k) => attrs[k] !== undefined && attrs[k] !== null);
          if (keys.length) parts.push(`{ ${keys.map((k) => `${k}: ${lists.has(k) ? this.dimsText(attrs[k] as readonly Dim[], lists.get(k)!) : this.attrArg(p.options![k], attrs[k])}`).join(", ")} }`);
          break;
        }
        default:
          if (attrs[p.name] === undefined || attrs[p.name] === null) break;
          parts.push(this.attrArg(p.kind, attrs[p.name]));
      }
    }
    return parts;
  }

  /**
   * A "dims" option with runtime extents: constants as numbers, each RUNTIME_DIM as its
   * expression. A runtime extent that folded to a constant is written `pl.const(v, dtype)`, which
   * the parser keeps as a runtime extent (a plain number would read back as the static form).
   */
  private dimsText(dims: readonly Dim[], list: ListExpr): string {
    let k = 0;
    return `[${dims.map((d) => {
      if (typeof d === "number") return String(d);
      const it = list.items[k++];
      return it.kind === "const" ? `pl.const(${numText(Number(it.value))}, ${dtypeText(it.dtype)})` : this.expr(it);
    }).join(", ")}]`;
  }

  private attrArg(kind: string, v: AttrValue): string {
    if (kind === "dtype") return dtypeText(v as DType);
    if (kind === "mem") return `pl.Mem.${String(v)}`;
    return attrText(v);
  }

  private line(indent: number, s: string) { this.out.push(`${"  ".repeat(indent)}${s}`); }

  private params(vars: readonly Var[]): string {
    return vars.map((v) => `${this.namer.name(v)}: ${typeText(v.type)}`).join(", ");
  }

  private block(stmts: readonly Stmt[], ind: number) {
    for (const s of stmts) this.stmt(s, ind);
  }

  private stmt(s: Stmt, ind: number) {
    switch (s.kind) {
      case "assign": {
        const v = s.value;
        if (s.targets.length === 1) {
          const t = s.targets[0];
          const first = !this.declared.has(t.id);
          this.declared.add(t.id);
          // annotated when the variable's type is not the value's (e.g. a tile given an address by memory planning)
          const ann = typeEqual(t.type, exprType(v)) ? "" : `: ${typeText(t.type)}`;
          if (!first) this.line(ind, `${this.namer.name(t)} = ${this.expr(v)};`);
          else this.line(ind, `${this.rebound.has(t.id) ? "let" : "const"} ${this.namer.name(t)}${ann} = ${this.expr(v)};`);
        } else {
          // targets are either all new or all hoisted (see hoisted())
          const names = `[${s.targets.map((t) => this.namer.name(t)).join(", ")}]`;
          const fresh = s.targets.length === 0 || s.targets.some((t) => !this.declared.has(t.id));
          s.targets.forEach((t) => this.declared.add(t.id));
          // annotated when a target's type is not the call's result (tiles given addresses by memory planning)
          const vt = exprType(v);
          const same = vt.kind !== "tuple" || vt.elems.length !== s.targets.length || s.targets.every((t, i) => typeEqual(t.type, vt.elems[i]));
          const ann = same ? "" : `: [${s.targets.map((t) => typeText(t.type)).join(", ")}]`;
          if (!fresh) this.line(ind, `${names} = ${this.expr(v)};`);
          else this.line(ind, `${s.targets.some((t) => this.rebound.has(t.id)) ? "let" : "const"} ${names}${ann} = ${this.expr(v)};`);
        }
        break;
      }
      case "eval": this.line(ind, `${this.expr(s.expr)};`); break;
      case "return":
        this.line(ind, s.values.length === 0 ? "return;" : s.values.length === 1 ? `return ${this.expr(s.values[0])};` : `return [${s.values.map((v) => this.expr(v)).join(", ")}];`);
        break;
      case "yield": this.line(ind, `pl.yield(${s.values.map((v) => this.expr(v)).join(", ")});`); break;
      case "break": this.line(ind, s.values.length ? `pl.break(${s.values.map((v) => this.expr(v)).join(", ")});` : "break;"); break;
      case "continue": this.line(ind, s.values.length ? `pl.continue(${s.values.map((v) => this.expr(v)).join(", ")});` : "continue;"); break;
      case "scope":
        this.line(ind, `pl.at(pl.Level.${s.level}, () => {`);
        this.block(s.body, ind + 1);
        this.line(ind, "});");
        break;
      case "for": {
        const r = `${this.expr(s.start)}, ${this.expr(s.stop)}, ${this.expr(s.step)}`;
        if (s.iterArgs.length === 0) {
          this.line(ind, `for (const ${this.namer.name(s.loopVar)} of pl.range(${r})) {`);
          this.block(s.body, ind + 1);
          this.line(ind, "}");
        } else {
          const inits = `[${s.inits.map((e) => this.expr(e)).join(", ")}]`;
          this.line(ind, `const [${s.results.map((v) => this.namer.name(v)).join(", ")}] = pl.forRange(${r}, ${inits}, (${this.params([s.loopVar, ...s.iterArgs])}) => {`);
          this.block(s.body, ind + 1);
          this.line(ind, "});");
        }
        break;
      }
      case "while":
        if (s.iterArgs.length === 0) {
          this.line(ind, `while (${this.expr(s.cond)}) {`);
          this.block(s.body, ind + 1);
          this.line(ind, "}");
        } else {
          const ps = this.params(s.iterArgs);
          this.line(ind, `const [${s.results.map((v) => this.namer.name(v)).join(", ")}] = pl.whileLoop([${s.inits.map((e) => this.expr(e)).join(", ")}], (${ps}) => ${this.expr(s.cond)}, (${ps}) => {`);
          this.block(s.body, ind + 1);
          this.line(ind, "});");
        }
        break;
      case "if":
        if (s.results.length === 0) {
          this.line(ind, `if (${this.expr(s.cond)}) {`);
          this.block(s.then, ind + 1);
          if (s.else.length) { this.line(ind, "} else {"); this.block(s.else, ind + 1); }
          this.line(ind, "}");
        } else {
          // results whose types are not their then-yield's (memory planning placed them apart) are annotated
          const y = s.then[s.then.length - 1];
          const same = y?.kind === "yield" && y.values.length === s.results.length && s.results.every((r, k) => typeEqual(r.type, exprType(y.values[k])));
          const ann = same ? "" : `: [${s.results.map((r) => typeText(r.type)).join(", ")}]`;
          this.line(ind, `const [${s.results.map((v) => this.namer.name(v)).join(", ")}] = pl.ifElse(${this.expr(s.cond)}, ()${ann} => {`);
          this.block(s.then, ind + 1);
          this.line(ind, "}, () => {");
          this.block(s.else, ind + 1);
          this.line(ind, "});");
        }
        break;
    }
  }

  func(f: Func) {
    this.namer = new Namer(this.fnNames);
    this.declared = new Set();
    const counts = new Map<number, number>();
    forEachStmt(f.body, (s) => { if (s.kind === "assign") s.targets.forEach((t) => counts.set(t.id, (counts.get(t.id) ?? 0) + 1)); });
    this.rebound = new Set([...counts].filter(([, n]) => n > 1).map(([id]) => id));
    const hoist = hoisted(f.body, this.rebound);
    const wrap = f.fnKind === "orchestration" ? "pl.jit" : f.fnKind === "incore" ? "pl.jit.incore" : "pl.jit.inline";
    const params = f.params.map((p) => {
      const t = typeText(p.var.type);
      const ty = p.dir === "out" ? `pl.Out<${t}>` : p.dir === "inout" ? `pl.InOut<${t}>` : t;
      return `${this.namer.name(p.var)}: ${ty}`;
    });
    const ret = f.returnTypes.length === 0 ? "void" : f.returnTypes.length === 1 ? typeText(f.returnTypes[0]) : `[${f.returnTypes.map(typeText).join(", ")}]`;
    this.line(0, `const ${f.name} = ${wrap}(function ${f.name}(${params.join(", ")}): ${ret} {`);
    for (const v of hoist) {
      this.declared.add(v.id);
      this.line(1, `let ${this.namer.name(v)}: ${typeText(v.type)};`);
    }
    this.block(f.body, 1);
    const attrs = Object.keys(f.attrs).length ? `, { attrs: ${attrText(f.attrs)} }` : "";
    this.line(0, `}${attrs});`);
  }

  text(): string { return this.out.join("\n") + "\n"; }
}

/**
 * Pre-SSA variables to declare at the top of the function (`let x: T;`) because a block-local
 * declaration at their first assignment would not cover every assignment and use: a `let`
 * first assigned in one branch and reassigned in the other or read after the branch. Also
 * every rebound variable of a multi-target assignment (`[a, b] = f()` needs declared names),
 * and all targets of such an assignment once one of them is hoisted.
 */
function hoisted(body: readonly Stmt[], rebound: ReadonlySet<number>): Var[] {
  const firstPath = new Map<number, number[]>();
  const vars = new Map<number, Var>();
  const hoist = new Set<number>();
  const multi: (readonly Var[])[] = [];
  let nextBlock = 0;
  const within = (p: number[], q: number[]) => q.length <= p.length && q.every((b, i) => p[i] === b);
  const touch = (v: Var, path: number[], isDef: boolean) => {
    const fp = firstPath.get(v.id);
    if (fp === undefined) { if (isDef) { firstPath.set(v.id, path); vars.set(v.id, v); } return; }
    if (!within(path, fp)) hoist.add(v.id);
  };
  const exprs = (e: Expr, path: number[]) => {
    if (e.kind === "var") touch(e, path, false);
    else if (e.kind === "call") e.args.forEach((a) => exprs(a, path));
    else if (e.kind === "list") e.items.forEach((a) => exprs(a, path));
  };
  const block = (ss: readonly Stmt[], parent: number[]) => {
    const path = [...parent, nextBlock++];
    for (const s of ss) {
      switch (s.kind) {
        case "assign":
          exprs(s.value, path);
          s.targets.forEach((t) => touch(t, path, true));
          if (s.targets.length !== 1) {
            multi.push(s.targets);
            s.targets.forEach((t) => { if (rebound.has(t.id)) hoist.add(t.id); });
          }
          break;
        case "eval": exprs(s.expr, path); break;
        case "for": [s.start, s.stop, s.step, ...s.inits].forEach((e) => exprs(e, path)); block(s.body, path); break;
        case "while": s.inits.forEach((e) => exprs(e, path)); exprs(s.cond, path); block(s.body, path); break;
        case "if": exprs(s.cond, path); block(s.then, path); block(s.else, path); break;
        case "scope": block(s.body, path); break;
        default: s.values.forEach((e) => exprs(e, path));
      }
    }
  };
  block(body, []);
  for (let changed = true; changed;) {
    changed = false;
    for (const ts of multi) {
      if (ts.some((t) => hoist.has(t.id)) && !ts.every((t) => hoist.has(t.id))) {
        ts.forEach((t) => hoist.add(t.id));
        changed = true;
      }
    }
  }
  return [...vars.values()].filter((v) => hoist.has(v.id)); // in order of first assignment
}

export function printProgram(p: Program): string {
  const pr = new Printer(new Set(p.functions.map((f) => f.name)));
  const header = `// tspto IR: program ${JSON.stringify(p.name)}, entry ${p.entry}\nimport * as pl from "tspto/language";\n`;
  // Callees first so every name is declared before use.
  const order = [...p.functions].sort((a, b) => (a.name === p.entry ? 1 : 0) - (b.name === p.entry ? 1 : 0));
  order.forEach((f, i) => { if (i) pr["out"].push(""); pr.func(f); });
  return header + "\n" + pr.text();
}
