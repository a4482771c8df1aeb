// examples/gpt2/safetensors.ts: the reader against files the writer makes (F32, F16, BF16), and
// every malformed file is one SafetensorsError naming the file (and the tensor).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SafetensorsError, SafetensorsFile, floatToHalf, halfToFloat, writeSafetensors } from "../../examples/gpt2/safetensors.js";

const dir = mkdtempSync(join(tmpdir(), "tspto-st-"));
const vals = new Float32Array([0, 1, -2.5, 3.140625, 65504, 1e-7, -0.0009765625, 1234.5]);

function caught(f: () => unknown): Error {
  try { f(); } catch (e) { return e as Error; }
  throw new Error("no error");
}
/** A raw file: 8-byte header length, the header text, the data. */
function raw(name: string, header: string | object, data = Buffer.alloc(0), len?: bigint): string {
  const h = Buffer.from(typeof header === "string" ? header : JSON.stringify(header));
  const l = Buffer.alloc(8);
  l.writeBigUInt64LE(len ?? BigInt(h.length));
  const file = join(dir, name);
  writeFileSync(file, Buffer.concat([l, h, data]));
  return file;
}

describe("safetensors reader", () => {
  it("reads back F32 exactly, F16 and BF16 rounded to nearest even, with metadata", () => {
    for (const dtype of ["F32", "F16", "BF16"] as const) {
      const file = join(dir, `v_${dtype}.safetensors`);
      writeSafetensors(file, { a: { shape: [2, 4], data: vals }, "h.0.b": { shape: [3], data: new Float32Array([1, 2, 3]) } }, dtype, { format: "pt" });
      const f = new SafetensorsFile(file);
      expect(f.metadata).toEqual({ format: "pt" });
      expect(f.info("a")).toMatchObject({ dtype, shape: [2, 4] });
      const got = Array.from(f.float32("a"));
      const want = Array.from(vals, (v) => (dtype === "F32" ? v : dtype === "F16" ? halfToFloat(floatToHalf(v)) : bf16(v)));
      expect(got).toEqual(want);
      expect(Array.from(f.float32("h.0.b"))).toEqual([1, 2, 3]);
      f.close();
    }
    expect(halfToFloat(floatToHalf(1 + 2 ** -11))).toBe(1);             // a tie: to even
    expect(halfToFloat(floatToHalf(1 + 3 * 2 ** -11))).toBe(1 + 2 ** -9); // a tie: to even (up)
    expect(halfToFloat(floatToHalf(70000))).toBe(Infinity);
    expect(halfToFloat(floatToHalf(2 ** -24))).toBe(2 ** -24);
  });

  it("every malformed file is one error naming the file and, where there is one, the tensor", () => {
    const ok = { a: { dtype: "F32", shape: [2], data_offsets: [0, 8] } };
    const eight = Buffer.alloc(8);
    const cases: [string, () => unknown, string][] = [
      ["short", () => new SafetensorsFile(raw("short.st", "", Buffer.alloc(0), 0n).replace(/$/, "")), ""],
      ["too short", () => { const f = join(dir, "tiny.st"); writeFileSync(f, Buffer.alloc(5)); return new SafetensorsFile(f); }, "tiny.st: 5 bytes: too short for a safetensors file"],
      ["header length", () => new SafetensorsFile(raw("len.st", ok, eight, 1000n)), "len.st: header length 1000 exceeds the"],
      ["not JSON", () => new SafetensorsFile(raw("json.st", "{nope")), "json.st: the header is not JSON"],
      ["not an object", () => new SafetensorsFile(raw("arr.st", "[1, 2]")), "arr.st: the header is not a JSON object"],
      ["dtype", () => new SafetensorsFile(raw("dt.st", { a: { dtype: "F8", shape: [1], data_offsets: [0, 1] } }, Buffer.alloc(1))), "dt.st: tensor 'a': unsupported dtype \"F8\""],
      ["shape", () => new SafetensorsFile(raw("sh.st", { a: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, Buffer.alloc(4))), "sh.st: tensor 'a': shape [-1] is not a list of non-negative integers"],
      ["offsets", () => new SafetensorsFile(raw("off.st", { a: { dtype: "F32", shape: [2], data_offsets: [8, 0] } }, eight)), "off.st: tensor 'a': data_offsets [8,0] must be [begin, end]"],
      ["size", () => new SafetensorsFile(raw("sz.st", { a: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, eight)), "sz.st: tensor 'a': holds 8 bytes, but F32 of shape [3] takes 12"],
      ["truncated", () => new SafetensorsFile(raw("trunc.st", ok, Buffer.alloc(6))), "trunc.st: tensor 'a': data [0, 8) ends past the 6 bytes of data in the file (truncated?)"],
      ["overlap", () => new SafetensorsFile(raw("ov.st", { a: { dtype: "F32", shape: [2], data_offsets: [0, 8] }, b: { dtype: "F32", shape: [1], data_offsets: [4, 8] } }, eight)), "ov.st: tensor 'b': its data overlaps tensor 'a'"],
      ["metadata", () => new SafetensorsFile(raw("md.st", { __metadata__: { n: 1 } })), "md.st: __metadata__ must map strings to strings"],
      ["missing file", () => new SafetensorsFile(join(dir, "none.st")), "none.st: cannot open"],
    ];
    for (const [what, f, msg] of cases.slice(1)) {
      const e = caught(f);
      expect(e, what).toBeInstanceOf(SafetensorsError);
      expect(e.message, what).toContain(msg);
    }
    const f = new SafetensorsFile(raw("ok.st", ok, eight));
    expect(caught(() => f.float32("zz")).message).toContain("ok.st: tensor 'zz': not in the file");
    f.close();
    expect(caught(() => f.bytes("a")).message).toContain("ok.st: tensor 'a': the file is closed");
    // an integer tensor is not read as floats
    const g = new SafetensorsFile(raw("int.st", { i: { dtype: "I32", shape: [2], data_offsets: [0, 8] } }, eight));
    expect(caught(() => g.float32("i")).message).toContain("int.st: tensor 'i': is I32, not a floating-point tensor");
    g.close();
    void readFileSync;
  });
});

function bf16(v: number): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  const r = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) << 16;
  return new Float32Array(new Uint32Array([r >>> 0]).buffer)[0];
}
