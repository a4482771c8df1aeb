// The TypeScript compiler API, loaded on first use. Importing tspto must not load the
// compiler (~0.4 s): only parsing a kernel needs it, and a kernel found in the disk cache is
// never parsed. `ts` behaves like `import ts from "typescript"` (the CommonJS module object):
// its properties are read from the module, which is required (from tspto's own dependencies)
// the first time one is read. The namespace below gives the type names the front end uses.
import type * as TS from "typescript";
import { packageRequire } from "../ir/package_root.js";

let loaded: typeof TS | undefined;
let loader: (() => typeof TS | null) | undefined;

/**
 * Installs how the compiler is loaded (the layer above, which owns the private cache
 * directories, loads it from a V8 code cache: src/front_memo.ts); `null` from the loader means
 * "require it as usual".
 */
export function setTypescriptLoader(f: () => typeof TS | null): void {
  loader = f;
}

/** The TypeScript module, required now if it was not yet. */
function typescript(): typeof TS {
  if (loaded) return loaded;
  let m: typeof TS | null = null;
  try { m = loader?.() ?? null; } catch { m = null; } // a cache that cannot be used costs only the usual load
  return (loaded = m ?? (packageRequire()("typescript") as typeof TS));
}

/** Whether the compiler has been loaded in this process (tests and the benchmark check that a cache hit does not). */
export function typescriptLoaded(): boolean {
  return loaded !== undefined;
}

export const ts: typeof TS = new Proxy({} as typeof TS, {
  get: (_target, key) => (typescript() as unknown as Record<string | symbol, unknown>)[key],
  has: (_target, key) => key in typescript(),
});

// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace ts {
  export type SyntaxKind = TS.SyntaxKind;
  export type Node = TS.Node;
  export type CallExpression = TS.CallExpression;
  export type Expression = TS.Expression;
  export type TypeNode = TS.TypeNode;
  export type Identifier = TS.Identifier;
  export type NodeFlags = TS.NodeFlags;
  export type MethodDeclaration = TS.MethodDeclaration;
  export type Statement = TS.Statement;
  export type ExportDeclaration = TS.ExportDeclaration;
  export type StringLiteral = TS.StringLiteral;
  export type VariableDeclaration = TS.VariableDeclaration;
  export type ParameterDeclaration = TS.ParameterDeclaration;
  export type FunctionExpression = TS.FunctionExpression;
  export type ArrowFunction = TS.ArrowFunction;
  export type SourceFile = TS.SourceFile;
  export type FunctionDeclaration = TS.FunctionDeclaration;
  export type WhileStatement = TS.WhileStatement;
  export type VariableStatement = TS.VariableStatement;
  export type ShorthandPropertyAssignment = TS.ShorthandPropertyAssignment;
  export type ScriptTarget = TS.ScriptTarget;
  export type ScriptKind = TS.ScriptKind;
  export type ReturnStatement = TS.ReturnStatement;
  export type PrefixUnaryExpression = TS.PrefixUnaryExpression;
  export type NumericLiteral = TS.NumericLiteral;
  export type NamespaceImport = TS.NamespaceImport;
  export type ImportSpecifier = TS.ImportSpecifier;
  export type IfStatement = TS.IfStatement;
  export type ForOfStatement = TS.ForOfStatement;
  export type ExpressionStatement = TS.ExpressionStatement;
  export type EntityName = TS.EntityName;
  export type Decorator = TS.Decorator;
  export type ClassDeclaration = TS.ClassDeclaration;
  export type BindingName = TS.BindingName;
  export type BinaryExpression = TS.BinaryExpression;
  export type ArrayBindingPattern = TS.ArrayBindingPattern;
}
