// `npm install` step: precompile the generated programs' standard headers for the default
// C++ toolchain (src/targets/cpu/toolchain.ts, precompiledHeader). Best effort: never fails the
// install; without it the first compile builds the header, or compiles without one.
import { installPrecompiledHeader } from "../src/targets/cpu/index.js";

try {
  const h = installPrecompiledHeader();
  console.log(h ? `tspto: precompiled header ready (${h}.gch)` : "tspto: no precompiled header (toolchain without gcc PCH support); programs compile without one");
} catch (e) {
  console.log(`tspto: precompiled header skipped (${(e as Error).message})`);
}
