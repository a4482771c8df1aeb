// What a SIMT language renders: the interface between the shared lowering of tiles onto
// blocks / workgroups and threads (./kernel.ts, ./ops.ts) and one language (CUDA C++:
// ../cuda/lang.ts; WGSL: ../wgsl/lang.ts). The lowering decides *what* runs where -- which
// thread computes which element, where tiles live, when the block synchronizes, how a row is
// reduced -- and asks the language only how to spell it: types, declarations, loops, element
// accesses, barriers, the kernel frame. Capabilities (128-bit vectors, warp shuffles, tensor
// cores) are flags the lowering reads to pick an algorithm, never a language name.
import type { Call, DType, Expr, Func, Span, TensorType, TileType, Var } from "../../ir/index.js";
import type { CExpr, ElementwiseEmitter, ScalarEmitter, ScalarCType, TensorRef } from "../cpp/emitters/index.js";
import type { WalkSyntax } from "../cpp/walk.js";

/** An array of elements in memory (a tile in scratch, a tensor window): how one element is read and written. */
export interface ElemArray {
  /** The local naming it (a pointer in CUDA, a base element index in WGSL). */
  readonly name: string;
  /** Element type as the language names it (vector paths read it). */
  readonly ctype: string;
  /** Element i, as stored (a tensor's storage conversion is the language's loadConv). */
  at(i: string): string;
  /** The statement writing v to element i. */
  set(i: string, v: string): string;
  /** "global": known to be device memory (a tensor window), so a language may use global-only accesses. */
  readonly space?: "global";
}

/** Where an op writes a tile: the language's location expression (./lang: scratchAt, a temporary) and the tile's type. */
export interface TileDest { readonly ptr: string; readonly type: TileType }

/** A run-time window check's static facts (the host formats the message from them). */
export interface FailSite { where: string; what: string; kind: string; name: string; shape: number[]; dims: number[] }

/** The operands of a (fused) elementwise expression, declared in the current block. */
export interface ElemPlan {
  /** Element arrays the expression reads at the same linear index (planned tiles or tensor windows). */
  readonly leaves: readonly { ptr: string; ctype: string; arr: ElemArray }[];
  /** The element at a linear index (scratch type of the expression's dtype). */
  at(idx: string): string;
  /** The element with each leaf k read as `leaf(k)`. */
  withLeaves(leaf: (k: number) => string): string;
}

/** A tile matmul's parts as the lowering prepared them: a [m, k] x [k, n] (+ accumulator) into o. */
export interface MatmulParts {
  readonly at: TileType;
  /** k: the valid K summed over; k0: a's row stride (its tile's K). */
  readonly m: number; readonly k: number; readonly k0: number; readonly n: number;
  readonly ea: ElemPlan; readonly eb: ElemPlan; readonly ec: ElemPlan | null;
  readonly o: ElemArray;
}

/** One output of an elementwise loop: where it goes, and the value written from the element. */
export interface LoopOut { readonly arr: ElemArray; readonly value: (elem: string) => string }

/** What the lowering's op formulas use from the kernel generator (./kernel.ts). */
export interface SimtCtx {
  readonly lang: SimtLang;
  line(s: string): void;
  open(s: string): void;
  close(s?: string): void;
  /** Shift the indentation by k levels. */
  ind(k: number): void;
  fresh(prefix: string): string;
  scalar(e: Expr): CExpr;
  tensor(e: Expr): TensorRef;
  elements(e: Expr): ElemPlan;
  /** Register a failure site; returns its id. */
  site(s: FailSite): number;
  /** A block-wide barrier. */
  sync(): void;
  readonly failExit: string;
}

export interface SimtTileStmt { readonly kind: "tile-stmt"; emitInto(ctx: SimtCtx, call: Call, dest: TileDest): void }
export interface SimtTensorStmt { readonly kind: "tensor-stmt"; readonly resultArg: number; emit(ctx: SimtCtx, call: Call): void }
export interface SimtScalarStmt { readonly kind: "scalar-stmt"; emit(ctx: SimtCtx, call: Call): CExpr }
/** An op with several tile results: the generator computes them as a sequence of single-tile values (each then a barrier). */
export interface SimtTileMulti { readonly kind: "tile-multi"; steps(call: Call, targets: readonly Var[]): { target: number; value: Expr }[] }
export type SimtEmitter = ElementwiseEmitter | ScalarEmitter | SimtTileStmt | SimtTensorStmt | SimtScalarStmt | SimtTileMulti;

/** The kernel generator as the language's frame hooks see it. */
export interface SimtKernel extends SimtCtx {
  readonly func: Func;
  readonly symbol: string;
  /** Tile scratch bytes per block (planned tiles). */
  readonly scratchBytes: number;
  /** Tiles in device memory (scratch above the language's shared limit). */
  readonly global: boolean;
  /** Raw output lines (no indentation). */
  push(s: string): void;
  declareParamsFrom(slot: (i: number, tensor: boolean) => string, tensorDecl: (name: string, t: TensorType, raw: string) => string): void;
}

export interface SimtLang {
  /** The platform name in messages (E_DYNAMIC and the like). */
  readonly platform: string;
  readonly syntax: WalkSyntax;
  /** Threads per block / invocations per workgroup. */
  readonly threads: number;
  /** Largest tile scratch held in block-shared memory; above it tiles live in device memory. */
  readonly sharedLimit: number;
  /** 128-bit vector loads and stores where every operand is 16-byte aligned. */
  readonly vec4: boolean;
  /** Warp shuffles combine a row's partial results (else a butterfly through shared memory, barriers in uniform control flow). */
  readonly warpShuffle: boolean;
  /**
   * Row reductions of fewer rows than the block has groups of 32 split each row over several
   * groups (warp shuffles, then the groups' partials through a small shared array: sharedArray).
   */
  readonly splitRows?: boolean;
  /** The value of an if result's tensor local before a branch assigns it. */
  readonly nullTensor: string;
  /** The op's formula in this language (shared tile-op lowering, or the language's elementwise / scalar formulas). */
  emitterFor(op: string, span: Span): SimtEmitter;
  /** Bytes one tile element of dtype d takes in scratch (PlanMemory planned with the same: DeviceDescription.minTileElemBytes). */
  tileElemBytes(d: DType): number;

  // ---------------------------------------------------------------- types
  /** A tile element in scratch. */
  scratchType(d: DType): string;
  /** A tensor element in device memory. */
  storageType(d: DType): string;
  /** Index arithmetic. */
  readonly idx: string;
  /** fp32. */
  readonly f32: string;
  /** The widest float (CUDA: double; WGSL has none: f32). */
  readonly wideFloat: string;
  /** Integer accumulators of reductions. */
  readonly accInt: string;
  /** 32-bit signed integers (arg-reduction indices). */
  readonly i32: string;
  /** A tensor local (a pointer, or a base element index). */
  tensorLocalType(d: DType): string;
  /** Tensor storage element -> scratch element; scratch element -> storage. */
  loadConv(d: DType, x: string): string;
  storeConv(d: DType, x: string): string;
  /** Round an fp32 value to a float dtype's value set. */
  roundF(d: DType, x: string): string;
  /** A widest-float value rounded once to dtype d (fp32 scratch value). */
  roundWide(d: DType, x: string): string;

  // ---------------------------------------------------------------- expressions
  cast(type: string, x: string): string;
  /** `c ? a : b` (both sides evaluated in WGSL). `c` is already parenthesized as the caller wants it. */
  cond(c: string, a: string, b: string): string;
  fma(a: string, b: string, c: string): string;
  /** Float max / min with the reference's NaN and signed-zero rules. */
  fminmax(kind: "max" | "min", a: string, b: string): string;
  /** An fp32 literal. */
  f32Lit(v: number): string;
  /** An index / integer literal. */
  int(v: number): string;
  /** The identity of a float max (-inf) / min (+inf) reduction, and of an integer one. */
  floatExtreme(kind: "max" | "min"): string;
  intExtreme(kind: "max" | "min"): string;
  /** `p + q` of integer sum accumulators for a dtype-d row (saturating where the accumulator could overflow). */
  sumAdd(d: DType, p: string, q: string): string;
  /** NaN tests of an fp32 value (WGSL: on the bits; a WGSL compiler may assume no NaNs in float comparisons). */
  isNan(x: string): string;
  notNan(x: string): string;
  /** A constant already representable in dtype d, as a scratch element. */
  scratchLit(d: DType, v: number): string;
  /** A tensor's element at an element index (storage value; loadConv converts it). */
  tensorElem(t: TensorRef, idx: string): string;

  // ---------------------------------------------------------------- statements
  readonly barrier: string;
  /** The head of a block-parallel loop over i < n (every thread strides by the block size). */
  threadLoop(i: string, n: string): string;
  /** The head of a loop over j in [lo, hi) by the lanes of a warp / group of 32. */
  laneLoop(j: string, lane: string, n: string): string;
  /** The head of a sequential loop over j in [lo, hi) (step 1, or `step`). */
  seqLoop(j: string, lo: string, hi: string, step?: string): string;
  /** The head of a loop of each group of 32 over rows r = group, group + groups, ... < m (warpShuffle languages). */
  groupStrideLoop(r: string, warp: string, m: string): string;
  /** A loop with one statement: `head stmt` (braces where the language needs them). */
  loop1(head: string, stmt: string): string;
  /** A loop with statements in braces on one line. */
  loopBraced(head: string, stmts: string): string;
  /** `if (c) stmt` on one line. */
  if1(c: string, stmt: string): string;
  /** The location of the planned tile at scratch byte address addr. */
  scratchAt(addr: number): string;
  /** Declares a local over a tile's elements (dtype d) at location `at`; `comment` follows the declaration. */
  tilePtr(ctx: SimtCtx, name: string, at: string, d: DType, mutable: boolean, comment?: string): ElemArray;
  /**
   * Declares a local over a tensor's elements from element `offset` (null: from the start).
   * `asScratch`: the elements are read as the scratch type (a forwarded load of a tensor whose
   * storage is its scratch type).
   */
  tensorPtr(ctx: SimtCtx, name: string, t: TensorRef, offset: string | null, mutable: boolean, asScratch?: boolean, comment?: string): ElemArray;
  /** The thread's lane in its group of 32 and the group's index (warp). */
  laneWarp(ctx: SimtCtx, lane: string, warp: string): void;
  /**
   * 128-bit path of an elementwise loop (vec4 languages): opens `if (aligned) { vector loop }
   * else {` and returns true, or returns false and emits nothing.
   */
  vectorOpen?(ctx: SimtCtx, plan: ElemPlan, n: number, outs: readonly LoopOut[]): boolean;
  /** Declares a block-shared array of `count` elements of `type` (splitRows languages). */
  sharedArray?(ctx: SimtCtx, name: string, type: string, count: number): void;
  /** Combine `acc` across the 32 lanes of each group with `op` (warpShuffle languages): one statement line. */
  shuffleCombine?(acc: string, op: (p: string, q: string) => string, sh: string): string;
  /**
   * Combine `acc` across the lanes of each group of 32 through shared memory (languages
   * without warpShuffle): every thread of the block calls it (uniform control flow).
   */
  groupCombine?(ctx: SimtCtx, acc: string, accType: string, lane: string, warp: string, op: (p: string, q: string) => string): void;
  /** A tensor-core matmul (CUDA: fp16 / bf16 operands, multiples of 16): emitted and true, or false (the generic path follows). */
  tensorCoreMatmul?(ctx: SimtCtx, mm: MatmulParts): boolean;
  /** Declares the value of a scalar read from memory (uniform across the block: every thread sees it). */
  readScalar(ctx: SimtCtx, name: string, ct: ScalarCType, code: string): void;
  /** The failure record of a site, written by one thread; then the kernel leaves (failExit). */
  failRecord(ctx: SimtCtx, site: number, offsets: readonly string[]): void;
  /**
   * The failure record of a site written by whichever thread finds it (non-uniform control
   * flow: a gather index outside its table): one statement; the kernel goes on.
   */
  failAny(ctx: SimtCtx, site: number, offsets: readonly string[]): string;

  // ---------------------------------------------------------------- the kernel frame
  /** Everything before the body: the signature, the parameters, the scratch. */
  prologue(k: SimtKernel): void;
  /** Block-parallel copy of `bytes` between non-overlapping tiles. */
  copyTile(ctx: SimtCtx, dst: string, src: string, bytes: number): void;
  /** Declares a temporary tile of `bytes` (no barrier); returns its location. */
  declareTemp(ctx: SimtCtx, bytes: number): string;
  /** Releases one temporary (a statement line), and several at once. */
  freeTemp(tmp: string): string;
  freeTemps(tmps: readonly string[]): string;
}
