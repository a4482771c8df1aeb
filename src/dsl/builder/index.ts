// Builds one IR function from a kernel's TypeScript AST. Shared by the kernel parser
// (parser.ts: kernels specialized on argument types, with constant folding) and the IR text
// parser (text.ts: printed programs, read back verbatim).
//
// The output is pre-SSA: `let x = ...; x = ...` inside loops and branches assigns the SAME
// Var (a later pass builds SSA with iterArgs/yields). The SSA text forms (`pl.forRange`,
// `pl.whileLoop`, `pl.ifElse`, `pl.yield`, `pl.break(v)`, `pl.continue(v)`) map to the
// corresponding IR nodes with iterArgs and results.
//
// The builder is one class, FunctionBuilder, layered over these files (each layer extends the one before;
// calls back up go through abstract methods):
//   types.ts        BuildEnv/ParamSpec/BuildOptions, Local/Frame/Flow, operator tables, closest()
//   base.ts         errors and spans, direction inference, scopes/locals/frames/flow, pl/Math recognition, constants
//   expressions.ts  expressions: literals, locals, operators (constant folding), Math.*, sub-kernel calls
//   ops.ts          pl.* op calls: arguments by parameter kind, pl.const, pl.withAttrs, placement, effects
//   statements.ts   declarations, annotations, destructuring, assignments
//   function.ts     FunctionBuilder: build() and control flow (if/for/while/return, pl.at, pl.forRange/whileLoop/ifElse)
export { FunctionBuilder } from "./function.js";
export { closest, PL_STATEMENTS, type BuildEnv, type BuildOptions, type CalleeInfo, type KernelRef, type ParamSpec } from "./types.js";
