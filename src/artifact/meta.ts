// compiled_meta.json: what the runtime knows about a built program (it never reads IR). The
// schema is the same for every target: the platform names the target that built it, and a
// target that builds a loadable binary records it in `library` with its sha256.
import { DTYPES, TsptoError, dimSymbolsOf, nonFiniteReplacer, numberFromJSON } from "../ir/index.js";
import type { DType } from "../ir/index.js";
import { META_FILE } from "./layout.js";

export const META_SCHEMA = "tspto-compiled-program";
export const META_SCHEMA_VERSION = 1;
export { META_FILE };

export interface CompiledParam {
  name: string;
  kind: "tensor" | "scalar";
  direction: "in" | "out" | "inout";
  /** Tensors only. Static extents; -1 marks a dynamic dimension (targets that support them). */
  shape?: number[];
  /**
   * Tensors with dynamic dimensions only: per axis the dimension's name where shape holds -1
   * (null elsewhere). The launch passes each name's extent after the parameters, in order of
   * first appearance (dimSymbolsOf).
   */
  dimNames?: (string | null)[];
  dtype: DType;
  /** Scalars specialized at compile time: the value the program was compiled for. */
  value?: number | boolean;
}

/** The dynamic dimensions of a program's parameters, in the order their extents follow the parameters at launch. */
export const dimSlotNames = (params: readonly CompiledParam[]): string[] =>
  dimSymbolsOf(params.map((p) => p.dimNames && p.dimNames.map((d, k) => d ?? p.shape![k])));

export interface CompiledKernel { name: string; symbol: string; scratchBytes: number }

export interface CompiledMeta {
  schema: "tspto-compiled-program";
  schemaVersion: 1;
  /** Program name. */
  name: string;
  /** Entry (orchestration) function name. */
  entry: string;
  /** The target that built it (a registered platform name). */
  platform: string;
  /** What the target generated ("cpp", "cuda", "interp"). */
  backendType: string;
  /** The runtime that executes it ("tspto-cpu-sim", ...). */
  runtimeName: string;
  params: CompiledParam[];
  /** Indices of the out / inout params. */
  outputIndices: number[];
  /** Param indices the entry returns (in order). */
  returns: number[];
  hasReturn: boolean;
  /** Per-core scratch bytes the program needs (max over kernels). */
  scratchBytes: number;
  kernels: CompiledKernel[];
  /** The loadable binary, relative to the artifact dir; null when the target loads program.json. */
  library: string | null;
  /** sha256 (hex) of the library; null without one. */
  libraryHash: string | null;
  /** tspto package version that built it. */
  tspto: string;
  /** ISO 8601 time of the build. */
  createdAt: string;
}

// ------------------------------------------------------------------ validation
/** An artifact directory that cannot be used as it is (missing, malformed, modified). */
export class TsptoArtifactError extends TsptoError {
  /**
   * `code`: E_ARTIFACT (incomplete or corrupt), E_ARTIFACT_FILE (a file tspto refuses to read:
   * not a regular file inside the directory, too large, a bad name) or E_UNSAFE_PATH (a file
   * or directory that another user could have written, refused before it is used).
   */
  constructor(detail: string, hint = "compile the program again (ir.compile or a jit call); an artifact directory is written only by tspto", code = "E_ARTIFACT") {
    super(code, detail, undefined, hint);
  }
}
class MetaError extends TsptoArtifactError {
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
  }
}

const show = (v: unknown): string => {
  if (v === undefined) return "undefined";
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

/** compiled_meta.json's text: a specialized scalar's NaN, ±Infinity or -0 survives (as {"$num": ...}). */
export function metaText(meta: CompiledMeta): string {
  return `${JSON.stringify(meta, nonFiniteReplacer, 2)}\n`;
}

/**
 * Parse and check compiled_meta.json (text or an already parsed value). Throws an Error
 * naming `file` and the exact problem.
 */
export function validateMeta(json: unknown, file: string): CompiledMeta {
  let v = json;
  if (typeof json === "string") {
    try {
      v = JSON.parse(json);
    } catch (e) {
      throw new MetaError(file, `not valid JSON (${(e as Error).message})`);
    }
  }
  const fail = (field: string, rule: string, got: unknown): never => {
    throw new MetaError(file, `field '${field}' ${rule}, got ${show(got)}`);
  };
  const isObj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);
  if (!isObj(v)) throw new MetaError(file, `expected a JSON object, got ${show(v)}`);
  const o = v;
  if (o.schema !== META_SCHEMA) {
    if (!("schema" in o)) throw new MetaError(file, `missing field 'schema' (expected "${META_SCHEMA}"); not a tspto artifact`);
    fail("schema", `must be "${META_SCHEMA}"`, o.schema);
  }
  if (o.schemaVersion !== META_SCHEMA_VERSION) fail("schemaVersion", `must be ${META_SCHEMA_VERSION} (this tspto reads schema version ${META_SCHEMA_VERSION}; rebuild the artifact)`, o.schemaVersion);
  const known = ["schema", "schemaVersion", "name", "entry", "platform", "backendType", "runtimeName", "params", "outputIndices", "returns",
    "hasReturn", "scratchBytes", "kernels", "library", "libraryHash", "tspto", "createdAt"];
  for (const k of known) if (!(k in o)) throw new MetaError(file, `missing field '${k}'`);
  for (const k of Object.keys(o)) if (!known.includes(k)) throw new MetaError(file, `unknown field '${k}'`);

  const str = (field: string, x: unknown, nonEmpty = true): string => {
    if (typeof x !== "string" || (nonEmpty && x.length === 0)) fail(field, nonEmpty ? "must be a non-empty string" : "must be a string", x);
    return x as string;
  };
  const oneOf = <T extends string>(field: string, x: unknown, allowed: readonly T[]): T => {
    if (typeof x !== "string" || !(allowed as readonly string[]).includes(x)) fail(field, `must be one of ${allowed.join(", ")}`, x);
    return x as T;
  };
  const int = (field: string, x: unknown, min: number): number => {
    if (typeof x !== "number" || !Number.isInteger(x) || x < min) fail(field, `must be an integer >= ${min}`, x);
    return x as number;
  };
  const arr = (field: string, x: unknown): unknown[] => {
    if (!Array.isArray(x)) fail(field, "must be an array", x);
    return x as unknown[];
  };
  const bool = (field: string, x: unknown): boolean => {
    if (typeof x !== "boolean") fail(field, "must be a boolean", x);
    return x as boolean;
  };

  const name = str("name", o.name);
  const entry = str("entry", o.entry);
  const platform = str("platform", o.platform);
  if (!/^[a-z][a-z0-9_-]*$/.test(platform)) fail("platform", "must be a platform name (lowercase letters, digits, _ and -)", platform);
  const backendType = str("backendType", o.backendType);
  const runtimeName = str("runtimeName", o.runtimeName);

  const params: CompiledParam[] = arr("params", o.params).map((p, i) => {
    const f = `params[${i}]`;
    if (!isObj(p)) return fail(f, "must be an object", p);
    for (const k of Object.keys(p)) if (!["name", "kind", "direction", "shape", "dimNames", "dtype", "value"].includes(k)) throw new MetaError(file, `unknown field '${f}.${k}'`);
    for (const k of ["name", "kind", "direction", "dtype"]) if (!(k in p)) throw new MetaError(file, `missing field '${f}.${k}'`);
    const kind = oneOf(`${f}.kind`, p.kind, ["tensor", "scalar"] as const);
    const out: CompiledParam = {
      name: str(`${f}.name`, p.name),
      kind,
      direction: oneOf(`${f}.direction`, p.direction, ["in", "out", "inout"] as const),
      dtype: oneOf(`${f}.dtype`, p.dtype, DTYPES),
    };
    if (kind === "tensor") {
      if (!("shape" in p)) throw new MetaError(file, `missing field '${f}.shape' (required for tensors)`);
      out.shape = arr(`${f}.shape`, p.shape).map((d, k) => {
        if (d === -1) return -1;
        return int(`${f}.shape[${k}]`, d, 1);
      });
      const dynamic = out.shape.some((d) => d === -1);
      if ("dimNames" in p || dynamic) {
        if (!dynamic) fail(`${f}.dimNames`, "must be absent for a tensor without dynamic dimensions", p.dimNames);
        const names = arr(`${f}.dimNames`, p.dimNames);
        if (names.length !== out.shape.length) fail(`${f}.dimNames`, `must have one entry per axis (${out.shape.length})`, p.dimNames);
        out.dimNames = names.map((n, k) => {
          if (out.shape![k] === -1) {
            if (typeof n !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) fail(`${f}.dimNames[${k}]`, "must name the dynamic dimension (an identifier)", n);
            return n as string;
          }
          if (n !== null) fail(`${f}.dimNames[${k}]`, "must be null for a static dimension", n);
          return null;
        });
      }
    } else {
      if ("shape" in p) fail(`${f}.shape`, "must be absent for a scalar parameter", p.shape);
      if ("dimNames" in p) fail(`${f}.dimNames`, "must be absent for a scalar parameter", p.dimNames);
      if ("value" in p) {
        // NaN, ±Infinity and -0 are written as { "$num": "NaN" } etc. (metaText)
        const value = typeof p.value === "boolean" ? p.value : numberFromJSON(p.value);
        if (value === undefined) fail(`${f}.value`, "must be a number (NaN, Infinity, -Infinity and -0 as {\"$num\": \"NaN\"} etc.) or a boolean", p.value);
        out.value = value;
      }
    }
    if (kind === "tensor" && "value" in p) fail(`${f}.value`, "must be absent for a tensor parameter", p.value);
    return out;
  });
  const index = (field: string, x: unknown): number => {
    const i = int(field, x, 0);
    if (i >= params.length) fail(field, `must be a parameter index (< ${params.length})`, x);
    return i;
  };
  const outputIndices = arr("outputIndices", o.outputIndices).map((x, k) => {
    const i = index(`outputIndices[${k}]`, x);
    if (params[i].direction === "in") fail(`outputIndices[${k}]`, `must name an out/inout parameter ('${params[i].name}' is "in")`, x);
    return i;
  });
  const wantOut = params.flatMap((p, i) => (p.direction === "in" ? [] : [i]));
  if (outputIndices.length !== wantOut.length || outputIndices.some((x, k) => x !== wantOut[k])) {
    fail("outputIndices", `must list every out/inout parameter in order (${JSON.stringify(wantOut)})`, outputIndices);
  }
  const returns = arr("returns", o.returns).map((x, k) => {
    const i = index(`returns[${k}]`, x);
    if (params[i].kind !== "tensor") fail(`returns[${k}]`, `must name a tensor parameter ('${params[i].name}' is a scalar)`, x);
    return i;
  });
  const hasReturn = bool("hasReturn", o.hasReturn);
  if (!hasReturn && returns.length) fail("hasReturn", "must be true when 'returns' is not empty", hasReturn);
  const scratchBytes = int("scratchBytes", o.scratchBytes, 0);
  const kernels: CompiledKernel[] = arr("kernels", o.kernels).map((k, i) => {
    const f = `kernels[${i}]`;
    if (!isObj(k)) return fail(f, "must be an object", k);
    for (const key of Object.keys(k)) if (!["name", "symbol", "scratchBytes"].includes(key)) throw new MetaError(file, `unknown field '${f}.${key}'`);
    for (const key of ["name", "symbol", "scratchBytes"]) if (!(key in k)) throw new MetaError(file, `missing field '${f}.${key}'`);
    const symbol = str(`${f}.symbol`, k.symbol);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(symbol)) fail(`${f}.symbol`, "must be a C identifier", symbol);
    return { name: str(`${f}.name`, k.name), symbol, scratchBytes: int(`${f}.scratchBytes`, k.scratchBytes, 0) };
  });
  const maxScratch = kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0);
  if (scratchBytes < maxScratch) fail("scratchBytes", `must be at least the largest kernel's scratchBytes (${maxScratch})`, scratchBytes);
  let library: string | null = null;
  let libraryHash: string | null = null;
  if (o.library !== null) {
    library = str("library", o.library);
    if (library.startsWith("/") || library.split("/").some((part) => part === ".." || part === "")) {
      fail("library", "must be a relative path inside the artifact directory (or null)", library);
    }
    if (typeof o.libraryHash !== "string" || !/^[0-9a-f]{64}$/.test(o.libraryHash)) fail("libraryHash", "must be a sha256 hex digest (64 lowercase hex digits) when 'library' is set", o.libraryHash);
    libraryHash = o.libraryHash as string;
  } else if (o.libraryHash !== null) {
    fail("libraryHash", "must be null when 'library' is null", o.libraryHash);
  }
  const tspto = str("tspto", o.tspto);
  const createdAt = str("createdAt", o.createdAt);
  if (Number.isNaN(Date.parse(createdAt))) fail("createdAt", "must be an ISO 8601 date", createdAt);
  return {
    schema: META_SCHEMA, schemaVersion: META_SCHEMA_VERSION, name, entry, platform, backendType, runtimeName, params, outputIndices,
    returns, hasReturn, scratchBytes, kernels, library, libraryHash, tspto, createdAt,
  };
}
