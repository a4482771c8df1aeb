// matmul forms: the matmul variants become plain matmuls over other tile ops, so that a target
// needs one matmul kernel (its emitter) for all of them:
//   matmul(a, b, { aTrans, bTrans, outDtype })  -> cast(matmul(transpose(a), transpose(b)), outDtype)
//   matmulAcc(acc, a, b, { aTrans, bTrans })    -> matmulAcc(acc, transpose(a), transpose(b))
//   matmulBias(a, b, bias)                      -> colExpandAdd(matmul(a, b), bias)
//   batchMatmul(a[B,M,K], b[B,K,N])             -> B matmuls of reshaped slices, assembled
// Values are unchanged (the registry's reference semantics define each form the same way);
// flatten then gives every non-fusable intermediate its own tile.
import { exprType, getOp, inferCall, mapStmtExprs, mkCall, mkList, mkConst, type Attrs, type Call, type Expr, type Func, type TileType } from "../ir/index.js";
import type { Pass } from "./manager.js";

const FORMS = new Set(["tile.matmul", "tile.matmulAcc", "tile.matmulBias", "tile.batchMatmul"]);

export const matmulFormsPass: Pass = {
  name: "MatmulForms",
  run(p) {
    return p.withFunctions(p.functions.map((f) => (f.fnKind === "incore" ? lowerFunc(f) : f)));
  },
};

const mk = (op: string, args: readonly Expr[], attrs: Attrs, like: Call): Call => mkCall(op, args, attrs, inferCall(getOp(op), args, attrs, like.span), like.span);
const tr = (x: Expr, yes: unknown, like: Call): Expr => (yes === true ? mk("tile.transpose", [x], { axis1: 0, axis2: 1 }, like) : x);

function lowerFunc(f: Func): Func {
  let changed = false;
  const body = mapStmtExprs(f.body, (e) => {
    if (e.kind !== "call" || !FORMS.has(e.op)) return undefined;
    const a = e.attrs;
    switch (e.op) {
      case "tile.matmul": {
        if (a.aTrans !== true && a.bTrans !== true && a.outDtype == null) return undefined;
        changed = true;
        const mm = mk("tile.matmul", [tr(e.args[0], a.aTrans, e), tr(e.args[1], a.bTrans, e)], {}, e);
        return (mm.type as TileType).dtype === (e.type as TileType).dtype ? mm : mk("tile.cast", [mm], { dtype: (e.type as TileType).dtype, mode: "round" }, e);
      }
      case "tile.matmulAcc":
        if (a.aTrans !== true && a.bTrans !== true) return undefined;
        changed = true;
        return mk("tile.matmulAcc", [e.args[0], tr(e.args[1], a.aTrans, e), tr(e.args[2], a.bTrans, e)], {}, e);
      case "tile.matmulBias":
        changed = true;
        return mk("tile.colExpandAdd", [mk("tile.matmul", [e.args[0], e.args[1]], {}, e), e.args[2]], {}, e);
      case "tile.batchMatmul": {
        changed = true;
        const at = exprType(e.args[0]) as TileType, bt = exprType(e.args[1]) as TileType, rt = e.type as TileType;
        const [bs, a1, a2] = at.shape, [, b1, b2] = bt.shape, [, m, n] = rt.shape;
        const off = (i: number) => mkList([mkConst(i, "int64", e.span), mkConst(0, "int64", e.span), mkConst(0, "int64", e.span)], e.span);
        let acc: Expr = mk("tile.create", [], { shape: [...rt.shape], dtype: rt.dtype, mem: rt.mem }, e);
        for (let i = 0; i < bs; i++) {
          // batch i of each operand as it is stored ([M, K] or, with aTrans, [K, M]; likewise b), transposed as asked
          const ai = mk("tile.reshape", [mk("tile.slice", [e.args[0], off(i)], { shape: [1, a1, a2] }, e)], { shape: [a1, a2] }, e);
          const bi = mk("tile.reshape", [mk("tile.slice", [e.args[1], off(i)], { shape: [1, b1, b2] }, e)], { shape: [b1, b2] }, e);
          const mi = mk("tile.reshape", [mk("tile.matmul", [tr(ai, a.aTrans, e), tr(bi, a.bTrans, e)], {}, e)], { shape: [1, m, n] }, e);
          acc = mk("tile.assemble", [acc, mi, off(i)], {}, e);
        }
        return acc;
      }
    }
    return undefined;
  });
  return changed ? Object.freeze({ ...f, body: Object.freeze(body) }) : f;
}
