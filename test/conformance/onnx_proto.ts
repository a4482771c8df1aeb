// A small reader of the ONNX protobuf messages the backend node tests use (model.onnx: a
// ModelProto with one graph; test_data_set_*/input_*.pb, output_*.pb: TensorProtos). Field
// numbers from onnx/onnx.proto (ONNX 1.12, MIT license): only the fields a single-node test
// needs are decoded, the rest skipped by wire type. Repeated numeric fields are read packed or
// unpacked, as protobuf parsers must.

/** The protobuf wire format: a cursor over a message's bytes. */
class Wire {
  pos: number;
  constructor(readonly buf: Uint8Array, start = 0, readonly end = buf.length) { this.pos = start; }
  get done(): boolean { return this.pos >= this.end; }
  varint(): bigint {
    let r = 0n, shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new Error("protobuf: truncated varint");
      const b = this.buf[this.pos++];
      r |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return r;
      shift += 7n;
      if (shift > 63n) throw new Error("protobuf: varint longer than 10 bytes");
    }
  }
  int(): number { return Number(BigInt.asIntN(64, this.varint())); }
  bytes(): Uint8Array {
    const n = Number(this.varint());
    if (this.pos + n > this.end) throw new Error("protobuf: truncated length-delimited field");
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  fixed32(): DataView { const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 4); this.pos += 4; return v; }
  fixed64(): DataView { const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8); this.pos += 8; return v; }
  skip(wt: number): void {
    switch (wt) {
      case 0: this.varint(); return;
      case 1: this.pos += 8; return;
      case 2: this.bytes(); return;
      case 5: this.pos += 4; return;
      default: throw new Error(`protobuf: unsupported wire type ${wt}`);
    }
  }
  /** Calls f(field, wireType) for each field; f reads the value or returns false to skip it. */
  fields(f: (field: number, wt: number) => boolean): void {
    while (!this.done) {
      const key = Number(this.varint());
      const field = key >>> 3, wt = key & 7;
      if (!f(field, wt)) this.skip(wt);
    }
    if (this.pos !== this.end) throw new Error("protobuf: field runs past the message end");
  }
  /** A repeated scalar field: packed (wire type 2) or one value (its own wire type). */
  repeated<T>(wt: number, one: (w: Wire) => T, out: T[]): void {
    if (wt !== 2) { out.push(one(this)); return; }
    const b = this.bytes();
    const w = new Wire(b);
    while (!w.done) out.push(one(w));
  }
}
const utf8 = new TextDecoder();
const str = (w: Wire) => utf8.decode(w.bytes());

/** TensorProto.DataType (the ones the tests use). */
export const ONNX_DTYPE: Readonly<Record<number, string>> = {
  1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING", 9: "BOOL",
  10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16",
};

export interface OnnxTensor {
  name: string;
  dims: number[];
  /** ONNX_DTYPE name. */
  dtype: string;
  /** Element values as numbers (float16/bfloat16 decoded; int64/uint64 as Numbers, exact within 2^53); null for strings. */
  values: number[] | null;
  /** The raw 16-bit patterns of a FLOAT16 / BFLOAT16 tensor. */
  bits16?: number[];
}

function f16(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function bf16(h: number): number {
  const dv = new DataView(new ArrayBuffer(4));
  dv.setUint32(0, (h & 0xffff) << 16);
  return dv.getFloat32(0);
}

export function readTensor(buf: Uint8Array, start = 0, end = buf.length): OnnxTensor {
  const w = new Wire(buf, start, end);
  const t: OnnxTensor = { name: "", dims: [], dtype: "UNDEFINED", values: null };
  let dt = 0;
  const floats: number[] = [], ints: number[] = [], int64s: bigint[] = [], doubles: number[] = [], uint64s: bigint[] = [];
  let raw: Uint8Array | null = null, strings = 0, external = false;
  w.fields((field, wt) => {
    switch (field) {
      case 1: w.repeated(wt, (x) => x.int(), t.dims); return true;
      case 2: dt = w.int(); return true;
      case 4: w.repeated(wt, (x) => x.fixed32().getFloat32(0, true), floats); return true;
      case 5: w.repeated(wt, (x) => x.int(), ints); return true;
      case 6: w.bytes(); strings++; return true;
      case 7: w.repeated(wt, (x) => BigInt.asIntN(64, x.varint()), int64s); return true;
      case 8: t.name = str(w); return true;
      case 9: raw = w.bytes(); return true;
      case 10: w.repeated(wt, (x) => x.fixed64().getFloat64(0, true), doubles); return true;
      case 11: w.repeated(wt, (x) => x.varint(), uint64s); return true;
      case 13: external = true; return false;
      default: return false;
    }
  });
  t.dtype = ONNX_DTYPE[dt] ?? `UNKNOWN(${dt})`;
  if (external) throw new Error(`tensor '${t.name}' keeps its data in an external file`);
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (t.dtype === "STRING") { void strings; return t; }
  let vals: number[];
  if (raw) {
    const r = raw as Uint8Array;
    const dv = new DataView(r.buffer, r.byteOffset, r.byteLength);
    const width: Record<string, number> = { FLOAT: 4, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, INT32: 4, INT64: 8, BOOL: 1, FLOAT16: 2, DOUBLE: 8, UINT32: 4, UINT64: 8, BFLOAT16: 2 };
    const wd = width[t.dtype];
    if (!wd) throw new Error(`tensor '${t.name}': raw data of ${t.dtype} is not supported`);
    if (r.byteLength !== n * wd) throw new Error(`tensor '${t.name}': raw data has ${r.byteLength} bytes, ${n} x ${wd} expected`);
    vals = Array.from({ length: n }, (_, i) => {
      const o = i * wd;
      switch (t.dtype) {
        case "FLOAT": return dv.getFloat32(o, true);
        case "UINT8": case "BOOL": return dv.getUint8(o);
        case "INT8": return dv.getInt8(o);
        case "UINT16": case "FLOAT16": case "BFLOAT16": return dv.getUint16(o, true);
        case "INT16": return dv.getInt16(o, true);
        case "INT32": return dv.getInt32(o, true);
        case "UINT32": return dv.getUint32(o, true);
        case "INT64": return Number(dv.getBigInt64(o, true));
        case "UINT64": return Number(dv.getBigUint64(o, true));
        default: return dv.getFloat64(o, true);
      }
    });
  } else {
    switch (t.dtype) {
      case "FLOAT": vals = floats; break;
      case "DOUBLE": vals = doubles; break;
      case "INT64": vals = int64s.map(Number); break;
      case "UINT32": case "UINT64": vals = uint64s.map(Number); break;
      default: vals = ints.map((v) => (t.dtype === "FLOAT16" || t.dtype === "BFLOAT16" || t.dtype === "UINT16" ? v & 0xffff : v));
    }
    if (vals.length !== n) throw new Error(`tensor '${t.name}': ${vals.length} values for dims [${t.dims}] (${n} elements)`);
  }
  if (t.dtype === "FLOAT16" || t.dtype === "BFLOAT16") {
    t.bits16 = vals;
    vals = vals.map(t.dtype === "FLOAT16" ? f16 : bf16);
  }
  t.values = vals;
  return t;
}

export type OnnxAttr =
  | { kind: "float"; value: number } | { kind: "int"; value: number } | { kind: "string"; value: string }
  | { kind: "tensor"; value: OnnxTensor } | { kind: "floats"; value: number[] } | { kind: "ints"; value: number[] }
  | { kind: "strings"; value: string[] } | { kind: "other"; type: number };

export interface OnnxNode { opType: string; domain: string; inputs: string[]; outputs: string[]; attrs: Map<string, OnnxAttr> }
export interface OnnxValueInfo { name: string; elemType: string | null; shape: (number | string)[] | null }
export interface OnnxModel { opset: number; nodes: OnnxNode[]; inputs: OnnxValueInfo[]; outputs: OnnxValueInfo[]; initializers: OnnxTensor[] }

function readAttr(w: Wire, end: number): [string, OnnxAttr] {
  const a = new Wire(w.buf, w.pos, end);
  let name = "", type = 0;
  let f: number | null = null, i: number | null = null, s: string | null = null, t: OnnxTensor | null = null;
  const floats: number[] = [], ints: number[] = [], strings: string[] = [];
  a.fields((field, wt) => {
    switch (field) {
      case 1: name = str(a); return true;
      case 20: type = a.int(); return true;
      case 2: f = a.fixed32().getFloat32(0, true); return true;
      case 3: i = a.int(); return true;
      case 4: s = str(a); return true;
      case 5: { const b = a.bytes(); t = readTensor(b); return true; }
      case 7: a.repeated(wt, (x) => x.fixed32().getFloat32(0, true), floats); return true;
      case 8: a.repeated(wt, (x) => x.int(), ints); return true;
      case 9: strings.push(str(a)); return true;
      default: return false;
    }
  });
  w.pos = end;
  switch (type) {
    case 1: return [name, { kind: "float", value: f ?? 0 }];
    case 2: return [name, { kind: "int", value: i ?? 0 }];
    case 3: return [name, { kind: "string", value: s ?? "" }];
    case 4: return [name, { kind: "tensor", value: t! }];
    case 6: return [name, { kind: "floats", value: floats }];
    case 7: return [name, { kind: "ints", value: ints }];
    case 8: return [name, { kind: "strings", value: strings }];
    default: return [name, { kind: "other", type }];
  }
}

function readNode(b: Uint8Array): OnnxNode {
  const w = new Wire(b);
  const n: OnnxNode = { opType: "", domain: "", inputs: [], outputs: [], attrs: new Map() };
  w.fields((field) => {
    switch (field) {
      case 1: n.inputs.push(str(w)); return true;
      case 2: n.outputs.push(str(w)); return true;
      case 4: n.opType = str(w); return true;
      case 7: n.domain = str(w); return true;
      case 5: { const len = Number(w.varint()); const [k, v] = readAttr(w, w.pos + len); n.attrs.set(k, v); return true; }
      default: return false;
    }
  });
  return n;
}

function readValueInfo(b: Uint8Array): OnnxValueInfo {
  const w = new Wire(b);
  const v: OnnxValueInfo = { name: "", elemType: null, shape: null };
  w.fields((field) => {
    if (field === 1) { v.name = str(w); return true; }
    if (field !== 2) return false;
    const tw = new Wire(w.bytes()); // TypeProto
    tw.fields((tf) => {
      if (tf !== 1) return false; // tensor_type only
      const tt = new Wire(tw.bytes());
      tt.fields((ef) => {
        if (ef === 1) { v.elemType = ONNX_DTYPE[tt.int()] ?? null; return true; }
        if (ef !== 2) return false;
        v.shape = [];
        const sh = new Wire(tt.bytes());
        sh.fields((sf) => {
          if (sf !== 1) return false;
          const dw = new Wire(sh.bytes());
          let d: number | string = "?";
          dw.fields((df) => { if (df === 1) { d = dw.int(); return true; } if (df === 2) { d = str(dw); return true; } return false; });
          v.shape!.push(d);
          return true;
        });
        return true;
      });
      return true;
    });
    return true;
  });
  return v;
}

export function readModel(buf: Uint8Array): OnnxModel {
  const m: OnnxModel = { opset: 0, nodes: [], inputs: [], outputs: [], initializers: [] };
  const w = new Wire(buf);
  w.fields((field) => {
    if (field === 8) { // opset_import
      const ow = new Wire(w.bytes());
      let domain = "", version = 0;
      ow.fields((f) => { if (f === 1) { domain = str(ow); return true; } if (f === 2) { version = ow.int(); return true; } return false; });
      if (domain === "" || domain === "ai.onnx") m.opset = Math.max(m.opset, version);
      return true;
    }
    if (field !== 7) return false;
    const gw = new Wire(w.bytes());
    gw.fields((gf) => {
      switch (gf) {
        case 1: m.nodes.push(readNode(gw.bytes())); return true;
        case 5: { const b = gw.bytes(); m.initializers.push(readTensor(b)); return true; }
        case 11: m.inputs.push(readValueInfo(gw.bytes())); return true;
        case 12: m.outputs.push(readValueInfo(gw.bytes())); return true;
        default: return false;
      }
    });
    return true;
  });
  return m;
}
