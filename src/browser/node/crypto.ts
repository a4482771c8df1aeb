// node:crypto in tspto's browser build: synchronous sha256 (cache keys and source hashes are
// computed synchronously, and WebCrypto's digest is async) and randomBytes over getRandomValues.
import { Buffer } from "./buffer.js";

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** sha256 of bytes (FIPS 180-4). */
export function sha256Bytes(msg: Uint8Array): Uint8Array {
  const n = msg.length, blocks = ((n + 9 + 63) >> 6) << 6;
  const m = new Uint8Array(blocks);
  m.set(msg);
  m[n] = 0x80;
  const dv = new DataView(m.buffer);
  dv.setUint32(blocks - 8, Math.floor(n / 2 ** 29));
  dv.setUint32(blocks - 4, (n << 3) >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const rotr = (x: number, r: number) => (x >>> r) | (x << (32 - r));
  for (let off = 0; off < blocks; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = dv.getUint32(off + 4 * i);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15], b = w[i - 2];
      w[i] = (w[i - 16] + (rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3)) + w[i - 7] + (rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10))) >>> 0;
    }
    let [a, b, c, d, e, f, g, k] = h;
    for (let i = 0; i < 64; i++) {
      const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      k = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
  }
  const out = new Uint8Array(32);
  const ov = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) ov.setUint32(4 * i, h[i]);
  return out;
}

class Hash {
  #parts: Uint8Array[] = [];
  update(x: string | Uint8Array): this {
    this.#parts.push(typeof x === "string" ? new TextEncoder().encode(x) : x);
    return this;
  }
  digest(enc?: "hex" | "base64"): string | Buffer {
    const total = this.#parts.reduce((s, p) => s + p.length, 0);
    const all = new Uint8Array(total);
    let o = 0;
    for (const p of this.#parts) { all.set(p, o); o += p.length; }
    const d = Buffer.from(sha256Bytes(all));
    return enc ? (d as unknown as { toString(e: string): string }).toString(enc) : d;
  }
}

export function createHash(alg: string): Hash {
  if (alg !== "sha256") throw new Error(`tspto's browser build hashes with sha256 only (asked for ${alg})`);
  return new Hash();
}
export function randomBytes(n: number): Buffer {
  const b = new Buffer(n);
  globalThis.crypto.getRandomValues(b);
  return b;
}
export default { createHash, randomBytes };
