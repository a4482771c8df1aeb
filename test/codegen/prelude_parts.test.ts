// The prelude's two parts (src/codegen/cpp/prelude.ts): each compiles on its own, the base holds
// no intrinsics header, and preludeFor picks the SIMD part exactly when a program's code calls
// something only that part defines (or writes an intrinsic itself).
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PRELUDE_BASE, PRELUDE_BASE_HEADER, PRELUDE_SIMD, PRELUDE_SIMD_HEADER, preludeFor } from "../../src/codegen/index.js";
import { abiIncludeDir, cxxFlags } from "../../src/targets/cpu/toolchain.js";
import { tmpDir } from "./helpers.js";

const names = (t: string) => new Set(t.replace(/\/\/[^\n]*/g, "").match(/\btspto_\w+/g) ?? []);

describe("the prelude's parts", () => {
  it("each header compiles alone with the production flags; the base includes no <immintrin.h>", () => {
    const dir = tmpDir("prelude-parts");
    for (const [h, text] of [[PRELUDE_BASE_HEADER, PRELUDE_BASE], [PRELUDE_SIMD_HEADER, PRELUDE_SIMD]]) {
      writeFileSync(join(dir, h), text);
      writeFileSync(join(dir, `${h}.cpp`), `#include "${h}"\nextern "C" int f(void) { return 0; }\n`);
      const r = spawnSync("g++", [...cxxFlags().filter((f) => f !== "-shared"), "-fsyntax-only", "-I", abiIncludeDir(), join(dir, `${h}.cpp`)], { encoding: "utf8" });
      expect(r.status, `${h}: ${r.stderr}`).toBe(0);
    }
    expect(PRELUDE_BASE).not.toContain("immintrin");
    expect(PRELUDE_SIMD).toContain("#include <immintrin.h>");
  }, 60_000);

  it("preludeFor: a helper only the SIMD part defines, or an intrinsic, selects it; base helpers do not", () => {
    const base = names(PRELUDE_BASE), simdOnly = [...names(PRELUDE_SIMD)].filter((n) => !base.has(n));
    expect(simdOnly).toEqual(expect.arrayContaining(["tspto_stream_store", "tspto_gemv_bt", "tspto_pack_bt"]));
    for (const n of simdOnly) expect(preludeFor(`  ${n}(x);`).header, n).toBe(PRELUDE_SIMD_HEADER);
    for (const n of ["tspto_expf", "tspto_stream_fence", "tspto_f32_to_bf16", "tspto_bounds_fail"]) expect(preludeFor(`  ${n}(x);`).header, n).toBe(PRELUDE_BASE_HEADER);
    expect(preludeFor("const __m128i v = _mm_loadu_si128(p);").header).toBe(PRELUDE_SIMD_HEADER);
    expect(preludeFor("// tspto_gemv_bt, in a comment of the program\n").header).toBe(PRELUDE_SIMD_HEADER);   // (a mention counts: the safe side)
    expect(preludeFor("int x = 1;").header).toBe(PRELUDE_BASE_HEADER);
  });
});
