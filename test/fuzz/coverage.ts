// Which registry ops the differential fuzzer (differential.ts) generates. Keyed by the op's
// `pl` name (one entry covers its tile and tensor forms) or, for ops without one (the scalar
// ops kernels write as TypeScript operators and Math functions), its registry name.
//
// test/fuzz/coverage.test.ts fails when an op of the registry is in neither table below, when
// a table names an op the registry does not have, and when a FUZZED op never appears in the
// generated cases. Adding an op: write its generator in a case kind of differential.ts (the
// kind records the op in its `ops`), then list the op here with that kind.

/** Op -> the case kinds of differential.ts that generate it. */
export const FUZZED: Readonly<Record<string, readonly string[]>> = {
  // data movement and constants
  load: ["tile", "reduction", "broadcast", "shape", "loop", "scalar", "matmul", "dynLoop"],
  store: ["tile", "reduction", "broadcast", "shape", "loop", "scalar", "matmul", "dynLoop"],
  assign: ["elementwise", "rowReductionExpr", "matmulEpilogue", "matmul", "twoStage", "shape", "broadcast"],
  move: ["tile", "dynLoop"],
  createTile: ["tile", "reduction"],
  createTensor: ["twoStage"],
  full: ["elementwise", "tile", "twoStage"],
  expands: ["elementwise", "tile", "twoStage"],
  read: ["tile", "scalar"],
  dim: ["scalar", "dynLoop", "dynSlice"],
  fillpad: ["tile", "reduction"],
  // elementwise
  add: ["elementwise", "tile", "loop", "scalar"], sub: ["elementwise", "tile", "loop"], mul: ["elementwise", "tile", "loop"],
  div: ["elementwise", "tile"], maximum: ["elementwise", "tile"], minimum: ["elementwise", "tile"],
  fmod: ["elementwise", "tile"], rem: ["elementwise", "tile"], pow: ["elementwise", "tile"],
  bitAnd: ["elementwise", "tile"], bitOr: ["elementwise", "tile"], bitXor: ["elementwise", "tile"], bitNot: ["elementwise", "tile"],
  shl: ["elementwise", "tile"], shr: ["elementwise", "tile"],
  neg: ["elementwise", "tile"], abs: ["elementwise", "tile"], relu: ["elementwise", "tile"],
  exp: ["elementwise", "tile"], log: ["elementwise", "tile"], sqrt: ["elementwise", "tile"], rsqrt: ["elementwise", "tile"], recip: ["elementwise", "tile"],
  sin: ["elementwise", "tile"], cos: ["elementwise", "tile"], tanh: ["elementwise", "tile"], sigmoid: ["elementwise", "tile"], erf: ["elementwise", "tile"],
  lrelu: ["elementwise", "tile"], cast: ["elementwise", "tile"], cmp: ["elementwise", "tile", "iota"], sel: ["elementwise", "tile", "iota"],
  // reductions
  rowSum: ["reduction", "rowReductionExpr"], rowMax: ["reduction", "rowReductionExpr"], rowMin: ["reduction", "rowReductionExpr"], rowProd: ["reduction"],
  colSum: ["reduction", "rowReductionExpr"], colMax: ["reduction", "rowReductionExpr"], colMin: ["reduction", "rowReductionExpr"], colProd: ["reduction"],
  rowArgmax: ["reduction"], rowArgmin: ["reduction"], colArgmax: ["reduction"], colArgmin: ["reduction"],
  // broadcasts
  rowExpand: ["broadcast"], rowExpandAdd: ["broadcast", "rowReductionExpr"], rowExpandSub: ["broadcast", "rowReductionExpr"], rowExpandMul: ["broadcast", "rowReductionExpr"],
  rowExpandDiv: ["broadcast"], rowExpandMax: ["broadcast"], rowExpandMin: ["broadcast"], rowExpandExpdif: ["broadcast"],
  colExpand: ["broadcast"], colExpandAdd: ["broadcast", "rowReductionExpr"], colExpandSub: ["broadcast", "rowReductionExpr"], colExpandMul: ["broadcast", "rowReductionExpr"],
  colExpandDiv: ["broadcast"], colExpandMax: ["broadcast"], colExpandMin: ["broadcast"], colExpandExpdif: ["broadcast"],
  prelu: ["broadcast"],
  // shape
  transpose: ["shape"], slice: ["shape", "dynSlice"], concat: ["shape"], assemble: ["shape"], reshape: ["shape"], broadcastTo: ["shape"],
  // indexing
  gather: ["gather"], gatherLoad: ["gather"], iota: ["iota"], checkWindow: ["dynSlice"],
  // matmul
  matmul: ["matmul", "matmulEpilogue"], matmulAcc: ["matmul"], matmulBias: ["matmul"], batchMatmul: ["matmul"], matmulQuant: ["matmulQuant"],
  // scalar ops (TypeScript operators and Math functions in kernels)
  "scalar.add": ["scalar"], "scalar.sub": ["scalar", "dynLoop"], "scalar.mul": ["scalar"], "scalar.div": ["scalar"], "scalar.mod": ["scalar"],
  "scalar.lt": ["scalar"], "scalar.le": ["scalar"], "scalar.gt": ["scalar"], "scalar.ge": ["scalar"], "scalar.eq": ["scalar"], "scalar.ne": ["scalar"],
  "scalar.and": ["scalar"], "scalar.or": ["scalar"], "scalar.not": ["scalar"], "scalar.neg": ["scalar"],
  "scalar.min": ["scalar", "dynLoop"], "scalar.max": ["scalar"], "scalar.floor": ["scalar"], "scalar.ceil": ["scalar"], "scalar.trunc": ["scalar"],
};

/** Registry ops the fuzzer does not write, each with the reason. */
export const NOT_FUZZED: Readonly<Record<string, string>> = {
  rowSumKeep: "not written by users: the FuseRowReductions pass makes it from a rowSum whose operand is kept (rowReductionExpr and tile cases reach that pass)",
};
