// Failures: the C++ compiler failing (E_CXX), metadata validation, programs codegen cannot
// handle (dynamic dims, ops without emitters, unplanned tiles), and emitter coverage.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  BINARY, Program, TsptoCompileError, UNARY, allOps, mkAssign, mkEval, mkFunc, mkReturn, mkVar, tensorT, type Var,
} from "../../src/ir/index.js";
import { EMITTERS, generateCpp } from "../../src/codegen/index.js";
import { validateMeta, type CompiledMeta } from "../../src/artifact/index.js";
import { compileArtifact } from "./helpers.js";
import { c, call, kernel, launch, load, run, seedProgram, singleKernelProgram, store, tensorVar, B, Planner, cleanup, tmpDir } from "./helpers.js";

afterAll(cleanup);

const tmp = (tag: string) => tmpDir(tag);
function catchErr(f: () => unknown): Error & { code?: string; hint?: string } {
  try { f(); } catch (e) { return e as Error & { code?: string; hint?: string }; }
  throw new Error("expected an error");
}

describe("compiler failures", () => {
  const saved = process.env.CXX;
  afterEach(() => { if (saved === undefined) delete process.env.CXX; else process.env.CXX = saved; });

  it("a failing compiler gives E_CXX with its stderr and the generated source's path", () => {
    const dir = tmp("cxx");
    const script = join(dir, "fake-cxx.sh");
    writeFileSync(script, `#!/bin/sh
if [ "$1" = "--version" ]; then echo "fake-cxx 1.0"; exit 0; fi
echo "kernels/program.cpp:42:7: error: the frobnicator exploded" >&2
i=0; while [ $i -lt 100 ]; do echo "note: line $i" >&2; i=$((i+1)); done
exit 1
`);
    chmodSync(script, 0o755);
    process.env.CXX = script;
    const out = join(dir, "artifact");
    const err = catchErr(() => compileArtifact(seedProgram("cxx_fail", 16), { platform: "cpu", packageVersion: "test", outputDir: out }));
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect(err.code).toBe("E_CXX");
    expect(err.message).toContain("kernels/program.cpp:42:7: error: the frobnicator exploded");
    expect(err.message).toContain("exited with code 1");
    const src = join(out, "kernels", "program.cpp");
    expect(err.message).toContain(`generated source: ${src}`);
    expect(err.message).toContain("$CXX");
    expect(err.message).toContain("more lines"); // stderr trimmed
    expect(err.message.split("\n").length).toBeLessThan(80);
    expect(readFileSync(src, "utf8")).toContain("tspto_entry");
    // incomplete: not reused
    expect(existsSync(join(out, "compiled_meta.json"))).toBe(false);
    // with a working compiler the same directory is rebuilt completely
    if (saved === undefined) delete process.env.CXX; else process.env.CXX = saved;
    const ok = compileArtifact(seedProgram("cxx_fail", 16), { platform: "cpu", packageVersion: "test", outputDir: out });
    expect(existsSync(join(ok.outputDir, "build/libprogram.so"))).toBe(true);
  });

  it("invalid generated source reaches the user as E_CXX with the real compiler's message", () => {
    const dir = tmp("cxx2");
    const script = join(dir, "inject.sh");
    // a wrapper that corrupts the source before handing it to the real compiler
    writeFileSync(script, `#!/bin/sh
if [ "$1" = "--version" ]; then exec ${saved ?? "c++"} --version; fi
for last; do :; done
echo "this is not C++;" >> "$last"
exec ${saved ?? "c++"} "$@"
`);
    chmodSync(script, 0o755);
    process.env.CXX = script;
    const err = catchErr(() => compileArtifact(seedProgram("cxx_bad_src", 16), { platform: "cpu", packageVersion: "test", outputDir: join(dir, "a") }));
    expect(err.code).toBe("E_CXX");
    expect(err.message).toMatch(/program\.cpp:\d+:\d+: error/);
    expect(err.message).toContain(join(dir, "a", "kernels", "program.cpp"));
  });

  it("a compiler that crashes (an internal compiler error) gives E_CXX with a hint to report it, not to install a compiler", () => {
    const dir = tmp("cxx_ice");
    const script = join(dir, "ice-cxx.sh");
    writeFileSync(script, `#!/bin/sh
if [ "$1" = "--version" ]; then echo "fake-cxx 1.0"; exit 0; fi
echo "during GIMPLE pass: fre" >&2
echo "kernels/program.cpp:398:17: internal compiler error: in eliminate_stmt, at tree-ssa-sccvn.cc:6459" >&2
echo "Please submit a full bug report, with preprocessed source (by using -freport-bug)." >&2
exit 1
`);
    chmodSync(script, 0o755);
    process.env.CXX = script;
    const err = catchErr(() => compileArtifact(seedProgram("cxx_ice", 16), { platform: "cpu", packageVersion: "test", outputDir: join(dir, "a") }));
    expect(err.code).toBe("E_CXX");
    expect(err.message).toContain("internal compiler error: in eliminate_stmt");
    expect(err.hint).toMatch(/crashed on tspto's generated code.*report it with the generated source/);
    expect(err.hint).not.toContain("install");
    expect(err.message).toContain(join(dir, "a", "kernels", "program.cpp"));
  });

  it("a compiler that does not exist gives E_CXX with a hint", () => {
    process.env.CXX = "/nonexistent/bin/c++";
    const err = catchErr(() => compileArtifact(seedProgram("cxx_missing", 16), { platform: "cpu", packageVersion: "test", outputDir: join(tmp("nocxx"), "a") }));
    expect(err.code).toBe("E_CXX");
    expect(err.message).toContain("/nonexistent/bin/c++");
    expect(err.message).toContain("ENOENT");
    expect(err.message).toContain("hint:");
  });
});

describe("validateMeta", () => {
  const good = (): CompiledMeta => ({
    schema: "tspto-compiled-program", schemaVersion: 1, name: "p", entry: "p", platform: "cpu", backendType: "cpp", runtimeName: "tspto-cpu-sim",
    params: [{ name: "a", kind: "tensor", direction: "in", shape: [4, 8], dtype: "float32" }, { name: "b", kind: "tensor", direction: "out", shape: [4, 8], dtype: "float16" },
      { name: "s", kind: "scalar", direction: "in", dtype: "int64" }],
    outputIndices: [1], returns: [1], hasReturn: true, scratchBytes: 256, kernels: [{ name: "k", symbol: "k_k", scratchBytes: 256 }],
    library: "build/libprogram.so", libraryHash: "a".repeat(64), tspto: "0.1.0", createdAt: "2025-01-01T00:00:00.000Z",
  });
  const F = "/x/compiled_meta.json";

  it("accepts a well-formed document, as text or parsed", () => {
    expect(validateMeta(JSON.stringify(good()), F)).toEqual(good());
    expect(validateMeta(good(), F)).toEqual(good());
  });
  it("rejects non-JSON", () => {
    expect(() => validateMeta("{ nope", F)).toThrow(/^\[E_ARTIFACT\] \/x\/compiled_meta\.json: not valid JSON/);
  });
  it("rejects a missing field", () => {
    const m = good() as Partial<CompiledMeta>;
    delete m.outputIndices;
    expect(() => validateMeta(JSON.stringify(m), F)).toThrow("/x/compiled_meta.json: missing field 'outputIndices'");
    const n = good();
    delete (n.params[0] as { shape?: number[] }).shape;
    expect(() => validateMeta(n, F)).toThrow("/x/compiled_meta.json: missing field 'params[0].shape' (required for tensors)");
  });
  it("rejects a bad dtype with the allowed values", () => {
    const m = good();
    (m.params[1] as { dtype: string }).dtype = "float64";
    expect(() => validateMeta(m, "compiled_meta.json")).toThrow(
      `compiled_meta.json: field 'params[1].dtype' must be one of float32, float16, bfloat16, int8, int16, int32, int64, uint8, bool, got "float64"`);
  });
  it("rejects a wrong or missing schema and a future schema version", () => {
    expect(() => validateMeta({ ...good(), schema: "something-else" }, F)).toThrow(`/x/compiled_meta.json: field 'schema' must be "tspto-compiled-program", got "something-else"`);
    const { schema: _s, ...noSchema } = good();
    expect(() => validateMeta(noSchema, F)).toThrow("/x/compiled_meta.json: missing field 'schema'");
    expect(() => validateMeta({ ...good(), schemaVersion: 2 }, F)).toThrow("/x/compiled_meta.json: field 'schemaVersion' must be 1");
    expect(() => validateMeta([1, 2], F)).toThrow("/x/compiled_meta.json: expected a JSON object");
  });
  it("rejects inconsistent fields", () => {
    expect(() => validateMeta({ ...good(), outputIndices: [0] }, F)).toThrow("field 'outputIndices[0]' must name an out/inout parameter");
    expect(() => validateMeta({ ...good(), returns: [7] }, F)).toThrow("field 'returns[0]' must be a parameter index (< 3), got 7");
    expect(() => validateMeta({ ...good(), libraryHash: "xyz" }, F)).toThrow("field 'libraryHash' must be a sha256 hex digest");
    expect(() => validateMeta({ ...good(), library: "../elsewhere.so" }, F)).toThrow(`field 'library' must be a relative path inside the artifact directory (or null), got "../elsewhere.so"`);
    expect(() => validateMeta({ ...good(), library: null }, F)).toThrow("field 'libraryHash' must be null when 'library' is null");
    expect(() => validateMeta({ ...good(), platform: "CPU!" }, F)).toThrow("field 'platform' must be a platform name");
    expect(() => validateMeta({ ...good(), extra: 1 }, F)).toThrow("/x/compiled_meta.json: unknown field 'extra'");
    expect(() => validateMeta({ ...good(), scratchBytes: -1 }, F)).toThrow("field 'scratchBytes' must be an integer >= 0, got -1");
    const m = good();
    m.params[0].shape = [4, 0];
    expect(() => validateMeta(m, F)).toThrow("field 'params[0].shape[1]' must be an integer >= 1, got 0");
  });
});

describe("programs the cpu generator rejects", () => {
  it("dynamic dimensions: the extents are launch slots after the parameters; -1 and the name in the metadata", () => {
    const a = mkVar("a", tensorT(["n", 64], "float32")), out = mkVar("out", tensorT(["n", 64], "float32"));
    const ka = mkVar("a", a.type), ko = mkVar("out", out.type);
    const b = new B(new Planner());
    const t = b.let("t", load(ka, [c(0), c(0)], [8, 64]));
    b.eval(store(t, [c(0), c(0)], ko));
    const k = kernel("dyn_k", [[ka, "in"], [ko, "out"]], b);
    const entry = mkFunc({ name: "dyn", fnKind: "orchestration", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }], returnTypes: [],
      body: [mkEval(launch(k, [a, out]))] });
    const p = new Program("dyn", "dyn", [entry, k]);
    const src = generateCpp(p).source;
    // the entry reads n after its two parameters; the kernel after its two, before scratch and rt
    expect(src).toMatch(/const int64_t dim_n_\d+ = args\[2\];/);
    expect(src).toMatch(/uint8_t\* const scratch = \(uint8_t\*\)\(intptr_t\)args\[3\];/);
    // the window check compares with the run-time extent
    expect(src).toMatch(/> \(\(dim_n_\d+\) - 8\)/);
    for (const platform of ["cpu", "interp"]) {
      const { meta } = compileArtifact(p, { platform, packageVersion: "t", outputDir: join(tmp(`dyn-${platform}`), "a") });
      expect(meta.params[0].shape).toEqual([-1, 64]);
      expect(meta.params[0].dimNames).toEqual(["n", null]);
    }
  });

  it("an op without a cpu emitter is a clear internal error", () => {
    const a = tensorVar("a", [8, 8]), out = tensorVar("out", [8, 8]);
    const p = singleKernelProgram("no_emitter", [[a, "in"], [out, "out"]], (b, [ka]) => {
      b.let("s", call("tensor.add", [ka, ka]));
    });
    const err = catchErr(() => generateCpp(p));
    expect(err.code).toBe("E_CODEGEN");
    expect(err.message).toContain("no emitter for op 'tensor.add'");
    expect(err.message).toContain("tensor-to-tile");
  });

  it("a tile without a planned address, or beyond the function's scratchBytes, is an internal error", () => {
    const a = tensorVar("a", [8, 8]), out = tensorVar("out", [8, 8]);
    const p = singleKernelProgram("no_addr", [[a, "in"], [out, "out"]], (b, [ka, ko]) => {
      const v = mkVar("t", load(ka, [c(0), c(0)], [8, 8]).type); // addr null
      b.push(mkAssign([v], load(ka, [c(0), c(0)], [8, 8])));
      b.eval(store(v, [c(0), c(0)], ko));
    });
    expect(catchErr(() => generateCpp(p)).message).toContain("tile 't' has no scratch address");
    const a2 = tensorVar("a", [8, 8]), o2 = tensorVar("out", [8, 8]);
    const ka = mkVar("a", a2.type), ko = mkVar("out", o2.type);
    const b = new B(new Planner());
    b.eval(store(b.let("t", load(ka, [c(0), c(0)], [8, 8])), [c(0), c(0)], ko));
    const k = kernel("small_k", [[ka, "in"], [ko, "out"]], b, 64);
    const p2 = new Program("small", "small", [mkFunc({ name: "small", fnKind: "orchestration", params: [{ var: a2, dir: "in" }, { var: o2, dir: "out" }],
      returnTypes: [], body: [mkEval(launch(k, [a2, o2]))] }), k]);
    expect(catchErr(() => generateCpp(p2)).message).toContain("tiles of 'small_k' extend to byte 256 of scratch, but its scratchBytes is 64");
  });

  it("a kernel needing more scratch than the core has fails at run time", () => {
    const a = tensorVar("a", [8, 8]), out = tensorVar("out", [8, 8]);
    const ka = mkVar("a", a.type), ko = mkVar("out", out.type);
    const b = new B(new Planner());
    b.eval(store(b.let("t", load(ka, [c(0), c(0)], [8, 8])), [c(0), c(0)], ko));
    const k = kernel("big_k", [[ka, "in"], [ko, "out"]], b, 2 << 20);
    const p = new Program("big", "big", [mkFunc({ name: "big", fnKind: "orchestration", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }],
      returnTypes: [], body: [mkEval(launch(k, [a, out]))] }), k]);
    const { outputDir, meta } = compileArtifact(p, { platform: "cpu", packageVersion: "t", outputDir: join(tmp("big"), "a") });
    expect(meta.scratchBytes).toBe(2 << 20);
    const r = run(outputDir, [{ tensor: new Float32Array(64).fill(1) }, { tensor: new Float32Array(64) }]);
    expect(r.rc).not.toBe(0);
    expect(r.fails).toEqual(["kernel 'big_k' needs 2097152 bytes of scratch but a core has 1048576"]);
  });

  it("returning a tensor that is not a parameter is a compile error", () => {
    const a = tensorVar("a", [8, 8]);
    const other = mkVar("tmp", tensorT([8, 8], "float32"));
    const entry = mkFunc({ name: "ret", fnKind: "orchestration", params: [{ var: a, dir: "inout" }], returnTypes: [other.type],
      body: [mkAssign([other], a), mkReturn([mkVar("ghost", other.type)])] });
    const err = catchErr(() => compileArtifact(new Program("ret", "ret", [entry]), { platform: "interp", packageVersion: "t", outputDir: join(tmp("ret"), "a") }));
    expect(err.code).toBe("E_RETURN");
    expect(err.message).toContain("returns 'ghost' that is not one of its parameters");
    // an alias of a parameter is fine
    const ok = mkFunc({ name: "ret", fnKind: "orchestration", params: [{ var: a, dir: "inout" }], returnTypes: [other.type],
      body: [mkAssign([other], a), mkReturn([other])] });
    expect(compileArtifact(new Program("ret2", "ret", [ok]), { platform: "interp", packageVersion: "t", outputDir: join(tmp("ret2"), "a") }).meta.returns).toEqual([0]);
  });
});

describe("emitters", () => {
  it("cover the registry's elementwise tables, every tile-level op and every scalar op", () => {
    for (const n of Object.keys(BINARY)) expect(EMITTERS.has(`tile.${n}`), `tile.${n}`).toBe(true);
    for (const n of Object.keys(UNARY)) expect(EMITTERS.has(`tile.${n}`), `tile.${n}`).toBe(true);
    const missing = allOps().filter((o) => o.level !== "tensor" && !o.loweredBy && !EMITTERS.has(o.name)).map((o) => o.name);
    expect(missing).toEqual([]);
  });
  it("the kernel symbol of a function name that is not an identifier is sanitized and unique", () => {
    const mk = (name: string): [Var, ReturnType<typeof kernel>] => {
      const a = tensorVar("a", [8, 8]);
      const b = new B(new Planner());
      b.eval(store(b.let("t", load(a, [c(0), c(0)], [8, 8])), [c(0), c(0)], a));
      return [a, kernel(name, [[a, "inout"]], b)];
    };
    const [, k1] = mk("scale-rows"), [, k2] = mk("scale_rows");
    const x = tensorVar("x", [8, 8]);
    const entry = mkFunc({ name: "main", fnKind: "orchestration", params: [{ var: x, dir: "inout" }], returnTypes: [],
      body: [mkEval(launch(k1, [x])), mkEval(launch(k2, [x]))] });
    const g = generateCpp(new Program("names", "main", [entry, k1, k2]));
    expect(g.kernels.map((k) => k.symbol)).toEqual(["k_scale_rows", "k_scale_rows_2"]);
  });
});
