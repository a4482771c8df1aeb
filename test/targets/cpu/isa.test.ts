// The ISA path of cpu builds (src/targets/cpu/isa.ts): what a machine's CPU flags give, the
// TSPTO_CPU_ISA override and its errors (a value that is no path, a path the machine lacks), the
// flags each path adds after -march=native, that the build identity (artifact key, disk cache
// key) follows the path, and that the compiler's predefined macros (which pick the prelude's
// matmul kernels) are those of the path: avx2 code has no AVX-512 at all.
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { TsptoConfigError } from "../../../src/ir/index.js";
import { CPU_ISAS, isaFlags, isasOf, selectIsa } from "../../../src/targets/cpu/isa.js";
import { cpuFlags, cpuIsa, cxxFlags, toolchain, toolchainIdentity } from "../../../src/targets/cpu/toolchain.js";
import { cpuKeyParts } from "../../../src/targets/cpu/build.js";

const ZEN4 = "fpu sse sse2 avx f16c fma avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 avx512_vnni avx512vbmi";
const SPR = `${ZEN4} avx512_fp16 amx_bf16 amx_tile amx_int8`;
const HASWELL = "fpu sse sse2 avx f16c fma avx2";
const caught = (f: () => unknown): TsptoConfigError => {
  try { f(); } catch (e) { return e as TsptoConfigError; }
  throw new Error("expected an error");
};
const saved = process.env.TSPTO_CPU_ISA;
afterEach(() => { if (saved === undefined) delete process.env.TSPTO_CPU_ISA; else process.env.TSPTO_CPU_ISA = saved; });

describe("ISA paths from CPU flags", () => {
  it("each path needs its own flags and every lower path's", () => {
    expect(isasOf(SPR, "x64")).toEqual(["amx", "avx512bf16", "avx512", "avx2"]);
    expect(isasOf(ZEN4, "x64")).toEqual(["avx512bf16", "avx512", "avx2"]);
    expect(isasOf(HASWELL, "x64")).toEqual(["avx2"]);
    expect(isasOf("fpu sse sse2", "x64")).toEqual([]);
    expect(isasOf(SPR.replace("avx512_bf16", ""), "x64")).toEqual(["avx512", "avx2"]); // AMX without AVX512-BF16: not the amx path
    expect(isasOf(ZEN4.replace("avx512_vnni", ""), "x64")).toEqual(["avx2"]);
    expect(isasOf(SPR, "arm64")).toEqual([]);
  });
  it("the best path by default; TSPTO_CPU_ISA forces a lower one", () => {
    // "" is unset (undefined would read this process's $TSPTO_CPU_ISA: the suite also runs under one)
    expect(selectIsa(SPR, "", "x64")).toBe("amx");
    expect(selectIsa(ZEN4, "", "x64")).toBe("avx512bf16");
    for (const isa of ["avx512bf16", "avx512", "avx2"] as const) expect(selectIsa(ZEN4, isa, "x64")).toBe(isa);
    expect(selectIsa("fpu", "", "x64")).toBeNull();
    expect(selectIsa(SPR, "", "arm64")).toBeNull();
  });
  it("a value that is no path: E_CONFIG naming the paths, the argument and the fix", () => {
    const e = caught(() => selectIsa(ZEN4, "avx512fp16", "x64"));
    expect(e).toBeInstanceOf(TsptoConfigError);
    expect(e.code).toBe("E_CONFIG");
    expect(e.argument).toBe("TSPTO_CPU_ISA");
    expect(e.message).toContain(`[E_CONFIG] TSPTO_CPU_ISA must be one of amx, avx512bf16, avx512, avx2, got "avx512fp16"`);
    expect(e.message).toContain("hint: unset it to use the best path this machine has (avx512bf16)");
  });
  it("a path the machine lacks: E_CONFIG saying what it lacks and what it has", () => {
    const e = caught(() => selectIsa(ZEN4, "amx", "x64"));
    expect(e).toBeInstanceOf(TsptoConfigError);
    expect(e.code).toBe("E_CONFIG");
    expect(e.message).toContain("[E_CONFIG] TSPTO_CPU_ISA=amx asks for a path this machine does not have (it lacks amx_tile, amx_bf16, amx_int8)");
    expect(e.message).toContain("hint: set TSPTO_CPU_ISA to one of avx512bf16, avx512, avx2 (what this machine has), or unset it");
    const h = caught(() => selectIsa(HASWELL, "avx512", "x64"));
    expect(h.message).toContain("(it lacks avx512f, avx512bw, avx512vl, avx512dq, avx512_vnni)");
    const a = caught(() => selectIsa(SPR, "avx2", "arm64"));
    expect(a.message).toContain("(it lacks an x86-64 CPU (this one is arm64))");
    expect(a.message).toContain("hint: unset TSPTO_CPU_ISA: this machine has none of the paths");
  });
  it("the flags of each path turn off what is above it", () => {
    expect(isaFlags("amx")).toEqual([]);
    expect(isaFlags(null)).toEqual([]);
    expect(isaFlags("avx512bf16")).toEqual(["-mno-amx-tile", "-mno-amx-bf16", "-mno-amx-int8"]);
    expect(isaFlags("avx512")).toEqual(["-mno-amx-tile", "-mno-amx-bf16", "-mno-amx-int8", "-mno-avx512bf16"]);
    expect(isaFlags("avx2")).toEqual(["-mno-amx-tile", "-mno-amx-bf16", "-mno-amx-int8", "-mno-avx512f"]);
  });
});

describe("this machine's builds", () => {
  const have = isasOf(cpuFlags());
  it("an unavailable or unknown TSPTO_CPU_ISA fails the build's flags with E_CONFIG", () => {
    for (const bad of [...CPU_ISAS.filter((i) => !have.includes(i)), "sse4"]) {
      process.env.TSPTO_CPU_ISA = bad;
      expect(() => cxxFlags()).toThrow(TsptoConfigError);
      expect(() => cxxFlags()).toThrow(/\[E_CONFIG\] TSPTO_CPU_ISA/);
    }
  });
  it("the flags, the artifact key and the disk cache identity follow the path", () => {
    delete process.env.TSPTO_CPU_ISA;
    expect(cpuIsa()).toBe(have[0] ?? null);
    const seen = new Map<string, string>();
    for (const isa of have) {
      process.env.TSPTO_CPU_ISA = isa;
      const flags = cxxFlags();
      expect(flags.slice(flags.indexOf("-march=native") + 1, flags.indexOf("-march=native") + 1 + isaFlags(isa).length)).toEqual(isaFlags(isa));
      const id = `${cpuKeyParts().join("|")}#${toolchainIdentity().join("|")}`;
      expect(id).toContain(`isa=${isa}`);
      for (const [other, oid] of seen) {
        expect(cpuKeyParts().join("|"), `${isa} vs ${other}`).not.toBe(oid.split("#")[0]);
        expect(toolchainIdentity().join("|")).not.toBe(oid.split("#")[1]);
      }
      seen.set(isa, id);
    }
  });
  it("the compiler's predefined macros are the path's: avx2 has no AVX-512, avx512 no BF16, avx512bf16 no AMX", () => {
    const tc = toolchain();
    for (const isa of have) {
      process.env.TSPTO_CPU_ISA = isa;
      const flags = cxxFlags().filter((f) => f !== "-shared");
      const r = spawnSync(tc.argv[0], [...tc.argv.slice(1), ...flags, "-dM", "-E", "-x", "c++", "/dev/null"], { encoding: "utf8" });
      expect(r.status).toBe(0);
      const defs = new Set(r.stdout.split("\n").map((l) => l.split(" ")[1]).filter(Boolean));
      expect(defs.has("__AVX2__"), isa).toBe(true);
      expect(defs.has("__AVX512F__"), isa).toBe(isa !== "avx2");
      expect([...defs].some((d) => d.startsWith("__AVX512")), isa).toBe(isa !== "avx2");
      expect(defs.has("__AVX512VNNI__"), isa).toBe(isa !== "avx2");
      expect(defs.has("__AVX512BF16__"), isa).toBe(isa === "avx512bf16" || isa === "amx");
      expect(defs.has("__AMX_TILE__") && defs.has("__AMX_BF16__") && defs.has("__AMX_INT8__"), isa).toBe(isa === "amx");
    }
  });
});
