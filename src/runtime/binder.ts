// The binder of one registration: validates a call's arguments against the program's
// signature (compiled_meta.json) and packs them for Device.launch, once per call. Every call
// form (a jit call, worker.run, a registration handle, runAsync) packs through it; the jit's
// fast path uses `tryPack`, which is the same check without building an error.
import { TsptoRuntimeError, type ErrorWhere } from "../ir/index.js";
import { dimSlotNames, type CompiledMeta } from "../artifact/index.js";
import { checkHostView, checkScalar } from "./args.js";
import { ArgKind } from "../targets/index.js";
import { callerSpan } from "./caller.js";
import { RunConfig } from "./config.js";
import { DeviceTensor, type DeviceTensorOwner } from "./device_tensor.js";
import { dtypeBytes, type DType } from "./dtype.js";
import { asTensorLike, HostTensor } from "./host/index.js";

export interface ParamSig {
  readonly name: string;
  readonly tensor: boolean;
  readonly dir: "in" | "out" | "inout";
  readonly dtype: DType;
  /** Static extents; -1 for a dynamic dimension (named in `dimNames`). */
  readonly shape: readonly number[];
  /** Tensors with dynamic dimensions: per axis the dimension's name (null: static). */
  readonly dimNames: readonly (string | null)[] | null;
  /** Bytes of the tensor (static shapes); 0 with dynamic dimensions (computed per call). */
  readonly nbytes: number;
  readonly elemBytes: number;
  readonly hostKind: number;
  readonly scalarKind: number;
  /** A scalar the program was specialized on (its uses were folded at compile time). */
  readonly value?: number | boolean;
}

/** What a launch takes: the packed arguments and the call's RunConfig (undefined: the worker's). */
export interface Packed {
  readonly args: unknown[];
  readonly kinds: Uint8Array;
  /** The numeric value of each non-host argument (a device address as a number, a scalar; NaN: an int64 beyond 2^53, read from `args`), for devices that read them in one block (Device.launch). */
  readonly slots: Float64Array;
  config: RunConfig | undefined;
  /** The caller's arguments (what a program that returns a parameter returns). */
  source: readonly unknown[];
}

/** A scalar as messages show it (String(-0) is "0"). */
const scalarText = (v: unknown): string => (Object.is(v, -0) ? "-0" : String(v));

export const rtErr = (code: string, msg: string, hint?: string, where?: ErrorWhere) => new TsptoRuntimeError(code, msg, callerSpan(), hint, where);
const shapeStr = (s: readonly number[], names?: readonly (string | null)[] | null) => `[${s.map((d, k) => (d === -1 && names?.[k] ? names[k] : d)).join(", ")}]`;

function signatureOf(meta: CompiledMeta): ParamSig[] {
  return meta.params.map((p) => {
    const tensor = p.kind === "tensor";
    const shape = tensor ? (p.shape ?? []).map(Number) : [];
    const dynamic = shape.includes(-1);
    return {
      name: p.name, tensor, dir: p.direction, dtype: p.dtype as DType, shape, dimNames: dynamic ? p.dimNames ?? null : null,
      nbytes: tensor && !dynamic ? shape.reduce((a, b) => a * b, 1) * dtypeBytes(p.dtype as DType) : 0,
      elemBytes: dtypeBytes(p.dtype as DType),
      hostKind: p.direction === "in" ? ArgKind.HostIn : p.direction === "out" ? ArgKind.HostOut : ArgKind.HostInOut,
      value: p.value,
      scalarKind: p.dtype === "bool" ? ArgKind.Bool : p.dtype === "float32" || p.dtype === "float16" || p.dtype === "bfloat16" ? ArgKind.Float : ArgKind.Int,
    };
  });
}

/** A scalar's launch slot value: numbers as they are, booleans 0/1, a bigint when exact as a number (else NaN: read from args). */
function slotOf(a: unknown): number {
  if (typeof a === "number") return a;
  if (typeof a === "boolean") return a ? 1 : 0;
  const n = Number(a as bigint);
  return Number.isSafeInteger(n) ? n : NaN;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && b[i] !== -1) return false;
  return true;
}

/** A value as JSON where it has one (bigints as 12n), for messages. */
export function show(x: unknown): string {
  try {
    const s = JSON.stringify(x, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
    return s === undefined ? String(x) : s;
  } catch {
    return Object.prototype.toString.call(x);
  }
}

export function describe(a: unknown): string {
  if (a === null) return "null";
  if (a instanceof DeviceTensor) return a.toString();
  if (ArrayBuffer.isView(a)) return `${a.constructor.name}(${(a as unknown as { length: number }).length}) without a shape`;
  return typeof a === "object" ? (a as object).constructor?.name ?? "object" : `${typeof a} ${String(a)}`;
}

/** Integer dtypes' ranges for scalar arguments (int64 as a safe-integer range or a bigint). */
const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  int8: [-128, 127], int16: [-32768, 32767], int32: [-(2 ** 31), 2 ** 31 - 1], uint8: [0, 255],
};

export class Binder {
  readonly name: string;
  readonly sig: readonly ParamSig[];
  /** Dynamic dimensions, in slot order: their extents are packed after the parameters. */
  readonly symbols: readonly string[];
  readonly packed: Packed;
  /** Per symbol: its extent in the call being packed (0: not seen yet). */
  readonly #extent: number[];
  /** Per parameter, per axis: the symbol's index for a dynamic dimension, else -1. */
  readonly #symAxis: readonly Int32Array[];
  readonly #owner: DeviceTensorOwner;
  readonly #platform: string;
  /** Per parameter: the DeviceTensor last packed there, and its address as a number. */
  readonly #addrOf: (DeviceTensor | undefined)[];
  readonly #addr: Float64Array;

  constructor(meta: CompiledMeta, owner: DeviceTensorOwner) {
    this.name = meta.name;
    this.sig = signatureOf(meta);
    this.symbols = dimSlotNames(meta.params);
    this.#extent = new Array(this.symbols.length).fill(0);
    this.#symAxis = this.sig.map((p) => Int32Array.from(p.shape, (_d, k) => (p.dimNames?.[k] ? this.symbols.indexOf(p.dimNames[k]!) : -1)));
    const n = this.sig.length + this.symbols.length;
    this.packed = { args: new Array(n), kinds: new Uint8Array(n).fill(ArgKind.Int), slots: new Float64Array(n), config: undefined, source: [] };
    this.#owner = owner;
    this.#platform = meta.platform;
    this.#addrOf = new Array(this.sig.length).fill(undefined);
    this.#addr = new Float64Array(this.sig.length);
  }

  /**
   * The jit's fast path: packs `args[0..n)` when they match the signature exactly (HostTensor
   * and scalar arguments), else returns false and packs nothing useful. The same checks as
   * `pack`, without building errors.
   */
  tryPack(args: readonly unknown[], n: number, config: RunConfig | undefined): boolean {
    const sig = this.sig;
    if (n !== sig.length) return false;
    const out = this.packed;
    if (this.symbols.length > 0) this.#extent.fill(0);
    for (let i = 0; i < n; i++) {
      const p = sig[i], a = args[i];
      if (p.tensor) {
        if (!(a instanceof HostTensor) || a.dtype !== p.dtype || !sameShape(a.shape, p.shape)) return false;
        if (p.dimNames ? this.#dims(i, a.shape) !== null || a.data.byteLength < this.#bytes(p, a.shape) : a.data.byteLength < p.nbytes) return false;
        out.args[i] = a.data;
        out.kinds[i] = p.hostKind;
      } else {
        if (p.value !== undefined ? !Object.is(a, p.value) : !this.#scalarOk(p, a)) return false;
        out.args[i] = a;
        out.kinds[i] = p.scalarKind;
        out.slots[i] = slotOf(a);
      }
    }
    this.#packDims();
    out.config = config;
    out.source = args;
    return true;
  }

  /** Records the dynamic dimensions of parameter i's tensor; the first symbol that disagrees with an earlier tensor, else null. */
  #dims(i: number, shape: readonly number[]): number | null {
    const axes = this.#symAxis[i];
    for (let k = 0; k < axes.length; k++) {
      const s = axes[k];
      if (s < 0) continue;
      if (this.#extent[s] === 0) this.#extent[s] = shape[k];
      else if (this.#extent[s] !== shape[k]) return k;
    }
    return null;
  }

  #bytes(p: ParamSig, shape: readonly number[]): number {
    let n = p.elemBytes;
    for (let k = 0; k < shape.length; k++) n *= shape[k];
    return n;
  }

  #packDims(): void {
    const base = this.sig.length;
    for (let k = 0; k < this.symbols.length; k++) this.packed.args[base + k] = this.packed.slots[base + k] = this.#extent[k];
  }

  /** The error for parameter i's axis k disagreeing with the extent an earlier argument gave its dimension. */
  #dimMismatch(i: number, k: number, got: number): TsptoRuntimeError {
    const p = this.sig[i];
    const name = p.dimNames![k]!;
    const s = this.symbols.indexOf(name);
    // the first argument that gave the dimension its extent: an earlier one, or this one (a name used twice in one shape)
    const first = this.sig.findIndex((_q, j) => j <= i && this.#symAxis[j].includes(s));
    const by = first === i
      ? `axis ${this.#symAxis[i].indexOf(s)} of the same argument gave ${name} = ${this.#extent[s]}`
      : `argument '${this.sig[first].name}' (#${first + 1}) gave ${name} = ${this.#extent[s]}`;
    return rtErr("E_ARG", `argument '${p.name}' (#${i + 1}) of '${this.name}': dynamic dimension '${name}' (axis ${k}) is ${got}, but ${by}`,
      `tensors that share a dynamic dimension name must agree on its extent; give the kernel parameters different names (e.g. "M" and "N") if they may differ`, { argument: p.name, position: i + 1 });
  }

  #scalarOk(p: ParamSig, a: unknown): boolean {
    if (p.scalarKind === ArgKind.Bool) return typeof a === "boolean" || a === 0 || a === 1;
    if (p.scalarKind === ArgKind.Float) return typeof a === "number";
    if (typeof a === "bigint") return p.dtype === "int64" ? a >= -(2n ** 63n) && a < 2n ** 63n : false;
    if (typeof a !== "number" || !Number.isInteger(a)) return false;
    const r = INT_RANGE[p.dtype];
    return r ? a >= r[0] && a <= r[1] : Number.isSafeInteger(a);
  }

  /** Validates `args` (optionally followed by a RunConfig) and packs them; throws a TsptoError naming the argument. */
  pack(args: readonly unknown[]): Packed {
    let n = args.length;
    let cfg: RunConfig | undefined;
    if (n > 0 && args[n - 1] instanceof RunConfig) { cfg = args[n - 1] as RunConfig; n--; }
    if (cfg && cfg.platform !== this.#platform) {
      throw rtErr("E_PLATFORM", `RunConfig.platform='${cfg.platform}' does not match ChipWorker.platform='${this.#platform}'`, "a per-launch RunConfig can change DFX flags, not the platform; use a worker of that platform");
    }
    const sig = this.sig;
    if (n !== sig.length) {
      throw rtErr("E_ARITY", `'${this.name}' takes ${sig.length} arguments (${sig.map((p) => p.name).join(", ")}), got ${n}`, "pass one argument per kernel parameter (optionally followed by a RunConfig)");
    }
    const out = this.packed;
    if (this.symbols.length > 0) this.#extent.fill(0);
    // The hot loop builds no strings and no objects: each check that fails hands over to
    // #checkScalar / #mismatch / checkTensor, which build the message naming the argument.
    for (let i = 0; i < n; i++) {
      const p = sig[i];
      const a = args[i];
      if (!p.tensor) {
        if (p.value !== undefined ? !Object.is(a, p.value) : !this.#scalarOk(p, a)) this.#checkScalar(p, i, a);
        out.args[i] = a;
        out.kinds[i] = p.scalarKind;
        out.slots[i] = slotOf(a);
        continue;
      }
      if (a instanceof DeviceTensor) {
        if (a.owner !== this.#owner || !a.live) this.checkTensor(a, `argument '${p.name}' (#${i + 1})`);
        if (a.dtype !== p.dtype || !sameShape(a.shape, p.shape)) throw this.#mismatch(p, i, a.shape, a.dtype);
        if (p.dimNames) { const k = this.#dims(i, a.shape); if (k !== null) throw this.#dimMismatch(i, k, a.shape[k]); }
        out.args[i] = a.dataPtr;
        out.kinds[i] = ArgKind.Device;
        // the address as a number (exact: device addresses are below 2^53), converted once per
        // tensor: resident weights are the same objects call after call
        if (this.#addrOf[i] !== a) { this.#addrOf[i] = a; this.#addr[i] = Number(a.dataPtr); }
        out.slots[i] = this.#addr[i];
        continue;
      }
      const h = a instanceof HostTensor ? a : asTensorLike(a);
      if (!h) throw rtErr("E_ARG", `argument '${p.name}' (#${i + 1}) of '${this.name}' must be a tensor (HostTensor, DeviceTensor or {data, shape}), got ${describe(a)}`, undefined, { argument: p.name, position: i + 1 });
      if (h.dtype !== p.dtype || !sameShape(h.shape, p.shape)) throw this.#mismatch(p, i, h.shape, h.dtype);
      if (p.dimNames) { const k = this.#dims(i, h.shape); if (k !== null) throw this.#dimMismatch(i, k, h.shape[k]); }
      const need = p.dimNames ? this.#bytes(p, h.shape) : p.nbytes;
      if (h.data.byteLength < need) checkHostView(h.data, need, p.name, i, this.name); // E_HOST_VIEW: detached, transferred or shrunk since the tensor was made
      out.args[i] = h.data;
      out.kinds[i] = p.hostKind;
    }
    this.#packDims();
    out.config = cfg;
    out.source = args;
    return out;
  }

  /** The full check of scalar argument i, once the fast one failed: throws the error that names it, or returns when `a` is accepted after all (a bigint of the specialized value, a bigint for a narrower integer dtype). */
  #checkScalar(p: ParamSig, i: number, a: unknown): void {
    const what = `argument '${p.name}' (#${i + 1}) of '${this.name}'`;
    const where = { argument: p.name, position: i + 1 };
    if (typeof a !== "number" && typeof a !== "boolean" && typeof a !== "bigint") {
      throw rtErr("E_ARG", `${what} must be a ${p.dtype} scalar, got ${describe(a)}`, undefined, where);
    }
    if (p.value !== undefined) {
      // the value itself (Object.is): NaN matches a NaN specialization, -0 is not 0 (the jit keys them apart)
      if (Object.is(a, p.value) || (typeof a === "bigint" && Number.isInteger(p.value) && BigInt(p.value as number) === a)) return;
      throw rtErr("E_SPECIALIZED", `${what} is ${scalarText(a)}, but the program was compiled for ${p.name}=${scalarText(p.value)}`,
        `scalar parameters annotated number/boolean are specialized on their value: compile again for this value (jit calls do it automatically), or annotate the parameter pl.Scalar<pl.INT64> to keep it dynamic`, where);
    }
    checkScalar(p.dtype, a, p.name, i, this.name); // throws E_SCALAR naming the rule (1.5, NaN, true, 2**31 for an int32)
  }

  /** A DeviceTensor argument must be a live allocation of this worker. */
  checkTensor(t: DeviceTensor, what: string): void {
    if (t.owner !== this.#owner) {
      throw rtErr("E_FOREIGN", `${what}: DeviceTensor belongs to another ChipWorker`, "a DeviceTensor is bound to the worker that allocated it: allocate it on this worker, or run on its own worker");
    }
    if (!t.live) {
      throw rtErr("E_FREED", `${what}: DeviceTensor is not a live allocation owned by this ChipWorker`, "it was freed (freeTensor) or its worker was closed; allocate it again");
    }
  }

  #mismatch(p: ParamSig, i: number, shape: readonly number[], dtype: string): TsptoRuntimeError {
    return rtErr("E_ARG", `argument '${p.name}' (#${i + 1}) of '${this.name}': expected a ${p.dtype} tensor of shape ${shapeStr(p.shape, p.dimNames)}, got ${dtype} of shape ${shapeStr(shape)}`,
      "the program was compiled for the shapes and dtypes of its sample arguments: compile it again for these (jit calls specialize automatically)", { argument: p.name, position: i + 1 });
  }
}
