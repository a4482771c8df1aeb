// Shape ops: reshape, slice, concat, assemble, fillpad.
import { numel, padValue } from "../../../ir/index.js";
import { toDType } from "../../../ir/values.js";
import { scratchCType, scratchLit } from "./ctypes.js";
import { def } from "./table.js";
import { destPtr, exprLabel, linear, shapeLoops, tileOperand, tileWindow } from "./tiles.js";

// reshape keeps the row-major order: element i of the result is element i of the operand.
def("tile.reshape", { kind: "elementwise", emit(_call, [a]) { return a.code; } });

def("tile.slice", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const shape = dest.type.shape;
    const off = tileWindow(ctx, "slice", exprLabel(call.args[0]), call.args[1], shape, x.shape, call.span);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, shape, (idx) => `${o}[${linear(idx, shape)}] = ${ex(linear(idx, x.shape, off))};`);
  },
});

def("tile.concat", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const [m, na] = tileOperand(call.args[0]).shape, nb = tileOperand(call.args[1]).shape[1];
    const n = na + nb;
    const ea = ctx.elements(call.args[0]), eb = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const r = ctx.fresh("r"), c = ctx.fresh("c");
    ctx.open(`for (int64_t ${r} = 0; ${r} < ${m}; ++${r}) {`);
    ctx.line(`for (int64_t ${c} = 0; ${c} < ${na}; ++${c}) ${o}[${r} * ${n} + ${c}] = ${ea(`${r} * ${na} + ${c}`)};`);
    ctx.line(`for (int64_t ${c} = 0; ${c} < ${nb}; ++${c}) ${o}[${r} * ${n} + ${na} + ${c}] = ${eb(`${r} * ${nb} + ${c}`)};`);
    ctx.close();
  },
});

def("tile.assemble", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = tileOperand(call.args[0]), s = tileOperand(call.args[1]);
    const off = tileWindow(ctx, "assemble", exprLabel(call.args[0]), call.args[2], s.shape, t.shape, call.span);
    const et = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const i = ctx.fresh("i");
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${i} = 0; ${i} < ${numel(t.shape)}; ++${i}) ${o}[${i}] = ${et(i)};`);
    shapeLoops(ctx, s.shape, (idx) => `${o}[${linear(idx, t.shape, off)}] = ${es(linear(idx, s.shape))};`);
  },
});

def("tile.fillpad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const valid = ctx.validOf(call.args[0]);
    const d = x.dtype;
    const pad = scratchLit(d, toDType(padValue(d, String(call.attrs.padValue ?? "zero")), d));
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, x.shape, (idx) => {
      const inside = idx.flatMap((v, ax) => (typeof valid[ax] !== "number" || valid[ax] < x.shape[ax] ? [`${v} < ${valid[ax]}`] : []));
      const at = linear(idx, x.shape);
      return `${o}[${at}] = ${inside.length ? `tspto_blend<${scratchCType(d)}>(${inside.join(" && ")}, ${ex(at)}, ${pad})` : ex(at)};`;
    });
  },
});
