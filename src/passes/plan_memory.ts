// plan on-chip memory: every tile variable of an InCore function gets a byte offset in the
// per-core scratch arena. Live ranges come from a linear numbering of the statements
// (a value used inside a loop stays live for the whole loop); loop results share the
// address of their iterArgs; offsets are 64-byte aligned and reused once a tile is dead.
// A function whose live tiles exceed the capacity is a compile error naming the tiles.
// Loop-carried tiles are coalesced so that a K loop `acc = matmulAcc(acc, a, b)` runs in
// place, without a copy per iteration (see coalesceCarried):
//   - an initial value whose last use is the loop shares its iterArg's address (no copy in);
//   - a yielded value computed by an op that may write over its input (IN_PLACE) from the
//     iterArg itself, which nothing reads after that op in the body, shares the iterArg's
//     address too (no copy back at the end of each iteration).
// On a target whose code generator reads a matmul's operand straight from its tensor window
// (PassContext.matmulOperandsInPlace: forwardableMatmulOperands), those operand tiles and the
// loads they move from take no scratch and get no address: a [256, 512] accumulator with
// [256, 128] and [128, 512] operand windows then needs 512 KiB, not 1.25 MiB (the loads and
// their moves to Left/Right, some live at once).
// On a target whose scratch holds every element in at least PassContext.minTileElemBytes bytes
// (webgpu: a 32-bit word per element), tiles are sized so; the function records the figure
// (attrs.minTileElemBytes) and replanMemory plans a program again for a target that differs.
import {
  TsptoCompileError, mkVar, numel, tileElemBytes, forEachExpr, typeStr, type Expr, type Func, type Program, type Stmt, type TileType, type Var,
} from "../ir/index.js";
import type { Pass, PassContext } from "./manager.js";
import { replaceVars } from "./util.js";
import { forwardableMatmulOperands } from "./forward_loads.js";

export const memoryPlanPass: Pass = {
  name: "PlanMemory",
  run(p, ctx) {
    return p.withFunctions(p.functions.map((f) => (f.fnKind === "incore" ? planFunc(f, ctx) : f)));
  },
};

/** Scratch bytes of a tile (64-byte aligned) when every element takes at least `minElem` bytes. */
export function plannedTileBytes(t: TileType, minElem = 1): number {
  return Math.ceil((numel(t.shape) * Math.max(minElem, tileElemBytes(t.dtype))) / 64) * 64;
}
const minElemOf = (ctx: PassContext): number => ctx.minTileElemBytes ?? 1;

interface Interval { v: Var; start: number; end: number; bytes: number; addr?: number }

/**
 * Ops whose emitters (cpu and cuda) may write their result over the tile argument at the given
 * index: each output element is written only after the same element of that argument was read
 * (and no other element of it is read later). matmulAcc: every output block loads its
 * accumulator block, runs the k loop in registers and stores the block back.
 */
export const IN_PLACE: ReadonlyMap<string, number> = new Map([["tile.matmulAcc", 0]]);

interface LoopInfo { at: number; iterArgs: readonly Var[]; inits: readonly Expr[]; body: readonly Stmt[] }

function stmtExprs(s: Stmt): Expr[] {
  switch (s.kind) {
    case "assign": return [s.value];
    case "eval": return [s.expr];
    case "for": return [s.start, s.stop, s.step, ...s.inits];
    case "while": return [...s.inits];
    case "if": return [s.cond];
    case "scope": return [];
    default: return [...s.values];
  }
}

function planFunc(f: Func, ctx: PassContext): Func {
  const iv = new Map<number, Interval>();
  const alias = new Map<number, number>(); // result (or coalesced) var id -> iterArg var id
  const rep = (id: number) => { let r = id; while (alias.has(r)) r = alias.get(r)!; return r; };
  const loopInfos: LoopInfo[] = [];
  let pos = 0;
  const loops: { start: number }[] = [];
  const pendingUses: { id: number; pos: number; loopStarts: number[] }[] = [];
  const inPlace = ctx.matmulOperandsInPlace ? forwardableMatmulOperands(f).skipped : new Set<number>();
  const def = (v: Var, at: number) => {
    if (v.type.kind !== "tile" || alias.has(v.id) || inPlace.has(v.id)) return;
    iv.set(v.id, { v, start: at, end: at, bytes: plannedTileBytes(v.type, minElemOf(ctx)) });
  };
  const use = (e: Expr, at: number) => forEachExpr([{ kind: "eval", expr: e, span: e.span } as Stmt], (x) => {
    if (x.kind === "var" && x.type.kind === "tile") pendingUses.push({ id: x.id, pos: at, loopStarts: loops.map((l) => l.start) });
  });
  const loopEnds = new Map<number, number>(); // loop start -> end
  const walk = (ss: readonly Stmt[]) => {
    for (const s of ss) {
      const at = pos++;
      if (s.kind !== "while") stmtExprs(s).forEach((e) => use(e, at));
      switch (s.kind) {
        case "assign": s.targets.forEach((t) => def(t, at)); break;
        case "for": case "while":
          if (s.kind === "while") s.inits.forEach((e) => use(e, at));
          s.iterArgs.forEach((a, i) => { def(a, at); alias.set(s.results[i].id, a.id); });
          loopInfos.push({ at, iterArgs: s.iterArgs, inits: s.inits, body: s.body });
          loops.push({ start: at });
          if (s.kind === "while") use(s.cond, at);
          walk(s.body);
          loops.pop();
          loopEnds.set(at, pos++);
          break;
        case "if":
          s.results.forEach((r) => def(r, at));
          walk(s.then); walk(s.else);
          break;
        case "scope": walk(s.body); break;
        default: break;
      }
    }
  };
  walk(f.body);
  // Extend live ranges: a use inside loops that began after the definition keeps the value
  // alive until the end of the outermost such loop (the next iteration reads it again).
  for (const u of pendingUses) {
    const r = iv.get(rep(u.id));
    if (!r) continue;
    let end = u.pos;
    for (const ls of u.loopStarts) if (ls >= r.start) { end = Math.max(end, loopEnds.get(ls)!); break; }
    // iterArgs are defined at their loop's start: keep them for that whole loop too
    if (loopEnds.has(r.start)) end = Math.max(end, loopEnds.get(r.start)!);
    r.end = Math.max(r.end, end);
  }
  for (const r of iv.values()) if (loopEnds.has(r.start)) r.end = Math.max(r.end, loopEnds.get(r.start)!);
  coalesceCarried(loopInfos, iv, alias, rep, pendingUses, loopEnds);

  // Linear-scan allocation, first fit over a sorted list of live blocks.
  const order = [...iv.values()].sort((a, b) => a.start - b.start || b.bytes - a.bytes);
  const live: Interval[] = [];
  let high = 0;
  for (const r of order) {
    for (let i = live.length - 1; i >= 0; i--) if (live[i].end < r.start) live.splice(i, 1);
    live.sort((a, b) => a.addr! - b.addr!);
    let addr = 0;
    for (const l of live) { if (addr + r.bytes <= l.addr!) break; addr = Math.max(addr, l.addr! + l.bytes); }
    r.addr = addr;
    live.push(r);
    high = Math.max(high, addr + r.bytes);
    if (high > ctx.scratchCapacity) {
      const set = [...live].sort((a, b) => b.bytes - a.bytes).map((l) => `${l.v.name}: ${typeStr(l.v.type)} ${fmtBytes(l.bytes)}`);
      throw new TsptoCompileError("E_SCRATCH", `tiles of kernel '${f.name}' need ${high} bytes of on-chip scratch, capacity is ${ctx.scratchCapacity} bytes; live here: ${set.join(", ")}`,
        r.v.span, "use smaller tiles (load and process the tensor in chunks with pl.range), or end the use of large tiles earlier");
    }
  }
  const addrOf = (id: number) => iv.get(rep(id))?.addr;
  const body = replaceVars(f.body, (v) => {
    if (v.type.kind !== "tile") return undefined;
    const a = addrOf(v.id);
    if (a === undefined) return undefined;
    return mkVar(v.name, { ...(v.type as TileType), addr: a }, v.span);
  });
  // operandsInPlace: this plan left matmul operands without scratch (a target that stages them
  // must plan the program again: replanMemory)
  const { operandsInPlace: _was, minTileElemBytes: _min, ...rest } = f.attrs;
  const planned = minElemOf(ctx) > 1 ? { ...rest, minTileElemBytes: minElemOf(ctx) } : rest;
  const attrs = inPlace.size > 0 ? { ...planned, scratchBytes: high, operandsInPlace: true } : { ...planned, scratchBytes: high };
  return Object.freeze({ ...f, body: Object.freeze(body), attrs: Object.freeze(attrs) });
}

/**
 * A lowered program is handed to a target (ir.compile of `f.lower(...)`, lowered with the
 * default platform's facts): when its memory plan left matmul operands without scratch and
 * this target's code generator stages them, plan its memory again with the target's facts
 * (every tile gets an address; E_SCRATCH where they do not fit). The same when its tiles were
 * sized for another minimum element size (PassContext.minTileElemBytes). Otherwise the program as is.
 */
export function replanMemory(p: Program, ctx: PassContext): Program {
  const incore = p.functions.filter((f) => f.fnKind === "incore");
  const stagedOperands = !ctx.matmulOperandsInPlace && incore.some((f) => f.attrs.operandsInPlace === true);
  const otherElems = incore.some((f) => (typeof f.attrs.minTileElemBytes === "number" ? f.attrs.minTileElemBytes : 1) !== minElemOf(ctx));
  if (!stagedOperands && !otherElems) return p;
  return memoryPlanPass.run(p, ctx);
}

/**
 * Give loop-carried tiles one address with their initial and yielded values where that is
 * safe (see the header): merges the intervals and records the alias.
 */
function coalesceCarried(loopInfos: readonly LoopInfo[], iv: Map<number, Interval>, alias: Map<number, number>, rep: (id: number) => number,
  uses: readonly { id: number; pos: number }[], loopEnds: ReadonlyMap<number, number>): void {
  const merge = (from: number, into: number) => {
    const f = iv.get(from), t = iv.get(into);
    if (!f || !t || from === into || f.bytes !== t.bytes) return false;
    t.start = Math.min(t.start, f.start);
    t.end = Math.max(t.end, f.end);
    iv.delete(from);
    alias.set(from, into);
    return true;
  };
  for (const L of loopInfos) {
    const end = loopEnds.get(L.at)!;
    const last = L.body[L.body.length - 1];
    L.iterArgs.forEach((a, i) => {
      if (a.type.kind !== "tile" || !iv.has(a.id)) return;
      // initial value: a tile whose live range ends at this loop, used by no other init of it
      const x = L.inits[i];
      if (x && x.kind === "var" && x.type.kind === "tile" && L.inits.filter((e) => e.kind === "var" && rep(e.id) === rep(x.id)).length === 1) {
        const r = iv.get(rep(x.id));
        if (r && r.end <= L.at && r.start < L.at) merge(rep(x.id), a.id);
      }
      // yielded value: y = op(..., a, ...) at the body's top level with a in an IN_PLACE slot
      if (!last || last.kind !== "yield") return;
      const y = last.values[i];
      if (!y || y.kind !== "var" || y.type.kind !== "tile" || L.iterArgs.some((b) => b.id === y.id)) return;
      if (last.values.filter((e) => e.kind === "var" && e.id === y.id).length !== 1) return;
      const d = L.body.find((st) => st.kind === "assign" && st.targets.length === 1 && st.targets[0].id === y.id);
      if (!d || d.kind !== "assign" || d.value.kind !== "call") return;
      const slot = IN_PLACE.get(d.value.op);
      const arg = slot === undefined ? undefined : d.value.args[slot];
      if (!arg || arg.kind !== "var" || arg.id !== a.id) return;
      const ry = iv.get(y.id);
      if (!ry) return;
      // nothing reads the old value of a after y is computed (the op itself reads it at ry.start)
      if (uses.some((u) => u.id === a.id && u.pos > ry.start && u.pos <= end)) return;
      merge(y.id, a.id);
    });
  }
}

const fmtBytes = (n: number) => (n >= 1024 ? `${(n / 1024).toFixed(n % 1024 ? 1 : 0)} KiB` : `${n} B`);
