// Seeded random numbers: splitmix32 seeding + xoshiro128**, Box–Muller normals; randn.
import { isFloatDType, toStorageValue, typedArrayFor, type DType, type StorageArray } from "../dtype.js";
import { argError, checkDType, checkShape, fmtAny, productOf } from "./check.js";
import { HostTensor } from "./host_tensor.js";

/** A deterministic PRNG (xoshiro128**) seeded from any safe integer via splitmix32. */
export class Rng {
  private s0: number; private s1: number; private s2: number; private s3: number;
  private spare: number | null = null;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw argError("E_ARG", `Rng: seed must be a safe integer, got ${fmtAny(seed)}`);
    const lo = seed >>> 0;
    const hi = Math.floor(seed / 4294967296) >>> 0; // two's complement high word for negatives
    let x = (lo ^ Math.imul(hi, 0x85ebca6b) ^ 0x9e3779b9) >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next(); this.s1 = next() ^ hi; this.s2 = next(); this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniform 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0; this.s3 ^= this.s1; this.s1 ^= this.s2; this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    this.s0 >>>= 0; this.s1 >>>= 0; this.s2 >>>= 0; this.s3 >>>= 0;
    return result;
  }

  /** A uniform double in [0, 1) with 53 random bits. */
  uniform(): number {
    const a = this.nextU32() >>> 5;
    const b = this.nextU32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** A standard normal sample (Box–Muller; pairs are used in turn). */
  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    const u1 = 1 - this.uniform(); // (0, 1]
    const u2 = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    const th = 2 * Math.PI * u2;
    this.spare = r * Math.sin(th);
    return r * Math.cos(th);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * Standard-normal samples, deterministic per `seed` (default 0). Float dtypes get the normal
 * value rounded to the dtype; integer dtypes get small integers `round(4 * normal)` saturated
 * (uint8: its absolute value); bool gets 0/1 with probability 1/2.
 */
export function randn(shape: readonly number[], opts: { seed?: number; dtype?: DType } = {}): HostTensor {
  const s = checkShape(shape, "randn");
  const d = checkDType(opts.dtype ?? "float32", "randn");
  const seed = opts.seed ?? 0;
  if (typeof seed !== "number" || !Number.isSafeInteger(seed)) {
    throw argError("E_ARG", `randn: seed must be an integer, got ${fmtAny(seed)}`);
  }
  const rng = new Rng(seed);
  const n = productOf(s);
  const out = new (typedArrayFor(d))(n) as StorageArray;
  const w = out as { [i: number]: number | bigint };
  for (let i = 0; i < n; i++) {
    let v: number;
    if (d === "bool") v = rng.uniform() < 0.5 ? 0 : 1;
    else if (isFloatDType(d)) v = rng.normal();
    else {
      v = Math.round(rng.normal() * 4);
      if (d === "uint8") v = Math.abs(v);
    }
    w[i] = toStorageValue(v, d);
  }
  return new HostTensor(out, s, d);
}
