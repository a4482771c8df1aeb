// The front end's memo: what parsing a kernel told the jit layer before it could look in the
// disk cache — its parameters (paramInfo) and its source hash (sourceHash, which covers its
// sub-kernels and the constants it folds) — kept on disk next to the jit's cache entries
// (<cacheDir>/front/). It sits above the front end (src/dsl) and next to the disk cache
// (src/cache.ts), whose directory it shares. A new process that calls a cached kernel then parses nothing and never
// loads the TypeScript compiler.
//
// An entry is found by what the definition itself says, without parsing: its kind, name,
// call site, `fn.toString()`, attributes and `opts.scope` values, and tspto's version and
// fingerprint. It is used only while every source file the parse read has the text it had
// (sha256) and every sub-kernel it reached is still defined the same way; otherwise the kernel
// is parsed as usual and the entry rewritten.
//
// The first parse of a process loads the TypeScript compiler: from V8's code cache in the same
// cache root (src/artifact/code_cache.ts), warmed with a kernel-shaped parse.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type * as TS from "typescript";
import { cacheDir } from "./cache.js";
import { precompiledOf } from "./dsl/precompiled.js";
import { COMPILER_FINGERPRINT, PACKAGE_VERSION } from "./version.js";
import { requireWithCodeCache } from "./artifact/index.js";
import { packageRoot } from "./ir/package_root.js";
import {
  capturedHash, isCapturedKey, kernelDefOf, kernelDefsIn, paramInfo as parseParamInfo, setTypescriptLoader, siteKey, sourceHash as parseSourceHash, trackHashedDefs,
  trackSourceReads, type KernelDef, type ParamInfo,
} from "./dsl/index.js";

/** What the code cache's warm-up parses: the constructs kernels are made of. */
const WARM_SOURCE = `import { pl } from "tspto";
export const k = pl.jit(function k(a: pl.Tensor<[4, 8], pl.FP32>, out: pl.Out<pl.Tensor>, n: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, n, 1)) { const t = pl.load(a, [i * 2, 0], [2, 8]); if (i > 0 && n !== 3) pl.store(pl.add(t, 1.5), [0, 0], out); }
  });
  let x = { y: [1, -2] }; x = { ...x }; return out;
});
class C { @pl.jit static f(a: pl.Tensor, b = 2): void { while (b < 3) b += 1; } }
`;

setTypescriptLoader(() => {
  if (!cacheDir()) return null;
  const file = createRequire(join(packageRoot(), "package.json")).resolve("typescript");
  return requireWithCodeCache(file, (m) => {
    const t = m as typeof TS;
    t.createSourceFile("warm.ts", WARM_SOURCE, t.ScriptTarget.Latest, true, t.ScriptKind.TS).forEachChild(function walk(n: TS.Node): void { n.getStart(); n.forEachChild(walk); });
  }) as typeof TS | null;
});

const FORMAT = "tspto-front-memo-1";
const sha = (s: string): string => createHash("sha256").update(s).digest("hex");

/** A definition's own identity (its sub-kernels are checked separately). */
function defKey(def: KernelDef): string {
  const scope = def.opts.scope ?? {};
  const scopeText = Object.keys(scope).sort().map((k) => `${k}=${describe(scope[k])}`).join("\0");
  const s = def.site;
  return sha([FORMAT, PACKAGE_VERSION, COMPILER_FINGERPRINT, def.kind, def.name, def.decorated,
    s ? `${siteKey(s)}:${s.line}:${s.col}` : "-", Function.prototype.toString.call(def.fn), JSON.stringify(def.opts.attrs ?? {}), scopeText].join("\0"));
}

function describe(v: unknown): string {
  const d = kernelDefOf(v);
  if (d) return `kernel:${d.site ? `${siteKey(d.site)}:${d.site.line}:${d.site.col}` : d.id}:${d.name}`;
  if (typeof v === "function") return `fn:${sha(Function.prototype.toString.call(v))}`;
  try {
    return `${typeof v}:${JSON.stringify(v, (_k, x: unknown) => (typeof x === "number" && !Number.isFinite(x) ? String(x) : x))}`;
  } catch {
    return typeof v;
  }
}

interface SubRef { readonly file: string; readonly line: number; readonly col: number; readonly name: string; readonly key: string }
interface Entry {
  readonly format: string;
  readonly hash: string;
  readonly params: readonly ParamInfo[];
  /** Every source file the parse read: path → sha256 of its text (null: unreadable). */
  readonly files: Readonly<Record<string, string | null>>;
  readonly subs: readonly SubRef[];
}

const fileHash = (file: string): string | null => {
  if (isCapturedKey(file)) return capturedHash(file);
  try { return sha(readFileSync(file, "utf8")); } catch { return null; }
};

/** Per definition, in this process: the entry and the stats of its files when it was checked. */
const checked = new WeakMap<KernelDef, { entry: Entry; stats: string }>();

const statsOf = (files: readonly string[]): string =>
  files.map((f) => { if (isCapturedKey(f)) return `captured:${capturedHash(f)}`; try { const s = statSync(f); return `${s.mtimeMs}:${s.size}`; } catch { return "-"; } }).join("|");

function subStillSame(ref: SubRef): boolean {
  return kernelDefsIn(ref.file).some((d) => d.name === ref.name && d.site?.line === ref.line && d.site.col === ref.col && defKey(d) === ref.key);
}

function entryPath(root: string, def: KernelDef): string {
  return join(root, "front", `${def.name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 48)}-${defKey(def).slice(0, 32)}.json`);
}

/** A valid memo entry for `def`, or null. */
function lookup(def: KernelDef): Entry | null {
  const hit = checked.get(def);
  if (hit && statsOf(Object.keys(hit.entry.files)) === hit.stats && hit.entry.subs.every(subStillSame)) return hit.entry;
  const root = cacheDir();
  if (!root) return null;
  let entry: Entry;
  try {
    entry = JSON.parse(readFileSync(entryPath(root, def), "utf8")) as Entry;
  } catch {
    return null;
  }
  if (entry.format !== FORMAT || typeof entry.hash !== "string" || !Array.isArray(entry.params)) return null;
  const files = Object.keys(entry.files ?? {});
  const stats = statsOf(files);
  if (!files.every((f) => fileHash(f) === entry.files[f]) || !entry.subs.every(subStillSame)) return null;
  checked.set(def, { entry, stats });
  return entry;
}

/** Parse (as the jit always did), recording what was read, and write the memo entry. */
function compute(def: KernelDef): Entry {
  let params: readonly ParamInfo[] = [];
  let hash = "";
  const subs: KernelDef[] = [];
  const files = trackSourceReads(() => {
    params = parseParamInfo(def);
    hash = trackHashedDefs(() => parseSourceHash(def), (d) => { if (d !== def) subs.push(d); });
  });
  const entry: Entry = {
    format: FORMAT, hash, params,
    files: Object.fromEntries(files.map((f) => [f, fileHash(f)])),
    subs: subs.filter((d) => d.site).map((d) => ({ file: siteKey(d.site!), line: d.site!.line, col: d.site!.col, name: d.name, key: defKey(d) })),
  };
  const root = cacheDir();
  if (root) {
    try {
      const path = entryPath(root, def);
      mkdirSync(join(root, "front"), { recursive: true, mode: 0o700 });
      const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
      writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
      renameSync(tmp, path);
    } catch {
      /* a memo that cannot be written only costs a parse next time */
    }
  }
  checked.set(def, { entry, stats: statsOf(Object.keys(entry.files)) });
  return entry;
}

/** The kernel's parameters as its signature declares them; from the memo when its sources are unchanged. */
export function paramInfo(def: KernelDef): readonly ParamInfo[] {
  const pre = precompiledOf(def);
  if (pre) return pre.params;
  if (!cacheDir()) return parseParamInfo(def);
  return (lookup(def) ?? compute(def)).params;
}

/** The kernel's source hash (sub-kernels and constants included); from the memo when its sources are unchanged. */
export function sourceHash(def: KernelDef): string {
  const pre = precompiledOf(def);
  if (pre) return pre.hash;
  if (!cacheDir()) return parseSourceHash(def);
  return (lookup(def) ?? compute(def)).hash;
}
