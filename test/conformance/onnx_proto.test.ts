// The ONNX protobuf reader on hand-encoded messages (packed and unpacked repeated fields,
// raw data, negative varints, 16-bit floats, attributes of every kind the translators read)
// and, where Debian's libonnx-testdata is installed, on a real model.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readModel, readTensor } from "./onnx_proto.js";
import { ONNX_NODE_DIR } from "./onnx_runner.js";

// ---- a minimal protobuf writer (the test's own)
const varint = (v: bigint | number): number[] => {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  do { let b = Number(x & 0x7fn); x >>= 7n; if (x) b |= 0x80; out.push(b); } while (x);
  return out;
};
const key = (field: number, wt: number) => varint((field << 3) | wt);
const lenField = (field: number, bytes: number[]) => [...key(field, 2), ...varint(bytes.length), ...bytes];
const str = (field: number, s: string) => lenField(field, [...new TextEncoder().encode(s)]);
const f32 = (v: number) => [...new Uint8Array(Float32Array.of(v).buffer)];
const intField = (field: number, v: number | bigint) => [...key(field, 0), ...varint(v)];

describe("ONNX protobuf reader", () => {
  it("a TensorProto with packed floats, unpacked dims and a name", () => {
    const t = readTensor(Uint8Array.from([...intField(1, 2), ...intField(1, 3), ...intField(2, 1), ...lenField(4, [1, 2.5, -3, 4, 0.25, NaN].flatMap(f32)), ...str(8, "x")]));
    expect(t).toMatchObject({ name: "x", dims: [2, 3], dtype: "FLOAT" });
    expect(t.values!.slice(0, 5)).toEqual([1, 2.5, -3, 4, 0.25]);
    expect(t.values![5]).toBeNaN();
  });

  it("int64 data packed and unpacked, negative values as 10-byte varints; raw int32 data; float16 through int32_data", () => {
    const packed = readTensor(Uint8Array.from([...intField(1, 3), ...intField(2, 7), ...lenField(7, [...varint(-1), ...varint(5), ...varint(-(2 ** 40))])]));
    expect(packed.values).toEqual([-1, 5, -(2 ** 40)]);
    const unpacked = readTensor(Uint8Array.from([...intField(1, 2), ...intField(2, 7), ...intField(7, -7), ...intField(7, 9)]));
    expect(unpacked.values).toEqual([-7, 9]);
    const raw = readTensor(Uint8Array.from([...intField(1, 2), ...intField(2, 6), ...lenField(9, [...new Uint8Array(Int32Array.of(-2, 70000).buffer)])]));
    expect(raw).toMatchObject({ dtype: "INT32", values: [-2, 70000] });
    const half = readTensor(Uint8Array.from([...intField(1, 3), ...intField(2, 10), ...lenField(5, [...varint(0x3c00), ...varint(0xc000), ...varint(0x7c00)])]));
    expect(half.values).toEqual([1, -2, Infinity]);
    expect(half.bits16).toEqual([0x3c00, 0xc000, 0x7c00]);
    const bf = readTensor(Uint8Array.from([...intField(1, 1), ...intField(2, 16), ...lenField(9, [0x80, 0x3f])]));
    expect(bf.values).toEqual([1]);
  });

  it("errors: a truncated field, data that does not fill the dims, external data", () => {
    expect(() => readTensor(Uint8Array.from([...key(4, 2), 10, 1, 2]))).toThrow(/truncated length-delimited field/);
    expect(() => readTensor(Uint8Array.from([...intField(1, 4), ...intField(2, 1), ...lenField(4, f32(1))]))).toThrow(/1 values for dims \[4\] \(4 elements\)/);
    expect(() => readTensor(Uint8Array.from([...intField(2, 1), ...lenField(13, str(1, "location"))]))).toThrow(/external file/);
  });

  it("a ModelProto: opset, graph inputs and outputs with shapes, a node with float, int, ints, string and tensor attributes", () => {
    const dim = (v: number) => lenField(1, intField(1, v));
    const vi = (name: string, elem: number, dims: number[]) => [...str(1, name), ...lenField(2, lenField(1, [...intField(1, elem), ...lenField(2, dims.flatMap(dim))]))];
    const attr = (name: string, type: number, body: number[]) => lenField(5, [...str(1, name), ...intField(20, type), ...body]);
    const node = [...str(1, "a"), ...str(1, "b"), ...str(2, "y"), ...str(4, "Gemm"),
      ...attr("alpha", 1, [...key(2, 5), ...f32(0.5)]), ...attr("transA", 2, intField(3, 1)), ...attr("perm", 7, lenField(8, [...varint(1), ...varint(0)])),
      ...attr("mode", 3, lenField(4, [...new TextEncoder().encode("LEFT")])), ...attr("value", 4, lenField(5, [...intField(1, 1), ...intField(2, 1), ...lenField(4, f32(7))]))];
    const graph = [...lenField(1, node), ...lenField(11, vi("a", 1, [3, 4])), ...lenField(11, vi("b", 1, [4, 5])), ...lenField(12, vi("y", 1, [3, 5]))];
    const model = readModel(Uint8Array.from([...intField(1, 8), ...lenField(8, [...str(1, ""), ...intField(2, 13)]), ...lenField(7, graph)]));
    expect(model.opset).toBe(13);
    expect(model.inputs).toEqual([{ name: "a", elemType: "FLOAT", shape: [3, 4] }, { name: "b", elemType: "FLOAT", shape: [4, 5] }]);
    expect(model.outputs[0]).toEqual({ name: "y", elemType: "FLOAT", shape: [3, 5] });
    const n = model.nodes[0];
    expect(n).toMatchObject({ opType: "Gemm", inputs: ["a", "b"], outputs: ["y"] });
    expect(n.attrs.get("alpha")).toEqual({ kind: "float", value: 0.5 });
    expect(n.attrs.get("transA")).toEqual({ kind: "int", value: 1 });
    expect(n.attrs.get("perm")).toEqual({ kind: "ints", value: [1, 0] });
    expect(n.attrs.get("mode")).toEqual({ kind: "string", value: "LEFT" });
    expect(n.attrs.get("value")).toMatchObject({ kind: "tensor", value: { dims: [1], dtype: "FLOAT", values: [7] } });
  });

  it.skipIf(!existsSync(ONNX_NODE_DIR))("reads a real model and its data (test_add)", () => {
    const m = readModel(readFileSync(join(ONNX_NODE_DIR, "test_add", "model.onnx")));
    expect(m.nodes.map((n) => n.opType)).toEqual(["Add"]);
    expect(m.inputs.map((i) => i.shape)).toEqual([[3, 4, 5], [3, 4, 5]]);
    const x = readTensor(readFileSync(join(ONNX_NODE_DIR, "test_add", "test_data_set_0", "input_0.pb")));
    const y = readTensor(readFileSync(join(ONNX_NODE_DIR, "test_add", "test_data_set_0", "input_1.pb")));
    const z = readTensor(readFileSync(join(ONNX_NODE_DIR, "test_add", "test_data_set_0", "output_0.pb")));
    expect(z.dims).toEqual([3, 4, 5]);
    z.values!.forEach((v, i) => expect(v).toBe(Math.fround(x.values![i] + y.values![i])));
  });
});
