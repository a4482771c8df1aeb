// tile.matmulQuant (src/ir/ops/quant.ts) on the SIMT targets (cuda, webgpu): not lowered yet.
// The op is refused at code generation with E_PLATFORM naming the platform and the user's call
// site (file:line:col), so a program that uses it fails before anything runs; run it on cpu or
// interp.
import { TsptoCompileError } from "../../ir/index.js";
import { SIMT_OPS } from "./ops.js";

SIMT_OPS.set("tile.matmulQuant", {
  kind: "tile-stmt",
  emitInto(ctx, call) {
    throw new TsptoCompileError("E_PLATFORM", `pl.matmulQuant (weight-only quantized matmul) is not supported on the ${ctx.lang.platform} platform yet`, call.span,
      "run this program on the cpu (or interp) platform, or dequantize the weight on the host (tspto.dequantize) and use pl.matmul");
  },
});
