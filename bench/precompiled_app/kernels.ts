// The application of the bench's precompiled rows (bench/run.ts, 5g): the quickstart kernel with
// its shapes in the annotation, so `tspto precompile` compiles it ahead of time.
import { pl } from "tspto";

export const addKernel = pl.jit(function addKernel(a: pl.Tensor<[128, 128], pl.FP32>, b: pl.Tensor<[128, 128], pl.FP32>, out: pl.Out<pl.Tensor<[128, 128], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [128, 128]), pl.load(b, [0, 0], [128, 128])), [0, 0], out);
  });
  return out;
});
