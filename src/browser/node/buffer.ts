// node:buffer in tspto's browser build: a Uint8Array with the few Buffer methods tspto uses
// (alloc, from, toString as utf8 / hex / base64).
class Bytes extends Uint8Array {
  override toString(enc = "utf8"): string {
    if (enc === "hex") return Array.from(this, (b) => b.toString(16).padStart(2, "0")).join("");
    if (enc === "base64") { let s = ""; for (const b of this) s += String.fromCharCode(b); return btoa(s); }
    return new TextDecoder().decode(this);
  }
}
function from(x: string | ArrayBuffer | ArrayLike<number>, off?: number, len?: number): Bytes {
  if (typeof x === "string") { return from(Array.from(new TextEncoder().encode(x))); }
  if (x instanceof ArrayBuffer) return new Bytes(x, off, len);
  const a = new Bytes(x.length);
  a.set(x);
  return a;
}
export type Buffer = Bytes;
export const Buffer = Object.assign(Bytes, {
  alloc: (n: number): Bytes => new Bytes(n),
  fromBytes: from,
  isBuffer: (x: unknown): x is Bytes => x instanceof Bytes,
  byteLength: (s: string): number => new TextEncoder().encode(s).length,
}) as unknown as typeof Bytes & { alloc(n: number): Bytes; from(x: string | ArrayBuffer | ArrayLike<number>, off?: number, len?: number): Bytes; isBuffer(x: unknown): x is Bytes; byteLength(s: string): number };
(Buffer as unknown as { from: typeof from }).from = from;
export const constants = { MAX_LENGTH: 2 ** 31 - 1, MAX_STRING_LENGTH: 2 ** 29 - 24 };
export default { Buffer, constants };
