// A small reader (and writer, for tests and --random-init round trips) of the safetensors format
// Hugging Face checkpoints use: an 8-byte little-endian header length N, N bytes of JSON
// ({ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__"?: {...} }), then the
// data, each tensor's bytes at [begin, end) of it, row-major, little-endian.
// (https://github.com/huggingface/safetensors: the format is the spec; no maintained npm reader
// of local files with checks this strict exists, so this is one, with its tests in
// test/examples/gpt2_safetensors.test.ts.)
//
// Every failure is one SafetensorsError naming the file (and the tensor): a short or truncated
// file, a header that is not JSON or not the format, an unknown dtype, offsets outside the data,
// overlapping tensors, a byte count that does not match the shape. Nothing is read past a check.
import { closeSync, fstatSync, openSync, readSync, writeFileSync } from "node:fs";

export type SafeDType = "F64" | "F32" | "F16" | "BF16" | "I64" | "I32" | "I16" | "I8" | "U8" | "BOOL";
const BYTES: Record<SafeDType, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

export class SafetensorsError extends Error {
  constructor(readonly file: string, message: string, readonly tensor?: string) {
    super(`${file}: ${tensor !== undefined ? `tensor '${tensor}': ` : ""}${message}`);
    this.name = "SafetensorsError";
  }
}

export interface TensorInfo { readonly name: string; readonly dtype: SafeDType; readonly shape: readonly number[]; readonly begin: number; readonly end: number }

/** The largest header this reader accepts (the format's own reference implementation uses 100 MB). */
const MAX_HEADER = 100 << 20;

/** An open safetensors file: its tensors' metadata, read eagerly; their data on demand. */
export class SafetensorsFile {
  readonly tensors: ReadonlyMap<string, TensorInfo>;
  readonly metadata: Readonly<Record<string, string>>;
  private fd: number;
  private readonly dataStart: number;

  constructor(readonly file: string) {
    let fd: number;
    try { fd = openSync(file, "r"); } catch (e) { throw new SafetensorsError(file, `cannot open: ${(e as Error).message}`); }
    this.fd = fd;
    try {
      const size = fstatSync(fd).size;
      if (size < 8) throw new SafetensorsError(file, `${size} bytes: too short for a safetensors file (an 8-byte header length, then the header)`);
      const lenBuf = Buffer.alloc(8);
      readSync(fd, lenBuf, 0, 8, 0);
      const n = lenBuf.readBigUInt64LE(0);
      if (n > BigInt(Math.min(MAX_HEADER, size - 8))) {
        throw new SafetensorsError(file, `header length ${n} exceeds ${size - 8 < MAX_HEADER ? `the ${size - 8} bytes after it (truncated, or not a safetensors file)` : `${MAX_HEADER} bytes`}`);
      }
      const hlen = Number(n);
      const hbuf = Buffer.alloc(hlen);
      readSync(fd, hbuf, 0, hlen, 8);
      let header: unknown;
      try { header = JSON.parse(hbuf.toString("utf8")); } catch (e) { throw new SafetensorsError(file, `the header is not JSON: ${(e as Error).message}`); }
      if (!header || typeof header !== "object" || Array.isArray(header)) throw new SafetensorsError(file, "the header is not a JSON object");
      this.dataStart = 8 + hlen;
      const dataBytes = size - this.dataStart;
      const tensors = new Map<string, TensorInfo>();
      let metadata: Record<string, string> = {};
      for (const [name, v] of Object.entries(header as Record<string, unknown>)) {
        if (name === "__metadata__") {
          if (!v || typeof v !== "object" || Array.isArray(v) || !Object.values(v).every((x) => typeof x === "string")) throw new SafetensorsError(file, "__metadata__ must map strings to strings");
          metadata = v as Record<string, string>;
          continue;
        }
        const t = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
        if (!t || typeof t !== "object") throw new SafetensorsError(file, "its entry is not an object", name);
        if (typeof t.dtype !== "string" || !(t.dtype in BYTES)) throw new SafetensorsError(file, `unsupported dtype ${JSON.stringify(t.dtype)} (supported: ${Object.keys(BYTES).join(", ")})`, name);
        if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new SafetensorsError(file, `shape ${JSON.stringify(t.shape)} is not a list of non-negative integers`, name);
        const off = t.data_offsets;
        if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isSafeInteger(d) && d >= 0) || off[1] < off[0]) {
          throw new SafetensorsError(file, `data_offsets ${JSON.stringify(off)} must be [begin, end] with 0 <= begin <= end`, name);
        }
        const dtype = t.dtype as SafeDType, shape = t.shape as number[];
        const want = shape.reduce((a, b) => a * b, 1) * BYTES[dtype];
        if (off[1] - off[0] !== want) throw new SafetensorsError(file, `holds ${off[1] - off[0]} bytes, but ${dtype} of shape [${shape.join(", ")}] takes ${want}`, name);
        if (off[1] > dataBytes) throw new SafetensorsError(file, `data [${off[0]}, ${off[1]}) ends past the ${dataBytes} bytes of data in the file (truncated?)`, name);
        tensors.set(name, { name, dtype, shape, begin: off[0], end: off[1] });
      }
      const sorted = [...tensors.values()].sort((a, b) => a.begin - b.begin);
      for (let i = 1; i < sorted.length; i++) {
        if (sorted[i].begin < sorted[i - 1].end) throw new SafetensorsError(file, `its data overlaps tensor '${sorted[i - 1].name}'`, sorted[i].name);
      }
      this.tensors = tensors;
      this.metadata = metadata;
    } catch (e) {
      closeSync(fd);
      this.fd = -1;
      throw e;
    }
  }

  /** The tensor's raw bytes. */
  bytes(name: string): Buffer {
    const t = this.info(name);
    const buf = Buffer.alloc(t.end - t.begin);
    let at = 0;
    while (at < buf.length) {
      const got = readSync(this.fd, buf, at, buf.length - at, this.dataStart + t.begin + at);
      if (got <= 0) throw new SafetensorsError(this.file, `read ended after ${at} of ${buf.length} bytes (the file changed or was truncated)`, name);
      at += got;
    }
    return buf;
  }

  /** A floating-point tensor (F32, F16, BF16, F64) as float32 values. */
  float32(name: string): Float32Array {
    const t = this.info(name);
    const b = this.bytes(name);
    const n = b.length / BYTES[t.dtype];
    const out = new Float32Array(n);
    switch (t.dtype) {
      case "F32": for (let i = 0; i < n; i++) out[i] = b.readFloatLE(4 * i); break;
      case "F64": for (let i = 0; i < n; i++) out[i] = b.readDoubleLE(8 * i); break;
      case "F16": for (let i = 0; i < n; i++) out[i] = halfToFloat(b.readUInt16LE(2 * i)); break;
      case "BF16": { const u = new Uint32Array(out.buffer); for (let i = 0; i < n; i++) u[i] = b.readUInt16LE(2 * i) << 16; break; }
      default: throw new SafetensorsError(this.file, `is ${t.dtype}, not a floating-point tensor`, name);
    }
    return out;
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (!t) throw new SafetensorsError(this.file, "not in the file", name);
    if (this.fd < 0) throw new SafetensorsError(this.file, "the file is closed", name);
    return t;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** IEEE half (binary16) bits to a number. */
export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Write float32 tensors (name -> [shape, values]) as a safetensors file, dtype F32, F16 or BF16 (rounded to nearest even). */
export function writeSafetensors(file: string, tensors: Record<string, { shape: readonly number[]; data: Float32Array }>, dtype: "F32" | "F16" | "BF16" = "F32", metadata?: Record<string, string>): void {
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  const parts: Buffer[] = [];
  let at = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const n = t.data.length, eb = BYTES[dtype];
    if (n !== t.shape.reduce((a, b) => a * b, 1)) throw new Error(`writeSafetensors: '${name}' has ${n} values for shape [${t.shape.join(", ")}]`);
    const b = Buffer.alloc(n * eb);
    if (dtype === "F32") for (let i = 0; i < n; i++) b.writeFloatLE(t.data[i], 4 * i);
    else if (dtype === "BF16") {
      const u = new Uint32Array(t.data.buffer, t.data.byteOffset, n);
      for (let i = 0; i < n; i++) { const x = u[i]; b.writeUInt16LE((x & 0x7fffffff) > 0x7f800000 ? (x >>> 16) | 0x40 : ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff, 2 * i); }
    } else for (let i = 0; i < n; i++) b.writeUInt16LE(floatToHalf(t.data[i]), 2 * i);
    header[name] = { dtype, shape: t.shape, data_offsets: [at, at + b.length] };
    parts.push(b);
    at += b.length;
  }
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const pad = (8 - (json.length % 8)) % 8; // the reference writer pads the header with spaces to 8 bytes
  const hb = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hb.length), 0);
  writeFileSync(file, Buffer.concat([len, hb, ...parts]));
}

/** A number to IEEE half bits, rounded to nearest even (overflow to infinity). */
export function floatToHalf(x: number): number {
  const f = new Float32Array([x]), u = new Uint32Array(f.buffer)[0];
  const s = (u >>> 16) & 0x8000, e = (u >>> 23) & 0xff, m = u & 0x7fffff;
  if (e === 0xff) return s | 0x7c00 | (m ? 0x200 : 0);
  const ue = e - 127 + 15;
  if (ue >= 31) return s | 0x7c00;
  if (ue <= 0) {
    if (ue < -10) return s;
    const mm = m | 0x800000, shift = 14 - ue;
    const half = mm >>> shift, rem = mm & ((1 << shift) - 1), mid = 1 << (shift - 1);
    return s | (half + (rem > mid || (rem === mid && half & 1) ? 1 : 0));
  }
  const half = (ue << 10) | (m >>> 13), rem = m & 0x1fff;
  return s | (half + (rem > 0x1000 || (rem === 0x1000 && half & 1) ? 1 : 0));
}
