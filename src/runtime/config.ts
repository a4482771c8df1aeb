/**
 * RunConfig: the launch configuration of a ChipWorker / dispatch (PyPTO's RunConfig, camelCase).
 *
 * Every field is validated at construction; an invalid value throws a TsptoConfigError (code
 * E_CONFIG, `argument` = the field) whose message names the field, the rule
 * and the value. The object is frozen; `with(overrides)` makes a new validated config.
 */

import { TsptoConfigError } from "../ir/errors.js";
import { DEFAULT_PLATFORM, platformNames } from "../targets/index.js";

/** The registered platforms (src/targets): "cpu" (default), "interp", "cuda", "webgpu", and any target added there. */
export const PLATFORMS: readonly string[] = Object.freeze(platformNames());
/** A platform name (one of PLATFORMS). */
export type Platform = "cpu" | "interp" | (string & {});

/** One value for every scope depth, or exactly 4 entries (one per depth; 0 = default). */
export type RingSize = number | readonly [number, number, number, number] | readonly number[];

export interface RunConfigOptions {
  /** A registered platform (src/targets): "cpu" (default), "interp", "cuda" or "webgpu". */
  platform?: Platform;
  /** Device ordinal, integer >= 0 (default 0). */
  deviceId?: number;
  /** Chip swimlane tracing level: integer 0-4 or boolean (true = 4). */
  enableChipSwimlane?: number | boolean;
  /** Dependency-graph generation. */
  enableDepGen?: boolean;
  /** PMU counters: integer >= 0 (event set) or boolean (true = 1). */
  enablePmu?: number | boolean;
  /** Argument dumping: 0-2 or boolean (true = 1). */
  enableDumpArgs?: number | boolean;
  /** Per-scope statistics. */
  enableScopeStats?: boolean;
  /** Task ring window: power of 2 >= 4, or 4 entries (0 = default). Default 1024. */
  ringTaskWindow?: RingSize;
  /** Ring heap bytes: power of 2 >= 1024, or 4 entries (0 = default). Default 1 MiB. */
  ringHeap?: RingSize;
  /** Dependency pool entries: integer in [4, 2^31-1], or 4 entries (0 = default). Default 1024. */
  ringDepPool?: RingSize;
  /** AICPU scheduler threads, integer >= 1 (default 1): accepted and validated, inert on the cpu device (dispatch runs on the submitting and completing threads; see docs/architecture.md). */
  aicpuThreadNum?: number;
  /** Harness-only: relative tolerance for golden comparisons (default 1e-5). */
  rtol?: number;
  /** Harness-only: absolute tolerance for golden comparisons (default 1e-5). */
  atol?: number;
  /** Harness-only: directory of golden data. */
  goldenDataDir?: string;
  /** Harness-only: keep generated kernels. */
  saveKernels?: boolean;
  /** Harness-only: no effect on dispatch (`codegenOnly: true` does not stop a launch). */
  codegenOnly?: boolean;
  /** Where compiled artifacts go; forwarded by `compileKwargs()` as `outputDir`. */
  saveKernelsDir?: string;
  // issue 12 (plumbing): the compile option, part of the jit specialization key.
  /** Float matmul contraction: "fast" (fused multiply-add, default) or "off" (bit-reproducible without FMA). */
  fpContract?: "fast" | "off";
  /**
   * Seconds an awaited launch or read back may wait for the GPU before it fails with
   * E_LAUNCH_TIMEOUT, a finite number >= 0 (default 0 = no limit). webgpu only (accepted and
   * validated, inert on the platforms whose launches run to their end): WebGPU cannot stop a
   * running kernel, so the device is then given up and every later operation on it fails.
   */
  launchTimeoutS?: number;
}

export const DEFAULT_RING_TASK_WINDOW = 1024;
export const DEFAULT_RING_HEAP = 1 << 20;
const DEFAULT_RING_DEP_POOL = 1024;
/** Scope depths addressed by the 4-entry ring-size lists. */
const RING_DEPTHS = 4;

const OPTION_NAMES = [
  "platform", "deviceId", "enableChipSwimlane", "enableDepGen", "enablePmu", "enableDumpArgs",
  "enableScopeStats", "ringTaskWindow", "ringHeap", "ringDepPool", "aicpuThreadNum", "rtol", "atol",
  "goldenDataDir", "saveKernels", "codegenOnly", "saveKernelsDir", "fpContract", "launchTimeoutS",
] as const satisfies readonly (keyof RunConfigOptions)[];

/** The option names `new RunConfig` accepts. */
export const RUN_CONFIG_OPTIONS: readonly string[] = Object.freeze([...OPTION_NAMES]);

const BRAND = Symbol.for("tspto.RunConfig");

function fmt(x: unknown): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "bigint") return `${x}n`;
  if (Array.isArray(x)) return `[${x.map(fmt).join(", ")}]`;
  if (x !== null && typeof x === "object") {
    try { return JSON.stringify(x); } catch { return Object.prototype.toString.call(x); }
  }
  return String(x);
}

function fail(kind: "type" | "range", field: string, rule: string, value: unknown, extra = ""): never {
  void kind; // a wrong kind of value and a value outside the rule are both E_CONFIG
  throw configError(`RunConfig.${field} must be ${rule}, got ${fmt(value)}${extra}`, field);
}

/** An invalid option: TsptoConfigError, code E_CONFIG, `argument` = the field. */
function configError(detail: string, field?: string): TsptoConfigError {
  return new TsptoConfigError("E_CONFIG", detail, undefined, undefined, field !== undefined ? { argument: field } : undefined);
}

function isInt(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x);
}

function isPow2(x: number): boolean {
  if (!isInt(x) || x <= 0) return false;
  while (x % 2 === 0) x /= 2;
  return x === 1;
}

function boolField(field: string, v: unknown): boolean {
  if (typeof v !== "boolean") fail("type", field, "a boolean", v);
  return v;
}

/** int in [lo, hi] or boolean (true -> trueAs). */
function levelField(field: string, v: unknown, lo: number, hi: number, trueAs: number, rule: string): number {
  if (typeof v === "boolean") return v ? trueAs : 0;
  if (typeof v !== "number") fail("type", field, rule, v);
  if (!isInt(v) || v < lo || v > hi) fail("range", field, rule, v);
  return v;
}

function intField(field: string, v: unknown, lo: number, rule: string): number {
  if (typeof v !== "number") fail("type", field, rule, v);
  if (!isInt(v) || v < lo) fail("range", field, rule, v);
  return v;
}

function ringField(field: string, v: unknown, ok: (x: number) => boolean, rule: string): number | readonly number[] {
  const full = `${rule} (or a list of ${RING_DEPTHS} such values, 0 = default)`;
  if (Array.isArray(v)) {
    if (v.length !== RING_DEPTHS) fail("range", field, full, v, ` (a list needs exactly ${RING_DEPTHS} entries, got ${v.length})`);
    v.forEach((e, i) => {
      if (typeof e !== "number") fail("type", field, full, v, ` (entry ${i} is ${fmt(e)})`);
      if (e !== 0 && !(isInt(e) && ok(e))) fail("range", field, full, v, ` (entry ${i} is ${fmt(e)})`);
    });
    return Object.freeze([...(v as number[])]);
  }
  if (typeof v !== "number") fail("type", field, full, v);
  if (!(isInt(v) && ok(v))) fail("range", field, full, v);
  return v;
}

function tolField(field: string, v: unknown): number {
  const rule = "a finite number >= 0";
  if (typeof v !== "number") fail("type", field, rule, v);
  if (!Number.isFinite(v) || v < 0) fail("range", field, rule, v);
  return v;
}

function dirField(field: string, v: unknown): string {
  if (typeof v !== "string") fail("type", field, "a non-empty string (a directory path)", v);
  if (v.length === 0) fail("range", field, "a non-empty string (a directory path)", v);
  return v;
}

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]!;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]!;
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}

/** The known option closest to `name` (handles snake_case and typos), if any is close. */
function closestOption(name: string): string | undefined {
  const norm = (s: string) => s.replace(/[_-]/g, "").toLowerCase();
  const n = norm(name);
  let best: string | undefined;
  let bestD = Infinity;
  for (const o of OPTION_NAMES) {
    const d = norm(o) === n ? 0 : editDistance(n, norm(o));
    if (d < bestD) { bestD = d; best = o; }
  }
  return bestD <= Math.max(2, Math.floor(n.length / 3)) ? best : undefined;
}

export class RunConfig {
  readonly platform: Platform;
  readonly deviceId: number;
  readonly enableChipSwimlane: number;
  readonly enableDepGen: boolean;
  readonly enablePmu: number;
  readonly enableDumpArgs: number;
  readonly enableScopeStats: boolean;
  readonly ringTaskWindow: number | readonly number[];
  readonly ringHeap: number | readonly number[];
  readonly ringDepPool: number | readonly number[];
  readonly aicpuThreadNum: number;
  readonly rtol: number;
  readonly atol: number;
  readonly goldenDataDir: string | undefined;
  readonly saveKernels: boolean;
  readonly codegenOnly: boolean;
  readonly saveKernelsDir: string | undefined;
  readonly fpContract: "fast" | "off";
  readonly launchTimeoutS: number;

  constructor(opts: RunConfigOptions = {}) {
    if (opts === null || typeof opts !== "object" || Array.isArray(opts)) {
      throw configError(`RunConfig: options must be an object, got ${fmt(opts)}`);
    }
    if (opts instanceof RunConfig) opts = opts.toJSON();
    for (const key of Object.keys(opts)) {
      if (!(OPTION_NAMES as readonly string[]).includes(key)) {
        const near = closestOption(key);
        throw configError(
          `RunConfig: unknown option '${key}'; known options: ${OPTION_NAMES.join(", ")}` +
          (near ? `; did you mean '${near}'?` : ""), key);
      }
    }
    const o = opts as Record<string, unknown>;
    const get = (k: keyof RunConfigOptions): unknown => o[k];

    const platform = get("platform") ?? DEFAULT_PLATFORM;
    if (typeof platform !== "string" || !PLATFORMS.includes(platform)) {
      fail(typeof platform === "string" ? "range" : "type", "platform",
        `one of ${PLATFORMS.map((p) => JSON.stringify(p)).join(", ")}`, platform);
    }
    this.platform = platform as Platform;
    this.deviceId = intField("deviceId", get("deviceId") ?? 0, 0, "an integer >= 0");
    this.enableChipSwimlane = levelField("enableChipSwimlane", get("enableChipSwimlane") ?? 0, 0, 4, 4,
      "an integer 0-4 or a boolean (true = 4)");
    this.enableDepGen = boolField("enableDepGen", get("enableDepGen") ?? false);
    this.enablePmu = levelField("enablePmu", get("enablePmu") ?? 0, 0, Number.MAX_SAFE_INTEGER, 1,
      "an integer >= 0 or a boolean (true = 1)");
    this.enableDumpArgs = levelField("enableDumpArgs", get("enableDumpArgs") ?? 0, 0, 2, 1,
      "an integer 0-2 or a boolean (true = 1)");
    this.enableScopeStats = boolField("enableScopeStats", get("enableScopeStats") ?? false);
    this.ringTaskWindow = ringField("ringTaskWindow", get("ringTaskWindow") ?? DEFAULT_RING_TASK_WINDOW,
      (x) => x >= 4 && isPow2(x), "a power of 2 >= 4");
    this.ringHeap = ringField("ringHeap", get("ringHeap") ?? DEFAULT_RING_HEAP,
      (x) => x >= 1024 && isPow2(x), "a power of 2 >= 1024");
    this.ringDepPool = ringField("ringDepPool", get("ringDepPool") ?? DEFAULT_RING_DEP_POOL,
      (x) => x >= 4 && x <= 2147483647, "an integer in [4, 2147483647]");
    this.aicpuThreadNum = intField("aicpuThreadNum", get("aicpuThreadNum") ?? 1, 1, "an integer >= 1");
    this.rtol = tolField("rtol", get("rtol") ?? 1e-5);
    this.atol = tolField("atol", get("atol") ?? 1e-5);
    this.goldenDataDir = get("goldenDataDir") === undefined ? undefined : dirField("goldenDataDir", get("goldenDataDir"));
    this.saveKernels = boolField("saveKernels", get("saveKernels") ?? false);
    this.codegenOnly = boolField("codegenOnly", get("codegenOnly") ?? false);
    this.saveKernelsDir = get("saveKernelsDir") === undefined ? undefined : dirField("saveKernelsDir", get("saveKernelsDir"));
    const fp = get("fpContract") ?? "fast";
    if (fp !== "fast" && fp !== "off") fail(typeof fp === "string" ? "range" : "type", "fpContract", `"fast" or "off"`, fp);
    this.fpContract = fp;
    this.launchTimeoutS = tolField("launchTimeoutS", get("launchTimeoutS") ?? 0);
    Object.defineProperty(this, BRAND, { value: true });
    Object.freeze(this);
  }

  /** True for a RunConfig (also one from another copy of this module). */
  static isRunConfig(x: unknown): x is RunConfig {
    return x instanceof RunConfig || (x !== null && typeof x === "object" && (x as Record<symbol, unknown>)[BRAND] === true);
  }

  /** Options for `ir.compile`: the platform, `outputDir` when `saveKernelsDir` is set, and `fpContract` when not the default. */
  compileKwargs(): { platform: string; outputDir?: string; fpContract?: "fast" | "off" } {
    const fp = this.fpContract === "fast" ? {} : { fpContract: this.fpContract };
    return this.saveKernelsDir === undefined
      ? { platform: this.platform, ...fp }
      : { platform: this.platform, outputDir: this.saveKernelsDir, ...fp };
  }

  /** A new validated config with `overrides` applied (an explicit `undefined` restores the default). */
  with(overrides: RunConfigOptions): RunConfig {
    if (overrides === null || typeof overrides !== "object" || Array.isArray(overrides)) {
      throw configError(`RunConfig.with: overrides must be an object, got ${fmt(overrides)}`);
    }
    return new RunConfig({ ...this.toJSON(), ...overrides });
  }

  /** Every field as plain options (fields that are unset are omitted); `new RunConfig(c.toJSON())` equals `c`. */
  toJSON(): RunConfigOptions {
    const out: Record<string, unknown> = {};
    for (const k of OPTION_NAMES) {
      const v = this[k];
      if (v === undefined) continue;
      out[k] = Array.isArray(v) ? [...v] : v;
    }
    return out as RunConfigOptions;
  }

  /** Fields that differ from the defaults, e.g. `RunConfig(platform="interp", ringHeap=4096)`. */
  toString(): string {
    const def = new RunConfig().toJSON() as Record<string, unknown>;
    const mine = this.toJSON() as Record<string, unknown>;
    const parts = OPTION_NAMES.filter((k) => fmt(mine[k]) !== fmt(def[k])).map((k) => `${k}=${fmt(mine[k])}`);
    return `RunConfig(${parts.join(", ")})`;
  }

  /** Effective task window at scope `depth` (0-3). */
  ringTaskWindowFor(depth = 0): number {
    return ringAt(this.ringTaskWindow, depth, DEFAULT_RING_TASK_WINDOW, "ringTaskWindowFor");
  }

  /** Effective ring heap bytes at scope `depth` (0-3). */
  ringHeapFor(depth = 0): number {
    return ringAt(this.ringHeap, depth, DEFAULT_RING_HEAP, "ringHeapFor");
  }

  /** Effective dependency pool size at scope `depth` (0-3). */
  ringDepPoolFor(depth = 0): number {
    return ringAt(this.ringDepPool, depth, DEFAULT_RING_DEP_POOL, "ringDepPoolFor");
  }
}

function ringAt(v: number | readonly number[], depth: number, dflt: number, who: string): number {
  if (!isInt(depth) || depth < 0 || depth >= RING_DEPTHS) {
    throw configError(`RunConfig.${who}: depth must be an integer in [0, ${RING_DEPTHS - 1}], got ${fmt(depth)}`);
  }
  if (typeof v === "number") return v;
  const e = v[depth]!;
  return e === 0 ? dflt : e;
}
