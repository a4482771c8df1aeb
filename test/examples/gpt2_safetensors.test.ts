// examples/gpt2/safetensors.ts: the reader against files the writer makes (F32, F16, BF16), and
// every malformed file is one SafetensorsError naming the file (and the tensor).
import { constants as bufferConstants } from "node:buffer";
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, symlinkSync, truncateSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MAX_ARRAY_LENGTH, SafetensorsError, SafetensorsFile, floatToHalf, halfToFloat, writeSafetensors } from "../../examples/gpt2/safetensors.js";

const dir = mkdtempSync(join(tmpdir(), "tspto-st-"));
const vals = new Float32Array([0, 1, -2.5, 3.140625, 65504, 1e-7, -0.0009765625, 1234.5]);

function caught(f: () => unknown): Error {
  try { f(); } catch (e) { return e as Error; }
  throw new Error("no error");
}
/** A raw file: 8-byte header length, the header (text, bytes, or an object written as JSON), the data. */
function raw(name: string, header: string | Buffer | object, data = Buffer.alloc(0), len?: bigint): string {
  const h = Buffer.isBuffer(header) ? header : Buffer.from(typeof header === "string" ? header : JSON.stringify(header));
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
      ["missing file", () => new SafetensorsFile(join(dir, "none.st")), "none.st: does not exist"],
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

const reader = fileURLToPath(new URL("../../examples/gpt2/safetensors.ts", import.meta.url));
/** Runs ES module `code` in a child node (with tsx) without blocking this worker's event loop; killed after `ms` (a hang is a failure, not a hung suite). */
function child(code: string, args: string[], ms: number): Promise<{ signal: string | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (b: Buffer) => { out += b.toString(); });
    p.stderr.on("data", (b: Buffer) => { out += b.toString(); });
    const timer = setTimeout(() => p.kill("SIGKILL"), ms);
    p.on("error", reject);
    p.on("close", (_status, signal) => { clearTimeout(timer); resolve({ signal, out }); });
  });
}

/** The error of opening `file`, which must be a SafetensorsError whose message is exactly `msg` (one line). */
function refusal(file: string, msg: string, what = msg): void {
  const e = caught(() => new SafetensorsFile(file));
  expect(e, what).toBeInstanceOf(SafetensorsError);
  expect(e.message, what).toBe(msg);
  expect(e.message, what).not.toContain("\n");
}
const t = (begin: number, end: number, dtype = "U8") => ({ dtype, shape: [end - begin], data_offsets: [begin, end] });

describe("safetensors reader: what the file is", () => {
  it("a directory, a device (through a link) or a link loop is one line naming the file; a link to a regular file is read", () => {
    const d = mkdtempSync(join(tmpdir(), "tspto-st-kind-"));
    mkdirSync(join(d, "model.safetensors"));
    refusal(join(d, "model.safetensors"), `${join(d, "model.safetensors")}: is a directory, not a regular file; not read`);
    symlinkSync("/dev/zero", join(d, "zero.st"));
    refusal(join(d, "zero.st"), `${join(d, "zero.st")}: is a character device, not a regular file; not read`);
    symlinkSync(join(d, "loop.st"), join(d, "loop.st"));
    refusal(join(d, "loop.st"), `${join(d, "loop.st")}: cannot be opened: its symbolic links lead in a loop (ELOOP)`);
    const real = raw("linked.st", { a: t(0, 2) }, Buffer.from([7, 9]));
    symlinkSync(real, join(d, "link.st"));
    const f = new SafetensorsFile(join(d, "link.st"));
    expect([...f.bytes("a")]).toEqual([7, 9]);
    f.close();
  });

  it("a FIFO, directly or through a link, is refused at once (in a child, killed if the open blocks)", async (ctx) => {
    const d = mkdtempSync(join(tmpdir(), "tspto-st-fifo-"));
    const mk = spawnSync("mkfifo", [join(d, "p.st")], { encoding: "utf8" });
    ctx.skip(!!mk.error || mk.status !== 0, `no mkfifo here (${mk.error?.message ?? mk.stderr}); the directory and device cases cover the kind check`);
    symlinkSync(join(d, "p.st"), join(d, "to-p.st"));
    const code = `const { SafetensorsFile } = await import(${JSON.stringify(reader)}); for (const p of process.argv.slice(1)) { try { new SafetensorsFile(p); console.log("read"); } catch (e) { console.log(e.message); } }`;
    const r = await child(code, [join(d, "p.st"), join(d, "to-p.st")], 30_000);
    expect(r.signal, `the open blocked on the FIFO (killed at the timeout): ${r.out}`).toBeNull();
    expect(r.out.trim().split("\n")).toEqual([
      `${join(d, "p.st")}: is a FIFO (named pipe), not a regular file; not read`,
      `${join(d, "to-p.st")}: is a FIFO (named pipe), not a regular file; not read`,
    ]);
  }, 60_000);
});

describe("safetensors reader: the header", () => {
  const at = (name: string) => join(dir, name);

  it("a tensor named twice, a field given twice, __metadata__ twice, a key twice in metadata: one error each, naming the tensor", () => {
    const one = '{"dtype":"U8","shape":[1],"data_offsets":[0,1]}';
    refusal(raw("dup.st", `{"a":${one},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, Buffer.alloc(2)), `${at("dup.st")}: tensor 'a': appears twice in the header (which of the two is meant?)`);
    refusal(raw("dupf.st", '{"a":{"dtype":"U8","shape":[1],"shape":[2],"data_offsets":[0,1]}}', Buffer.alloc(2)), `${at("dupf.st")}: tensor 'a': its entry gives 'shape' twice`);
    refusal(raw("dupm.st", `{"__metadata__":{},"a":${one},"__metadata__":{"x":"y"}}`, Buffer.alloc(1)), `${at("dupm.st")}: __metadata__ appears twice in the header`);
    refusal(raw("nodt.st", '{"a":{"shape":[1],"data_offsets":[0,1]}}', Buffer.alloc(1)), `${at("nodt.st")}: tensor 'a': its entry has no 'dtype' (an entry holds dtype, shape and data_offsets)`);
    refusal(raw("dupk.st", `{"__metadata__":{"k":"1","k":"2"}}`), `${at("dupk.st")}: the key "k" appears twice in one object of the header`);
  });

  it("a dtype that is a name on Object.prototype is an unsupported dtype, not a size of NaN", () => {
    for (const dtype of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
      refusal(raw("proto.st", { a: { dtype, shape: [1], data_offsets: [0, 4] } }, Buffer.alloc(4)),
        `${at("proto.st")}: tensor 'a': unsupported dtype "${dtype}" (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)`, dtype);
    }
  });

  it("invalid UTF-8 in a name is an error saying where (not a name with U+FFFD in it); a byte-order mark is not JSON", () => {
    const head = Buffer.from('{"h.0.attn');
    const bad = Buffer.concat([head, Buffer.from([0xff, 0x2e]), Buffer.from('w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}')]);
    refusal(raw("utf8.st", bad, Buffer.alloc(1)), `${at("utf8.st")}: the header is not valid UTF-8: byte ${head.length} of it (after "{\\"h.0.attn") does not begin a UTF-8 sequence`);
    // overlong, surrogate and cut-off sequences are invalid too; a valid 4-byte one is read
    for (const [what, bytes] of [["overlong", [0xc0, 0xaf]], ["surrogate", [0xed, 0xa0, 0x80]], ["cut off", [0xe2, 0x82]]] as const) {
      const h = Buffer.concat([Buffer.from('{"x'), Buffer.from(bytes), Buffer.from('":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}')]);
      refusal(raw("utf8b.st", h, Buffer.alloc(1)), `${at("utf8b.st")}: the header is not valid UTF-8: byte 3 of it (after "{\\"x") does not begin a UTF-8 sequence`, what);
    }
    const f = new SafetensorsFile(raw("utf8ok.st", { "emb😀é": t(0, 1) }, Buffer.alloc(1)));
    expect([...f.tensors.keys()]).toEqual(["emb😀é"]);
    f.close();
    refusal(raw("bom.st", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ a: t(0, 1) }))]), Buffer.alloc(1)),
      `${at("bom.st")}: the header is not JSON: unexpected "\ufeff" at character 0, expected a value`);
  });

  it("reads what JSON.parse reads: escapes, \\u escapes and pairs, whitespace, unknown fields of any JSON (skipped), padding", () => {
    const header = ' \t\r\n{ "a\\u00e9\\ud83d\\ude00\\"\\\\\\/\\b\\f\\n\\r\\t" : { "extra": [ 1.5e-3, -0, true, false, null, { "deep": [[], {}] } ], "dtype" : "U8" , "shape" : [ 2 ] , "data_offsets" : [ 0 , 2 ] } ,\n'
      + ' "__metadata__" : { "format" : "pt", "k\\u0041" : "v" }, "b": {"dtype":"F32","shape":[1,1],"data_offsets":[2,6],"n":1E+2} }      ';
    const want = JSON.parse(header) as Record<string, { shape: number[]; data_offsets: number[] }>;
    const f = new SafetensorsFile(raw("esc.st", header, Buffer.alloc(6)));
    expect([...f.tensors.keys()]).toEqual(Object.keys(want).filter((k) => k !== "__metadata__"));
    for (const [name, info] of f.tensors) expect([info.shape, [info.begin, info.end]], name).toEqual([want[name].shape, want[name].data_offsets]);
    expect({ ...f.metadata }).toEqual({ format: "pt", kA: "v" });
    f.close();
  });

  it("what is not JSON is one error saying where", () => {
    const e = (name: string, h: string, msg: string) => refusal(raw(name, h), `${at(name)}: ${msg}`, h);
    e("j1.st", '{"a":{"dtype":"U8","shape":[01],"data_offsets":[0,1]}}', "tensor 'a': the header is not JSON: unexpected \"1\" at character 29, expected ',' or ']' in a list");
    e("j2.st", '{"a":{"dtype":"U8\u0001"}}', "tensor 'a': the header is not JSON: unexpected \"\\u0001\" at character 17, a string holds a raw control character");
    e("j3.st", '{"a":{"dtype":"\\x"}}', "tensor 'a': the header is not JSON: unexpected \"x\" at character 16, a string's escape must be one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
    e("j4.st", '{"a":{"dtype":"U8', "tensor 'a': the header is not JSON: it ends at character 17, inside a string");
    e("j5.st", "{} x", "the header is not JSON: unexpected \"x\" at character 3, expected the end of the header (spaces may pad it)");
    e("j6.st", '{"__metadata__":{},}', "the header is not JSON: unexpected \"}\" at character 19, expected a '\"' starting a key");
    e("j7.st", "[1, 2] x", "the header is not JSON: unexpected \"x\" at character 7, expected the end of the header");
    e("j8.st", "", "the header is not JSON: it ends at character 0, expected a value");
    e("j9.st", '{"a":[1,2,]}', "tensor 'a': the header is not JSON: unexpected \"]\" at character 10, expected a value");
  });

  it("a shape or dtype of any size is shown short: one short line", () => {
    const file = raw("long.st", { a: { dtype: "x".repeat(10_000), shape: [1], data_offsets: [0, 1] } }, Buffer.alloc(1));
    refusal(file, `${file}: tensor 'a': unsupported dtype "${"x".repeat(64)}…" (10000 characters) (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)`);
    const g = raw("longs.st", { a: { dtype: "U8", shape: [...Array(1000).fill(1), -1], data_offsets: [0, 1] } }, Buffer.alloc(1));
    refusal(g, `${g}: tensor 'a': shape [1,1,1,1,1,1,1,1,… (1001 items)] is not a list of non-negative integers`);
    const h = raw("longn.st", `{"${"n".repeat(300)}\\n": {"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`);
    refusal(h, `${h}: tensor '${"n".repeat(200)}'… (301 characters): data [0, 1) ends past the 0 bytes of data in the file (truncated?)`);
  });
});

describe("safetensors reader: what held before stays held (one error naming the file)", () => {
  const at = (name: string) => join(dir, name);
  it("header lengths of 2^63 and past the end, 10^6-deep JSON, offsets past 2^53, NaN / Infinity / 1e400 shapes", () => {
    refusal(raw("l63.st", "{}", Buffer.alloc(0), 2n ** 63n), `${at("l63.st")}: header length 9223372036854775808 exceeds the 2 bytes after it (truncated, or not a safetensors file)`);
    refusal(raw("deep.st", "[".repeat(1e6) + "]".repeat(1e6)), `${at("deep.st")}: the header nests deeper than 64 levels`);
    refusal(raw("deep2.st", `{"a":{"dtype":"F32","shape":${"[".repeat(1e6)}${"]".repeat(1e6)},"data_offsets":[0,0]}}`), `${at("deep2.st")}: tensor 'a': the header nests deeper than 64 levels`);
    refusal(raw("o53.st", '{"a":{"dtype":"U8","shape":[1],"data_offsets":[9007199254740993,9007199254740994]}}', Buffer.alloc(1)),
      `${at("o53.st")}: tensor 'a': data_offsets [9007199254740992,9007199254740994] must be [begin, end] with 0 <= begin <= end`);
    refusal(raw("nan.st", '{"a":{"dtype":"F32","shape":[NaN],"data_offsets":[0,4]}}', Buffer.alloc(4)), `${at("nan.st")}: tensor 'a': the header is not JSON: unexpected "N" at character 29, expected a value`);
    refusal(raw("inf.st", '{"a":{"dtype":"F32","shape":[Infinity],"data_offsets":[0,4]}}', Buffer.alloc(4)), `${at("inf.st")}: tensor 'a': the header is not JSON: unexpected "I" at character 29, expected a value`);
    refusal(raw("e400.st", '{"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}}', Buffer.alloc(4)), `${at("e400.st")}: tensor 'a': shape [Infinity] is not a list of non-negative integers`);
    refusal(raw("big.st", { a: { dtype: "F32", shape: [2 ** 20, 2 ** 20], data_offsets: [0, 2 ** 40] } }), `${at("big.st")}: tensor 'a': holds 1099511627776 bytes, but F32 of shape [1048576, 1048576] takes 4398046511104`);
    refusal(raw("bigger.st", { a: { dtype: "F32", shape: [2 ** 30, 2 ** 30, 2 ** 30], data_offsets: [0, 8] } }), `${at("bigger.st")}: tensor 'a': holds 8 bytes, but F32 of shape [1073741824, 1073741824, 1073741824] takes more than 2^53`);
  });
});

describe("safetensors reader: tensors past 2 GiB (sparse files)", () => {
  it(`over ${bufferConstants.MAX_LENGTH} bytes (one Node buffer): one error naming the tensor, nothing allocated`, () => {
    const n = bufferConstants.MAX_LENGTH + 8;
    const file = raw("huge.st", { big: t(0, n) });
    truncateSync(file, readFileSync(file).length + n);
    const f = new SafetensorsFile(file);
    expect(caught(() => f.bytes("big")).message).toBe(`${file}: tensor 'big': holds ${n} bytes, more than the ${bufferConstants.MAX_LENGTH} one Node buffer can hold; not read`);
    f.close();
    expect(MAX_ARRAY_LENGTH).toBe(bufferConstants.MAX_LENGTH);
  });

  it("over 2 GiB (more than one read takes): read whole, in pieces, each byte where it belongs (in a child: 2 GiB, seconds of reading)", async () => {
    const n = 2 ** 31 + 16; // readSync reads at most 2^31 - 1 bytes at once
    const file = raw("twogig.st", { pad: t(0, 3), big: t(3, 3 + n) }, Buffer.from([1, 2, 3]));
    const start = readFileSync(file).length;
    truncateSync(file, start + n);
    const marks: [number, number][] = [[0, 11], [2 ** 30 - 1, 22], [2 ** 30, 33], [2 ** 31 - 1, 44], [2 ** 31, 55], [n - 1, 66], [12345, 0]];
    const fd = openSync(file, "r+");
    for (const [i, v] of marks) writeSync(fd, Buffer.from([v]), 0, 1, start + i);
    closeSync(fd);
    const code = `const { SafetensorsFile } = await import(${JSON.stringify(reader)}); const f = new SafetensorsFile(process.argv[1]);
      const b = f.bytes("big"); console.log(JSON.stringify({ length: b.length, at: ${JSON.stringify(marks.map(([i]) => i))}.map((i) => b[i]), pad: [...f.bytes("pad")] }));`;
    const r = await child(code, [file], 300_000);
    expect(r.signal, r.out).toBeNull();
    expect(JSON.parse(r.out)).toEqual({ length: n, at: marks.map(([, v]) => v), pad: [1, 2, 3] });
  }, 330_000);
});

function bf16(v: number): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  const r = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) << 16;
  return new Float32Array(new Uint32Array([r >>> 0]).buffer)[0];
}
