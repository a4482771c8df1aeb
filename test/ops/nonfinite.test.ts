// Non-finite constants (issue 19 item 7). SEMANTICS.md: `Infinity`, `-Infinity`, `NaN` (and
// -0), as literals or as specialized `number` parameters, are values like any other on every
// platform, and a NaN scalar matches a NaN specialization. The interp platform used to go
// through program.json, where JSON writes them as null (-0 as 0): the launch crashed with a raw
// TypeError, and NaN- and Infinity-specialized programs shared one artifact key.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pl, ir, ChipWorker, CompiledProgram, RunConfig, full, zeros } from "tspto";
import { Program, mkConst } from "../../src/ir/index.js";
import { parseProgramText, roundTrip } from "../../src/dsl/index.js";

const R = 4, C = 8;

const literals = pl.jit(function literals(a: pl.Tensor, o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>, o3: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [R, C]);
    pl.store(pl.minimum(pl.add(t, Infinity), -Infinity), [0, 0], o1);     // -inf
    pl.store(pl.mul(t, NaN), [0, 0], o2);                                   // NaN
    pl.store(pl.add(pl.full([R, C], pl.FP32, -Infinity), t), [0, 0], o3);   // -inf (an attribute, not an operand)
  });
  return [o1, o2, o3];
});

const scaled = pl.jit(function scaled(a: pl.Tensor, s: number, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), s), [0, 0], out);
  });
  return out;
});

const every = (t: { data: ArrayLike<number | bigint> }, want: number) =>
  Array.from(t.data as ArrayLike<number>).every((v) => Object.is(v, want));

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe.each(["interp", "cpu"] as const)("non-finite constants on %s", (platform) => {
  const cfg = new RunConfig({ platform });

  it("Infinity, -Infinity and NaN literals (operands and attributes) are values", () => {
    const a = full([R, C], 1.5), o1 = zeros([R, C]), o2 = zeros([R, C]), o3 = zeros([R, C]);
    literals(a, o1, o2, o3, cfg);
    expect(every(o1, -Infinity)).toBe(true);
    expect(every(o2, NaN)).toBe(true);
    expect(every(o3, -Infinity)).toBe(true);
  });

  it("a number parameter specialized to NaN, Infinity, -Infinity or -0 launches, each with its own program", () => {
    const a = full([R, C], 2);
    for (const [s, want] of [[NaN, NaN], [Infinity, Infinity], [-Infinity, -Infinity], [-0, -0], [0, 0], [3, 6]] as const) {
      const out = full([R, C], 7);
      scaled(a, s, out, cfg);
      expect(every(out, want), `s = ${s}`).toBe(true);
    }
  });

  it("a compiled program specialized to NaN accepts NaN through every launch form and rejects another value", async () => {
    const a = full([R, C], 2);
    const compiled = scaled.compile(a, NaN, zeros([R, C]), cfg);
    const w = new ChipWorker(cfg);
    try {
      const out = zeros([R, C]);
      w.run(compiled, a, NaN, out);                       // the binder's full path
      expect(every(out, NaN)).toBe(true);
      const h = w.register(compiled), out2 = zeros([R, C]);
      h(a, NaN, out2);
      expect(every(out2, NaN)).toBe(true);
      const out3 = zeros([R, C]);
      await w.runAsync(compiled, a, NaN, out3);
      expect(every(out3, NaN)).toBe(true);
      expect(() => w.run(compiled, a, 1, out)).toThrow(/\[E_SPECIALIZED\] argument 's' \(#2\) of 'scaled' is 1, but the program was compiled for s=NaN/);
      expect(() => w.run(compiled, a, 1n, out)).toThrow(/E_SPECIALIZED/);
      // -0 and 0 are different specializations (the jit keys them apart, so the binder does too)
      const zero = scaled.compile(a, -0, zeros([R, C]), cfg);
      expect(() => w.run(zero, a, 0, out)).toThrow(/is 0, but the program was compiled for s=-0/);
    } finally { w.close(); }
  });

  it("compiled_meta.json keeps a NaN / -Infinity specialization: fromDir reloads and runs it", () => {
    for (const s of [NaN, -Infinity, -0]) {
      const dir = mkdtempSync(join(tmpdir(), "tspto-nonfinite-"));
      dirs.push(dir);
      const a = full([R, C], 2);
      ir.compile(scaled.lower(a, s, zeros([R, C])), { platform, outputDir: dir });
      const meta = JSON.parse(readFileSync(join(dir, "compiled_meta.json"), "utf8"));
      expect(meta.params[1].value).toEqual({ $num: Object.is(s, -0) ? "-0" : String(s) });
      const again = CompiledProgram.fromDir(dir);
      const out = zeros([R, C]);
      again.run(a, s, out, cfg);
      expect(every(out, 2 * s), `s = ${s}`).toBe(true);
    }
  });
});

describe("program JSON holds what JSON cannot", () => {
  it("NaN, ±Infinity and -0 constants and attributes survive toJSON → JSON text → fromJSON", () => {
    const a = full([R, C], 1);
    const p = literals.lower(a, zeros([R, C]), zeros([R, C]), zeros([R, C]));
    const text = JSON.stringify(p.toJSON());
    expect(text.match(/"\$num"/g)).toHaveLength(4); // Infinity, -Infinity, NaN, the attribute's -Infinity
    const q = Program.fromJSON(JSON.parse(text));
    expect(p.structurallyEqual(q)).toBe(true);
    expect(text).toContain('{"$num":"-Infinity"}');
    expect(text).toContain('{"$num":"NaN"}');
    const r = scaled.lower(a, -0, zeros([R, C]));
    const back = Program.fromJSON(JSON.parse(JSON.stringify(r.toJSON())));
    expect(r.structurallyEqual(back)).toBe(true);
    expect(JSON.stringify(r.toJSON())).toContain('{"$num":"-0"}');
  });

  it("the IR text printer and parser round-trip them (operands, full's attribute, -0)", () => {
    const a = full([R, C], 1);
    for (const p of [literals.lower(a, zeros([R, C]), zeros([R, C]), zeros([R, C])), scaled.lower(a, -0, zeros([R, C])), scaled.lower(a, NaN, zeros([R, C]))]) {
      const text = p.asText();
      expect(() => roundTrip(p)).not.toThrow();
      expect(parseProgramText(text).asText()).toBe(text);
    }
    expect(literals.lower(a, zeros([R, C]), zeros([R, C]), zeros([R, C])).asText()).toMatch(/-Infinity/);
  });

  it("a string that looks like a tag is not one, and a malformed constant is an error", () => {
    const p = scaled.lower(full([R, C], 1), 5, zeros([R, C]));
    const j = p.toJSON() as unknown as { functions: { body: unknown[] }[] };
    const s = JSON.stringify(j).replace(/"const":5,/, '"const":{"$num":"5"},');
    expect(s).toContain('"$num":"5"');
    expect(() => Program.fromJSON(JSON.parse(s))).toThrow(/constant \{"\$num":"5"\} is not a number or a boolean/);
  });

  it("-0 is a float: untyped or integer-typed constants never hold it", () => {
    expect(mkConst(-0)).toMatchObject({ dtype: "float32" });
    expect(Object.is(mkConst(-0).value, -0)).toBe(true);
    expect(Object.is(mkConst(-0, "int32").value, 0)).toBe(true);
    expect(Object.is(mkConst(-0, "float16").value, -0)).toBe(true);
  });
});
