// `pl.*` calls in expressions: registry ops (source arguments → IR operands and attributes by
// the op's parameter kinds), pl.const and pl.withAttrs; placement checks (orchestration vs InCore)
// and the read/write effects that drive direction inference.
import { ts } from "../typescript.js";
import { TsptoCompileError, TsptoSyntaxError, TsptoTypeError } from "../../ir/errors.js";
import { exprType, mkCall, mkConst, mkList, type AttrValue, type Const, type Expr } from "../../ir/nodes.js";
import { atLevel, dimsOperand, dimsOptionKeys, effectsOf, inferCall, levelFromUse, opsForPl, plOpNames, resolvePlOp, type ParamKind } from "../../ir/registry.js";
import { validSources } from "../../ir/valid.js";
import { constToValue } from "../resolve.js";
import { ExprBuilder } from "./expressions.js";
import { closest, PL_STATEMENTS } from "./types.js";

export abstract class PlOpBuilder extends ExprBuilder {
  protected plCall(name: string, e: ts.CallExpression): Expr {
    if (name === "const") return this.plConst(e);
    if (name === "withAttrs") return this.withAttrs(e);
    if (PL_STATEMENTS.includes(name)) { // (const and withAttrs are handled above)
      const what = name === "range" ? "pl.range is only used as the iterable of a for-of loop: for (const i of pl.range(n))"
        : name === "jit" ? "pl.jit cannot be used inside a kernel"
          : name === "forRange" || name === "whileLoop" || name === "ifElse" ? `pl.${name} results are bound by destructuring: const [r] = pl.${name}(...)`
            : `pl.${name}(...) is a statement`;
      this.syntax("E_SYNTAX", what, e);
    }
    if (!opsForPl(name).length) {
      const names = [...plOpNames(), ...PL_STATEMENTS.filter((s) => s !== "jit")];
      throw new TsptoSyntaxError("E_UNKNOWN_OP", `unknown op 'pl.${name}'`, this.span(e.expression),
        `did you mean ${closest(name, names).map((n) => `pl.${n}`).join(", ")}?`);
    }
    return this.op(name, e);
  }

  /** `pl.withAttrs(call, { k: v })`: a call with extra attributes (what passes record; printed IR). */
  protected withAttrs(e: ts.CallExpression): Expr {
    if (e.arguments.length !== 2) this.syntax("E_ARITY", `pl.withAttrs takes 2 arguments (call, attrs), got ${e.arguments.length}`, e);
    const inner = this.expr(e.arguments[0]);
    if (inner.kind !== "call") this.syntax("E_SYNTAX", "pl.withAttrs applies to a call", e.arguments[0]);
    const c = this.constOf(e.arguments[1]);
    if (c?.k !== "obj") this.typeErr("the attributes of pl.withAttrs are an object of constants", e.arguments[1]);
    const extra = constToValue(c) as Record<string, AttrValue>;
    return mkCall(inner.op, inner.args, { ...inner.attrs, ...extra }, inner.type, inner.span);
  }

  protected plConst(e: ts.CallExpression): Expr {
    if (e.arguments.length !== 2) this.syntax("E_ARITY", `pl.const takes 2 arguments (value, dtype), got ${e.arguments.length}`, e);
    const v = this.constOf(e.arguments[0]);
    const d = this.constOf(e.arguments[1]);
    if (!v || (v.k !== "num" && v.k !== "bool")) this.typeErr("the value of pl.const must be a constant number or boolean", e.arguments[0]);
    if (d?.k !== "str") this.typeErr("the dtype of pl.const must be a dtype like pl.INT32", e.arguments[1]);
    const c = mkConst(v.v, d.v as Const["dtype"], this.span(e));
    if (!(["float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"] as string[]).includes(d.v)) {
      this.typeErr(`unknown dtype ${JSON.stringify(d.v)}`, e.arguments[1]);
    }
    return c;
  }

  /** `pl.<name>(...)` of a registry op: source arguments → IR operands and attributes by the op's params. */
  protected op(name: string, e: ts.CallExpression): Expr {
    const span = this.span(e);
    const params = opsForPl(name)[0].params;
    const args = e.arguments;
    for (const a of args) if (ts.isSpreadElement(a)) this.syntax("E_SYNTAX", "spread arguments are not supported in kernels", a);
    const min = params.filter((p) => !p.optional).length;
    if (args.length < min || args.length > params.length) {
      const sig = `pl.${name}(${params.map((p) => (p.optional ? `${p.name}?` : p.name)).join(", ")})`;
      throw new TsptoTypeError("E_ARITY",
        `pl.${name} takes ${min === params.length ? min : `${min} to ${params.length}`} argument${params.length === 1 ? "" : "s"}, got ${args.length}`,
        span, `${sig}: ${opsForPl(name)[0].doc}`);
    }
    const firstIdx = params.findIndex((p) => p.kind === "value");
    const first = firstIdx >= 0 && firstIdx < args.length ? this.expr(args[firstIdx]) : undefined;
    // a number first (pl.sub(1.0, x)), or a pl.full (its level comes from this use): the other
    // value operands decide between the tile and tensor op
    const others = new Map<number, Expr>();
    if (first && (exprType(first).kind === "scalar" || levelFromUse(first))) {
      params.forEach((p, i) => {
        const a = args[i];
        if (i !== firstIdx && p.kind === "value" && a && !(ts.isIdentifier(a) && a.text === "undefined")) others.set(i, this.expr(a));
      });
    }
    let def = resolvePlOp(name, first && !levelFromUse(first) ? exprType(first) : undefined,
      [...others.values()].filter((x) => !levelFromUse(x)).map(exprType))!;
    // an op without value operands whose shape names a dynamic dimension (pl.iota([S, "L"], ...)) is a tensor
    if (!first && def.level === "tile") {
      const tensorForm = opsForPl(name).find((o) => o.level === "tensor");
      const named = (a: ts.Expression | undefined) => { const c = a && this.constOf(a); return c?.k === "arr" && c.v.some((x) => x.k === "str"); };
      if (tensorForm && def.params.some((p, i) => p.kind === "shape" && named(args[i]))) def = tensorForm;
    }
    const irArgs: Expr[] = [];
    const attrs: Record<string, AttrValue> = {};
    const runtimeLists = new Map<string, Expr>(); // "dims" options with runtime extents: trailing operands
    def.params.forEach((p, i) => {
      const a = args[i];
      if (!a || a.kind === ts.SyntaxKind.UndefinedKeyword || (ts.isIdentifier(a) && a.text === "undefined")) {
        if (!p.optional && a) this.typeErr(`pl.${name}: '${p.name}' is required`, a);
        return;
      }
      switch (p.kind) {
        case "value": {
          const x = i === firstIdx ? first! : others.get(i) ?? this.expr(a);
          // pl.full written as an operand of a tensor-level op is a tensor
          irArgs.push(def.level === "tensor" ? atLevel(x, "tensor") : x);
          break;
        }
        case "values": irArgs.push(this.listArg(a, name, p.name)); break;
        case "options": this.optionsArg(a, name, p.options ?? {}, attrs, runtimeLists); break;
        case "dims": throw new Error(`internal: pl.${name}: "dims" is an option kind, not a parameter kind`);
        default: attrs[p.name] = this.attrArg(a, p.kind, name, p.name);
      }
    });
    for (const k of dimsOptionKeys(def)) { const l = runtimeLists.get(k); if (l) irArgs.push(l); }
    // after the arguments, so that pl.assign(out, pl.add(a, b)) reports the innermost op first
    if (def.level === "orchestration") {
      if (this.env.fnKind !== "orchestration" || this.scopeDepth > 0) {
        throw new TsptoCompileError("E_MISPLACED", `pl.${name} creates an orchestration-level device tensor and is only allowed in an entry (pl.jit), outside pl.at`, span,
          this.env.fnKind === "orchestration" ? `call pl.${name} before the pl.at scope and use the tensor inside it` : "create on-chip buffers with pl.createTile, or pass the tensor in from the entry");
      }
    } else if (def.level !== "scalar" && this.env.fnKind === "orchestration" && this.scopeDepth === 0) {
      throw new TsptoCompileError("E_MISPLACED", `Misplaced tensor op '${def.name}' in Orchestration function (should be inside InCore block)`, span,
        "wrap it in pl.at(pl.Level.CORE_GROUP, () => { ... }) or move it into a pl.jit.incore kernel");
    }
    // tensors an op reads/writes (direction inference)
    const eff = effectsOf(def, irArgs, attrs);
    irArgs.forEach((x, i) => this.markEffect(x, eff.reads.includes(i) || !eff.writes.includes(i), eff.writes.includes(i)));
    const type = inferCall(def, irArgs, attrs, span);
    const call = mkCall(def.name, irArgs, attrs, type, span);
    validSources(call); // a runtime validShape this op cannot carry: E_DYNAMIC at the call
    return call;
  }

  /** Offsets: an array literal of scalar expressions (or a constant array). */
  protected listArg(a: ts.Expression, op: string, param: string): Expr {
    const span = this.span(a);
    if (ts.isArrayLiteralExpression(a)) {
      return mkList(a.elements.map((x) => {
        if (ts.isSpreadElement(x)) this.syntax("E_SYNTAX", "spread is not supported in kernels", x);
        return this.intify(this.scalarExpr(x, `an element of '${param}'`));
      }), span);
    }
    const c = this.constOf(a);
    if (c?.k === "arr" && c.v.every((x) => x.k === "num")) {
      return mkList(c.v.map((x) => this.intify(mkConst((x as { v: number }).v, (x as { float: boolean }).float ? "float32" : "int64", span))), span);
    }
    if (ts.isIdentifier(a)) {
      const l = this.local(a.text);
      if (l?.list) return l.list; // kernel mode: the list a const was bound to
      if (l?.var && l.var.type.kind === "list") return this.readLocal(l, a); // IR text: a list variable
    }
    if (c === undefined) this.reportUnresolved(a);
    return this.typeErr(`pl.${op}: '${param}' must be an array literal of scalars, like [0, i * 64]`, a);
  }

  protected attrArg(a: ts.Expression, kind: Exclude<ParamKind, "value" | "values" | "options" | "dims">, op: string, param: string): AttrValue {
    const c = this.constOf(a);
    // not a constant: report an unresolved identifier in it before the generic message
    if (c === undefined) this.reportUnresolved(a);
    switch (kind) {
      case "ints":
        if (c?.k === "arr" && c.v.every((x) => x.k === "num" && Number.isInteger(x.v))) return c.v.map((x) => (x as { v: number }).v);
        return this.typeErr(`pl.${op}: '${param}' must be a list of constant integers`, a,
          "use numbers or module-level consts, e.g. [ROWS, COLS]; a dynamic shape is not supported");
      case "shape":
        if (c?.k === "arr" && c.v.every((x) => (x.k === "num" && Number.isInteger(x.v)) || x.k === "str")) return c.v.map((x) => (x as { v: number | string }).v);
        return this.typeErr(`pl.${op}: '${param}' must be a list of constant integers and dynamic dimension names`, a,
          `use numbers, module-level consts, or the name of a dynamic dimension of the entry's parameters, e.g. ["S", 64]`);
      case "dtype":
        if (c?.k === "str") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a dtype like pl.FP32 or "float32"`, a);
      case "mem":
        if (c?.k === "str") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a memory space like pl.Mem.Vec`, a);
      case "number":
        if (c?.k === "num") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a constant number`, a);
      case "string":
        if (c?.k === "str") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a string literal`, a);
      case "bool":
        if (c?.k === "bool") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a constant true or false`, a);
    }
  }

  /**
   * A "dims" option (validShape): constants stay an attribute (the static form); an array with
   * runtime integer scalars (`[Math.min(64, n - i), 64]`) records RUNTIME_DIM for each of them
   * and returns their expressions as one list operand. An item spelled `pl.const(..)` counts as
   * a runtime one (the printed IR writes a folded runtime extent so).
   */
  protected dimsArg(a: ts.Expression, op: string, key: string): { attr: AttrValue; list: Expr | null } {
    const c = this.constOf(a);
    if (c?.k === "arr" && c.v.every((x) => x.k === "num" && Number.isInteger(x.v))) return { attr: c.v.map((x) => (x as { v: number }).v), list: null };
    if (!ts.isArrayLiteralExpression(a)) {
      if (c === undefined) this.reportUnresolved(a);
      return this.typeErr(`pl.${op}: '${key}' must be an array literal of integers or integer scalars, like [n - i, 64]`, a);
    }
    const items: (number | Expr)[] = a.elements.map((x) => {
      if (ts.isSpreadElement(x)) this.syntax("E_SYNTAX", "spread is not supported in kernels", x);
      const k = this.constOf(x);
      if (k?.k === "num" && Number.isInteger(k.v)) return k.v;
      return this.intify(this.scalarExpr(x, `an element of '${key}'`));
    });
    const { attr, list } = dimsOperand(items, this.span(a));
    return { attr, list };
  }

  protected optionsArg(a: ts.Expression, op: string, options: Readonly<Record<string, Exclude<ParamKind, "options" | "value">>>, attrs: Record<string, AttrValue>,
    runtimeLists: Map<string, Expr>): void {
    if (!ts.isObjectLiteralExpression(a)) this.typeErr(`pl.${op}: options must be an object literal like { ${Object.keys(options).map((k) => `${k}: ...`).join(", ")} }`, a);
    for (const p of a.properties) {
      const key = (ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p)) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : null;
      if (key === null) this.syntax("E_SYNTAX", `pl.${op}: unsupported option syntax`, p);
      const kind = options[key];
      if (!kind) this.typeErr(`pl.${op}: unknown option '${key}' (expected ${Object.keys(options).join(", ")})`, p);
      const value = ts.isPropertyAssignment(p) ? p.initializer : (p as ts.ShorthandPropertyAssignment).name;
      if (kind === "values") this.typeErr(`pl.${op}: option '${key}' is not supported`, p);
      if (kind === "dims") {
        const d = this.dimsArg(value, op, key);
        attrs[key] = d.attr;
        if (d.list) runtimeLists.set(key, d.list);
        continue;
      }
      attrs[key] = this.attrArg(value, kind as Exclude<ParamKind, "value" | "values" | "options" | "dims">, op, key);
    }
  }
}
