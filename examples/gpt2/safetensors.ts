// A small reader (and writer, for tests and --random-init round trips) of the safetensors format
// Hugging Face checkpoints use: an 8-byte little-endian header length N, N bytes of JSON
// ({ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__"?: {...} }), then the
// data, each tensor's bytes at [begin, end) of it, row-major, little-endian.
// (https://github.com/huggingface/safetensors: the format is the spec; no maintained npm reader
// of local files with checks this strict exists, so this is one, with its tests in
// test/examples/gpt2_safetensors.test.ts.)
//
// Every failure is one SafetensorsError naming the file (and the tensor): a path that is not a
// regular file (a FIFO, a device or a directory is refused at the open, which never blocks), a
// short or truncated file, a header over 100 MB, not UTF-8, not JSON or not the format, a name
// given twice, an unknown dtype, offsets outside the data, overlapping tensors, a byte count that
// does not match the shape, a tensor larger than one Node buffer. Nothing is read past a check.
//
// The header is parsed by a JSON reader of its own (below), in one pass, straight into the
// tensor table: JSON.parse keeps only the last of two equal names, and builds one object of
// every tensor first (a 99 MB header of 1.4 M tensors: 7 to 10 s and 1.1 to 1.3 GB on a busy
// 2-core machine, against 4 s and 0.7 to 0.8 GB here, the Map of the names a good part of it).
import { constants as bufferConstants } from "node:buffer";
import { closeSync, readSync, writeFileSync } from "node:fs";
import { endianness } from "node:os";
import { openRegularFile } from "../../src/artifact/index.js";

export type SafeDType = "F64" | "F32" | "F16" | "BF16" | "I64" | "I32" | "I16" | "I8" | "U8" | "BOOL";
/** Bytes per element; a Map, so that only these names are dtypes ("toString" is not). */
const BYTES: ReadonlyMap<string, number> = new Map<SafeDType, number>([["F64", 8], ["F32", 4], ["F16", 2], ["BF16", 2], ["I64", 8], ["I32", 4], ["I16", 2], ["I8", 1], ["U8", 1], ["BOOL", 1]]);

/**
 * A name as messages show it: in quotes, or as a JSON string where it holds a quote, a backslash
 * or a control character; past 200 characters cut short (one short line whatever the name).
 */
function shown(name: string): string {
  const cut = name.length > 200 ? name.slice(0, 200) : name;
  // eslint-disable-next-line no-control-regex
  const q = /[\u0000-\u001f\u007f-\u009f'\\\u2028\u2029]/.test(cut) ? JSON.stringify(cut) : `'${cut}'`;
  return cut === name ? q : `${q}… (${name.length} characters)`;
}

/** A header value as messages show it: JSON, but numbers as numbers (1e400 is Infinity, not null), lists past 8 items and strings past 64 characters cut short. */
function brief(v: unknown): string {
  if (typeof v === "number") return String(v);
  if (typeof v === "string") return v.length > 64 ? `${JSON.stringify(v.slice(0, 64)).slice(0, -1)}…" (${v.length} characters)` : JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.slice(0, 8).map(brief).join(",")}${v.length > 8 ? `,… (${v.length} items)` : ""}]`;
  return v !== null && typeof v === "object" ? "an object" : String(v);
}

export class SafetensorsError extends Error {
  constructor(readonly file: string, message: string, readonly tensor?: string) {
    super(`${file}: ${tensor !== undefined ? `tensor ${shown(tensor)}: ` : ""}${message}`);
    this.name = "SafetensorsError";
  }
}

export interface TensorInfo { readonly name: string; readonly dtype: SafeDType; readonly shape: readonly number[]; readonly begin: number; readonly end: number }

/** The largest header this reader accepts (the format's own reference implementation uses 100 MB). */
const MAX_HEADER = 100 << 20;
/**
 * The most elements one typed array holds (Node's buffer.constants.MAX_LENGTH is V8's typed array
 * limit: 2^32 on Node 20): the most bytes one tensor's Buffer, and the most values its Float32Array, can have.
 */
export const MAX_ARRAY_LENGTH = bufferConstants.MAX_LENGTH;
const LITTLE_ENDIAN = endianness() === "LE";
let halfs: Float32Array | undefined;
/** Every float16 bit pattern's value (256 KB, made once). */
const halfTable = (): Float32Array => (halfs ??= Float32Array.from({ length: 65536 }, (_, h) => halfToFloat(h)));
/** One readSync reads at most 2 GiB - 1; larger tensors are read in pieces of this size. */
const READ_CHUNK = 1 << 30;

/** Reads `buf.length` bytes at `pos` (in pieces a readSync takes); the count read, short only at the end of the file. */
function readFully(fd: number, buf: Uint8Array, pos: number): number {
  let at = 0;
  while (at < buf.length) {
    const got = readSync(fd, buf, at, Math.min(READ_CHUNK, buf.length - at), pos + at);
    if (got <= 0) break;
    at += got;
  }
  return at;
}

/** An open safetensors file: its tensors' metadata, read eagerly; their data on demand. */
export class SafetensorsFile {
  readonly tensors: ReadonlyMap<string, TensorInfo>;
  readonly metadata: Readonly<Record<string, string>>;
  private fd: number;
  private readonly dataStart: number;

  constructor(readonly file: string) {
    const opened = openRegularFile(file);
    if (!opened.ok) throw new SafetensorsError(file, `${opened.why}${opened.stat ? "; not read" : ""}`);
    const fd = opened.fd;
    this.fd = fd;
    try {
      const size = opened.stat.size;
      if (size < 8) throw new SafetensorsError(file, `${size} bytes: too short for a safetensors file (an 8-byte header length, then the header)`);
      const lenBuf = Buffer.alloc(8);
      if (readFully(fd, lenBuf, 0) < 8) throw new SafetensorsError(file, "the header length could not be read (the file changed or was truncated)");
      const n = lenBuf.readBigUInt64LE(0);
      if (n > BigInt(Math.min(MAX_HEADER, size - 8))) {
        throw new SafetensorsError(file, `header length ${n} exceeds ${size - 8 < MAX_HEADER ? `the ${size - 8} bytes after it (truncated, or not a safetensors file)` : `${MAX_HEADER} bytes`}`);
      }
      const hlen = Number(n);
      const hbuf = Buffer.alloc(hlen);
      if (readFully(fd, hbuf, 8) < hlen) throw new SafetensorsError(file, `the header could not be read whole (the file changed or was truncated)`);
      this.dataStart = 8 + hlen;
      const dataBytes = size - this.dataStart;
      const tensors = new Map<string, TensorInfo>();
      const metadata = parseHeader(file, hbuf, (name, t) => {
        if (tensors.has(name)) throw new SafetensorsError(file, "appears twice in the header (which of the two is meant?)", name);
        if (!t.object) throw new SafetensorsError(file, "its entry is not an object", name);
        for (const k of ["dtype", "shape", "data_offsets"] as const) {
          if (t[k] === undefined) throw new SafetensorsError(file, `its entry has no '${k}' (an entry holds dtype, shape and data_offsets)`, name);
        }
        const eb = typeof t.dtype === "string" ? BYTES.get(t.dtype) : undefined;
        if (eb === undefined) throw new SafetensorsError(file, `unsupported dtype ${brief(t.dtype)} (supported: ${[...BYTES.keys()].join(", ")})`, name);
        if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new SafetensorsError(file, `shape ${brief(t.shape)} is not a list of non-negative integers`, name);
        const off = t.data_offsets;
        if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isSafeInteger(d) && d >= 0) || off[1] < off[0]) {
          throw new SafetensorsError(file, `data_offsets ${brief(off)} must be [begin, end] with 0 <= begin <= end`, name);
        }
        const dtype = t.dtype as SafeDType, shape = t.shape as number[];
        const want = shape.reduce((a, b) => a * b, 1) * eb;
        if (off[1] - off[0] !== want) throw new SafetensorsError(file, `holds ${off[1] - off[0]} bytes, but ${dtype} of shape [${shape.length > 8 ? `${shape.slice(0, 8).join(", ")}, … (${shape.length} dims)` : shape.join(", ")}] takes ${Number.isSafeInteger(want) ? want : "more than 2^53"}`, name);
        if (off[1] > dataBytes) throw new SafetensorsError(file, `data [${off[0]}, ${off[1]}) ends past the ${dataBytes} bytes of data in the file (truncated?)`, name);
        tensors.set(name, { name, dtype, shape, begin: off[0], end: off[1] });
      });
      const sorted = [...tensors.values()].sort((a, b) => a.begin - b.begin);
      for (let i = 1; i < sorted.length; i++) {
        if (sorted[i].begin < sorted[i - 1].end) throw new SafetensorsError(file, `its data overlaps tensor ${shown(sorted[i - 1].name)}`, sorted[i].name);
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
    const n = t.end - t.begin;
    if (n > MAX_ARRAY_LENGTH) throw new SafetensorsError(this.file, `holds ${n} bytes, more than the ${MAX_ARRAY_LENGTH} one Node buffer can hold; not read`, name);
    const buf = Buffer.allocUnsafeSlow(n); // not zeroed first: every byte is read, or the read throws
    const got = readFully(this.fd, buf, this.dataStart + t.begin);
    if (got < n) throw new SafetensorsError(this.file, `read ended after ${got} of ${n} bytes (the file changed or was truncated)`, name);
    return buf;
  }

  /**
   * A floating-point tensor (F32, F16, BF16, F64) as float32 values. F32 is read straight into
   * the result's memory on a little-endian machine (the file's byte order: one copy, no
   * per-value conversion); the 16-bit types are widened from a typed view of the bytes.
   */
  float32(name: string): Float32Array {
    const t = this.info(name);
    const n = (t.end - t.begin) / BYTES.get(t.dtype)!;
    if (t.dtype === "F32" && LITTLE_ENDIAN) {
      if (t.end - t.begin > MAX_ARRAY_LENGTH) throw new SafetensorsError(this.file, `holds ${t.end - t.begin} bytes, more than the ${MAX_ARRAY_LENGTH} one Node buffer can hold; not read`, name);
      const out = new Float32Array(n);
      const got = readFully(this.fd, new Uint8Array(out.buffer), this.dataStart + t.begin);
      if (got < t.end - t.begin) throw new SafetensorsError(this.file, `read ended after ${got} of ${t.end - t.begin} bytes (the file changed or was truncated)`, name);
      return out;
    }
    const b = this.bytes(name);
    const out = new Float32Array(n);
    // (bytes() returns a buffer of its own, at offset 0 of its memory: aligned for any view)
    const u16 = () => (LITTLE_ENDIAN ? new Uint16Array(b.buffer, b.byteOffset, n) : Uint16Array.from({ length: n }, (_, i) => b.readUInt16LE(2 * i)));
    switch (t.dtype) {
      case "F32": for (let i = 0; i < n; i++) out[i] = b.readFloatLE(4 * i); break;
      case "F64": for (let i = 0; i < n; i++) out[i] = b.readDoubleLE(8 * i); break;
      case "F16": { const h = u16(), table = halfTable(); for (let i = 0; i < n; i++) out[i] = table[h[i]]; break; }
      case "BF16": { const h = u16(), u = new Uint32Array(out.buffer); for (let i = 0; i < n; i++) u[i] = h[i] << 16; break; }
      default: throw new SafetensorsError(this.file, `is ${t.dtype}, not a floating-point tensor`, name);
    }
    return out;
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (t === undefined) throw new SafetensorsError(this.file, "not in the file", name);
    if (this.fd < 0) throw new SafetensorsError(this.file, "the file is closed", name);
    return t;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

// ------------------------------------------------------------------ the header's JSON

/**
 * A tensor's entry as the header gives it: the three fields the format has (others are skipped,
 * as the reference reader does); `object` false when the entry is not an object (its value is in
 * `dtype` then). One is reused for every tensor: read it in the callback, keep none of it but its values.
 */
interface Entry { object: boolean; dtype: unknown; shape: unknown; data_offsets: unknown; seen: number }

/** How deep the header's JSON may nest (a tensor's shape is 3 levels down; 10^6 levels is an attack, not a checkpoint). */
const MAX_DEPTH = 64;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const ESCAPES: ReadonlyMap<string | undefined, string> = new Map([['"', '"'], ["\\", "\\"], ["/", "/"], ["b", "\b"], ["f", "\f"], ["n", "\n"], ["r", "\r"], ["t", "\t"]]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/** The offset of the first byte of `b` that does not begin (or continue) a valid UTF-8 sequence, or -1. */
function utf8ErrorAt(b: Uint8Array): number {
  for (let i = 0; i < b.length;) {
    const c = b[i];
    if (c < 0x80) { i++; continue; }
    const [n, lo, hi] = c >= 0xc2 && c <= 0xdf ? [1, 0x80, 0xbf] : c === 0xe0 ? [2, 0xa0, 0xbf] : c === 0xed ? [2, 0x80, 0x9f] : c >= 0xe1 && c <= 0xef ? [2, 0x80, 0xbf]
      : c === 0xf0 ? [3, 0x90, 0xbf] : c >= 0xf1 && c <= 0xf3 ? [3, 0x80, 0xbf] : c === 0xf4 ? [3, 0x80, 0x8f] : [0, 0, 0];
    if (n === 0 || i + n >= b.length) return i; // not a lead byte, or the sequence is cut off by the end
    if (b[i + 1] < lo || b[i + 1] > hi) return i;
    for (let k = 2; k <= n; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return i;
    i += n + 1;
  }
  return -1;
}

/**
 * Reads the header from its bytes: UTF-8 (strict: an invalid sequence is an error, never U+FFFD),
 * JSON (RFC 8259, nothing more; no key twice in one object), one object. Each tensor's entry goes
 * to `tensor` as it is read, in the header's order (the caller checks the names are distinct);
 * returns __metadata__. One pass; no object of all the tensors is built.
 */
function parseHeader(file: string, bytes: Uint8Array, tensor: (name: string, e: Entry) => void): Record<string, string> {
  let s: string;
  try { s = utf8.decode(bytes); } catch {
    const at = utf8ErrorAt(bytes);
    const before = new TextDecoder().decode(bytes.subarray(Math.max(0, at - 48), Math.max(0, at))).slice(-32);
    throw new SafetensorsError(file, `the header is not valid UTF-8: byte ${at} of it (after ${JSON.stringify(before)}) does not begin a UTF-8 sequence`);
  }
  const fail = (message: string, tensor?: string): never => { throw new SafetensorsError(file, message, tensor); };
  let i = 0;
  const ws = (): void => { for (let c = s.charCodeAt(i); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = s.charCodeAt(++i)); };
  const syntax = (what: string, tensor?: string): never =>
    fail(`the header is not JSON: ${i >= s.length ? "it ends" : `unexpected ${JSON.stringify(s[i])}`} at character ${i}, ${what}`, tensor);
  const string = (tensor?: string): string => {
    // at the opening quote
    let out = "", start = ++i;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x22) { out += s.slice(start, i++); return out; }
      if (c === 0x5c) {
        out += s.slice(start, i);
        const e = s[++i], simple = ESCAPES.get(e);
        if (simple !== undefined) { out += simple; i++; }
        else if (e === "u" && /^[0-9a-fA-F]{4}$/.test(s.slice(i + 1, i + 5))) { out += String.fromCharCode(parseInt(s.slice(i + 1, i + 5), 16)); i += 5; }
        else syntax("a string's escape must be one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", tensor);
        start = i;
        continue;
      }
      if (c < 0x20 || Number.isNaN(c)) syntax(Number.isNaN(c) ? "inside a string" : "a string holds a raw control character", tensor);
      i++;
    }
  };
  const value = (depth: number, tensor?: string): unknown => {
    if (depth > MAX_DEPTH) fail(`the header nests deeper than ${MAX_DEPTH} levels`, tensor);
    ws();
    const c = s[i];
    if (c === '"') return string(tensor);
    if (c === "{") {
      const obj: Record<string, unknown> = Object.create(null);
      members(tensor, (key) => {
        if (Object.hasOwn(obj, key)) fail(`the key ${brief(key)} appears twice in one object of the header`, tensor);
        obj[key] = value(depth + 1, tensor);
      });
      return obj;
    }
    if (c === "[") {
      const arr: unknown[] = [];
      i++; ws();
      if (s[i] === "]") { i++; return arr; }
      for (;;) {
        arr.push(value(depth + 1, tensor));
        ws();
        if (s[i] === ",") { i++; continue; }
        if (s[i] === "]") { i++; return arr; }
        syntax("expected ',' or ']' in a list", tensor);
      }
    }
    if (c === "t" && s.startsWith("true", i)) { i += 4; return true; }
    if (c === "f" && s.startsWith("false", i)) { i += 5; return false; }
    if (c === "n" && s.startsWith("null", i)) { i += 4; return null; }
    // a small non-negative integer (every shape and offset): its digits, without the regular expression
    let k = i, v = 0;
    for (let d = s.charCodeAt(k) - 48; d >= 0 && d <= 9 && k - i < 15; d = s.charCodeAt(++k) - 48) v = v * 10 + d;
    const next = s.charCodeAt(k);
    if (k > i && (k === i + 1 || s.charCodeAt(i) !== 48) && !(next >= 48 && next <= 57) && next !== 46 && next !== 101 && next !== 69) { i = k; return v; }
    NUMBER.lastIndex = i;
    if (NUMBER.test(s)) { const v = Number(s.slice(i, NUMBER.lastIndex)); i = NUMBER.lastIndex; return v; }
    return syntax("expected a value", tensor);
  };
  /** An object's members, each key to `member` (which reads its value); `i` at the '{'. */
  const members = (tensor: string | undefined, member: (key: string) => void): void => {
    i++; ws();
    if (s[i] === "}") { i++; return; }
    for (;;) {
      if (s[i] !== '"') syntax("expected a '\"' starting a key", tensor);
      const key = string(tensor);
      ws();
      if (s[i] !== ":") syntax("expected ':' after a key", tensor);
      i++;
      member(key);
      ws();
      if (s[i] === ",") { i++; ws(); continue; }
      if (s[i] === "}") { i++; return; }
      syntax("expected ',' or '}' in an object", tensor);
    }
  };

  ws();
  if (s[i] !== "{") {
    value(1); ws();
    if (i < s.length) syntax("expected the end of the header");
    fail("the header is not a JSON object");
  }
  let metadata: Record<string, string> | undefined;
  const e: Entry = { object: true, dtype: undefined, shape: undefined, data_offsets: undefined, seen: 0 };
  members(undefined, (name) => {
    if (name === "__metadata__") {
      if (metadata !== undefined) fail("__metadata__ appears twice in the header");
      const v = value(2);
      if (!v || typeof v !== "object" || Array.isArray(v) || !Object.values(v).every((x) => typeof x === "string")) fail("__metadata__ must map strings to strings");
      metadata = v as Record<string, string>;
      return;
    }
    ws();
    if (s[i] !== "{") {
      e.object = false; e.dtype = value(2, name); e.shape = e.data_offsets = undefined;
      tensor(name, e);
      return;
    }
    e.object = true; e.dtype = e.shape = e.data_offsets = undefined; e.seen = 0;
    members(name, (key) => {
      const bit = key === "dtype" ? 1 : key === "shape" ? 2 : key === "data_offsets" ? 4 : 0;
      if (bit === 0) { value(3, name); return; }
      if (e.seen & bit) fail(`its entry gives '${key}' twice`, name);
      e.seen |= bit;
      e[key as "dtype"] = value(3, name);
    });
    tensor(name, e);
  });
  ws();
  if (i < s.length) syntax("expected the end of the header (spaces may pad it)");
  return metadata ?? {};
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
    const n = t.data.length, eb = BYTES.get(dtype)!;
    if (n !== t.shape.reduce((a, b) => a * b, 1)) throw new Error(`writeSafetensors: '${name}' has ${n} values for shape [${t.shape.join(", ")}]`);
    const b = Buffer.alloc(n * eb);
    if (dtype === "F32" && LITTLE_ENDIAN) b.set(new Uint8Array(t.data.buffer, t.data.byteOffset, 4 * n));
    else if (dtype === "F32") for (let i = 0; i < n; i++) b.writeFloatLE(t.data[i], 4 * i);
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
