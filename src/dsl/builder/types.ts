// The builder's shared vocabulary: what a caller passes in (BuildEnv, ParamSpec, BuildOptions),
// the builder's bookkeeping records (Local, Frame, Flow), operator tables and "did you mean" hints.
import { ts } from "../typescript.js";
import type { Attrs, Const, Direction, Expr, FunctionKind, Span, Var } from "../../ir/nodes.js";
import type { Type } from "../../ir/types.js";
import type { ConstVal, FreeBinding } from "../resolve.js";
import type { SourceText } from "../source.js";

export type KernelRef = Extract<NonNullable<FreeBinding>, { kind: "kernel" }>;

/** What the caller of a sub-kernel needs: its IR name, parameter directions and return types. */
export interface CalleeInfo {
  readonly name: string;
  readonly dirs: readonly Direction[];
  readonly returnTypes: readonly Type[];
}

export interface BuildEnv {
  /** "kernel": user kernels (constant folding, ints from float consts, definite assignment); "text": printed IR, verbatim. */
  readonly mode: "kernel" | "text";
  readonly src: SourceText;
  /** The kernel's name, for messages. */
  readonly kernelName: string;
  readonly fnKind: FunctionKind;
  resolveFree(name: string, at: ts.Node): FreeBinding;
  /** A call of a sub-kernel with these arguments (kernel mode: specializes it on their types). */
  callee(ref: KernelRef, args: readonly Expr[], call: ts.CallExpression, span: Span): CalleeInfo;
}

export interface ParamSpec {
  readonly name: string;
  readonly node: ts.Node;
  readonly type: Type;
  /** null: infer from the body (tensors without pl.Out / pl.InOut). */
  readonly dir: Direction | null;
  /** A specialized scalar: uses of the parameter fold to this constant. */
  readonly folded?: Const;
}

export interface BuildOptions {
  /** Declared return types (IR text); inferred from `return` statements when absent. */
  readonly returnTypes?: readonly Type[];
  readonly attrs?: Attrs;
}

/** Statement helpers of `pl` (not registry ops). */
export const PL_STATEMENTS = ["at", "range", "forRange", "whileLoop", "ifElse", "yield", "break", "continue", "const", "withAttrs", "jit"];

export interface Local {
  readonly name: string;
  /** Undefined until first assigned (`let x;`). */
  var?: Var;
  readonly folded?: Const;
  readonly mutable: boolean;
  readonly role: "param" | "local" | "loop" | "iter";
  /** A `const` local bound to a constant (usable where constants are required). */
  readonly constVal?: ConstVal;
  /** Declared type of `let x: T;`. */
  readonly declared?: Type;
  /** A `const` local bound to a list (`const offs = [0, i]`): spliced where an op expects a list. */
  readonly list?: Expr;
}

/** The arrow/function body being built: what `return`, `pl.yield`, `break` mean inside it. */
export interface Frame {
  readonly kind: "function" | "at" | "forRange" | "whileLoop" | "ifElse";
  loopDepth: number;
}

export type Flow = Set<Local> | null; // definitely-assigned tracked locals; null = unreachable (everything)

// Built on first use: the compiler (ts.SyntaxKind) is loaded only when a kernel is parsed.
let arithAssignTable: Partial<Record<ts.SyntaxKind, string>> | undefined;
export const arithAssign = (): Partial<Record<ts.SyntaxKind, string>> => (arithAssignTable ??= {
  [ts.SyntaxKind.PlusEqualsToken]: "+", [ts.SyntaxKind.MinusEqualsToken]: "-", [ts.SyntaxKind.AsteriskEqualsToken]: "*",
  [ts.SyntaxKind.SlashEqualsToken]: "/", [ts.SyntaxKind.PercentEqualsToken]: "%",
});
let binaryOpsTable: Partial<Record<ts.SyntaxKind, string>> | undefined;
export const binaryOps = (): Partial<Record<ts.SyntaxKind, string>> => (binaryOpsTable ??= {
  [ts.SyntaxKind.PlusToken]: "+", [ts.SyntaxKind.MinusToken]: "-", [ts.SyntaxKind.AsteriskToken]: "*", [ts.SyntaxKind.SlashToken]: "/",
  [ts.SyntaxKind.PercentToken]: "%", [ts.SyntaxKind.LessThanToken]: "<", [ts.SyntaxKind.LessThanEqualsToken]: "<=",
  [ts.SyntaxKind.GreaterThanToken]: ">", [ts.SyntaxKind.GreaterThanEqualsToken]: ">=", [ts.SyntaxKind.EqualsEqualsEqualsToken]: "===",
  [ts.SyntaxKind.ExclamationEqualsEqualsToken]: "!==", [ts.SyntaxKind.EqualsEqualsToken]: "===", [ts.SyntaxKind.ExclamationEqualsToken]: "!==",
  [ts.SyntaxKind.AmpersandAmpersandToken]: "&&", [ts.SyntaxKind.BarBarToken]: "||",
});

/** Edit distance, for "did you mean" hints. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

/** The closest names to `name` (at most 3). */
export function closest(name: string, names: readonly string[]): string[] {
  return [...new Set(names)]
    .map((n) => ({ n, d: editDistance(name, n) - (n.toLowerCase().includes(name.toLowerCase()) || name.toLowerCase().includes(n.toLowerCase()) ? 2 : 0) }))
    .sort((a, b) => a.d - b.d || a.n.localeCompare(b.n))
    .slice(0, 3)
    .map((x) => x.n);
}
