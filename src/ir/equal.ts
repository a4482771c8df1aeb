// Structural equality of programs: equal up to variable renaming (alpha-equivalence, as
// TVM's StructuralEqual), spans ignored. Returns a description of the first difference.
import type { AttrValue, Expr, Func, Stmt, Var } from "./nodes.js";
import { typeEqual, typeStr, type Type } from "./types.js";

class Diff extends Error {}

export function programsEqual(a: { entry: string; functions: readonly Func[] }, b: { entry: string; functions: readonly Func[] }): string | null {
  try {
    if (a.entry !== b.entry) throw new Diff(`entry ${a.entry} vs ${b.entry}`);
    const names = (p: typeof a) => p.functions.map((f) => f.name).sort();
    if (names(a).join() !== names(b).join()) throw new Diff(`functions [${names(a)}] vs [${names(b)}]`);
    for (const fa of a.functions) funcEqual(fa, b.functions.find((f) => f.name === fa.name)!);
    return null;
  } catch (e) {
    if (e instanceof Diff) return e.message;
    throw e;
  }
}

function attrEqual(x: AttrValue | undefined, y: AttrValue | undefined): boolean {
  return JSON.stringify(norm(x)) === JSON.stringify(norm(y));
}
function norm(v: AttrValue | undefined): unknown {
  if (v === undefined || v === null) return null;
  if (Array.isArray(v)) return v.map(norm);
  if (typeof v === "object") return Object.fromEntries(Object.keys(v).sort().filter((k) => (v as Record<string, AttrValue>)[k] !== undefined && (v as Record<string, AttrValue>)[k] !== null).map((k) => [k, norm((v as Record<string, AttrValue>)[k])]));
  return v;
}

function funcEqual(fa: Func, fb: Func): void {
  const where = `function ${fa.name}`;
  const map = new Map<number, number>();
  const check = (c: boolean, what: string) => { if (!c) throw new Diff(`${where}: ${what}`); };
  const tEq = (x: Type, y: Type, what: string) => check(typeEqual(x, y), `${what}: type ${typeStr(x)} vs ${typeStr(y)}`);
  const bind = (x: Var, y: Var, what: string) => {
    tEq(x.type, y.type, what);
    const prev = map.get(x.id);
    if (prev !== undefined) { check(prev === y.id, `${what}: ${x.name} rebinds inconsistently`); return; }
    map.set(x.id, y.id);
  };
  const binds = (xs: readonly Var[], ys: readonly Var[], what: string) => {
    check(xs.length === ys.length, `${what}: ${xs.length} vs ${ys.length} variables`);
    xs.forEach((x, i) => bind(x, ys[i], what));
  };
  check(fa.fnKind === fb.fnKind, `kind ${fa.fnKind} vs ${fb.fnKind}`);
  check(attrEqual(fa.attrs as AttrValue, fb.attrs as AttrValue), `attrs ${JSON.stringify(fa.attrs)} vs ${JSON.stringify(fb.attrs)}`);
  check(fa.params.length === fb.params.length, `${fa.params.length} vs ${fb.params.length} params`);
  fa.params.forEach((p, i) => { check(p.dir === fb.params[i].dir, `param ${p.var.name} direction ${p.dir} vs ${fb.params[i].dir}`); bind(p.var, fb.params[i].var, `param ${p.var.name}`); });
  check(fa.returnTypes.length === fb.returnTypes.length && fa.returnTypes.every((t, i) => typeEqual(t, fb.returnTypes[i])), "return types differ");

  const ex = (x: Expr, y: Expr): void => {
    check(x.kind === y.kind, `expression ${x.kind} vs ${y.kind}`);
    switch (x.kind) {
      case "var": { const m = map.get(x.id); check(m !== undefined ? m === (y as Var).id : false, `variable ${x.name} vs ${(y as Var).name}`); break; }
      case "const": { const c = y as typeof x; check(Object.is(x.value, c.value) && x.dtype === c.dtype, `constant ${x.value}:${x.dtype} vs ${c.value}:${c.dtype}`); break; }
      case "list": { const l = y as typeof x; check(x.items.length === l.items.length, "list lengths differ"); x.items.forEach((it, i) => ex(it, l.items[i])); break; }
      case "call": {
        const c = y as typeof x;
        check(x.op === c.op, `op ${x.op} vs ${c.op}`);
        check(x.args.length === c.args.length, `${x.op}: ${x.args.length} vs ${c.args.length} args`);
        check(attrEqual(x.attrs as AttrValue, c.attrs as AttrValue), `${x.op}: attrs ${JSON.stringify(x.attrs)} vs ${JSON.stringify(c.attrs)}`);
        tEq(x.type, c.type, x.op);
        x.args.forEach((a, i) => ex(a, c.args[i]));
        break;
      }
    }
  };
  const exs = (xs: readonly Expr[], ys: readonly Expr[], what: string) => { check(xs.length === ys.length, `${what}: ${xs.length} vs ${ys.length} values`); xs.forEach((x, i) => ex(x, ys[i])); };
  const block = (xs: readonly Stmt[], ys: readonly Stmt[]): void => {
    check(xs.length === ys.length, `block of ${xs.length} vs ${ys.length} statements (first: ${xs[0]?.kind} vs ${ys[0]?.kind})`);
    xs.forEach((x, i) => st(x, ys[i]));
  };
  const st = (x: Stmt, y: Stmt): void => {
    check(x.kind === y.kind, `statement ${x.kind} vs ${y.kind}`);
    switch (x.kind) {
      case "assign": { const s = y as typeof x; ex(x.value, s.value); binds(x.targets, s.targets, "assign"); break; }
      case "eval": ex(x.expr, (y as typeof x).expr); break;
      case "for": {
        const s = y as typeof x;
        ex(x.start, s.start); ex(x.stop, s.stop); ex(x.step, s.step); exs(x.inits, s.inits, "for inits");
        bind(x.loopVar, s.loopVar, "loop variable"); binds(x.iterArgs, s.iterArgs, "iter args");
        block(x.body, s.body); binds(x.results, s.results, "for results");
        break;
      }
      case "while": {
        const s = y as typeof x;
        exs(x.inits, s.inits, "while inits"); binds(x.iterArgs, s.iterArgs, "iter args"); ex(x.cond, s.cond);
        block(x.body, s.body); binds(x.results, s.results, "while results");
        break;
      }
      case "if": { const s = y as typeof x; ex(x.cond, s.cond); block(x.then, s.then); block(x.else, s.else); binds(x.results, s.results, "if results"); break; }
      case "yield": case "break": case "continue": case "return": exs(x.values, (y as typeof x).values, x.kind); break;
      case "scope": { const s = y as typeof x; check(x.level === s.level, "scope level"); block(x.body, s.body); break; }
    }
  };
  block(fa.body, fb.body);
}
