// FpContract: the floating-point contraction mode of the compile (PassContext.fpContract)
// becomes an attribute of every float tile.matmul / tile.matmulAcc that does not say its own:
// `fpContract: "fast"` accumulates with fused multiply-add (one rounding per k step). The
// interpreter and the cpu code generator both read the attribute (src/ir/ops/matmul.ts says
// the numerics), so the two platforms agree bit for bit in either mode, and the mode is part
// of the lowered program (hence of every artifact and cache key). "off" leaves the ops as they
// are (separate rounding of product and sum).
import { exprType, isFloat, mapStmtExprs, mkCall } from "../ir/index.js";
import { DEFAULT_FP_CONTRACT, type Pass } from "./manager.js";

export const fpContractPass: Pass = {
  name: "FpContract",
  run(p, ctx) {
    if ((ctx.fpContract ?? DEFAULT_FP_CONTRACT) !== "fast") return p;
    return p.withFunctions(p.functions.map((f) => {
      if (f.fnKind !== "incore") return f;
      let changed = false;
      const body = mapStmtExprs(f.body, (e) => {
        if (e.kind !== "call" || (e.op !== "tile.matmul" && e.op !== "tile.matmulAcc") || e.attrs.fpContract !== undefined) return undefined;
        const a = e.args[e.op === "tile.matmul" ? 0 : 1];
        const t = a ? exprType(a) : undefined;
        if (!t || t.kind !== "tile" || !isFloat(t.dtype)) return undefined;
        changed = true;
        return mkCall(e.op, e.args, { ...e.attrs, fpContract: "fast" }, e.type, e.span);
      });
      return changed ? Object.freeze({ ...f, body: Object.freeze(body) }) : f;
    }));
  },
};
