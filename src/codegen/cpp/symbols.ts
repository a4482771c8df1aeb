// The C symbols of a lowered program's InCore functions: shared by the cpp generator and the
// targets that name kernels the same way (interp, webgpu), without loading the generator.
import type { Program } from "../../ir/index.js";
import { ident, internal } from "./cexpr.js";

/** The C symbol of each InCore function (`k_<name>`), checking the program is lowered. */
export function kernelSymbols(program: Program): Map<string, string> {
  const symbols = new Map<string, string>();
  const used = new Set<string>(["tspto_entry", "tspto_abi_version"]);
  for (const f of program.functions) {
    if (f.name === program.entry) continue;
    if (f.fnKind !== "incore") {
      internal(`function '${f.name}' is ${f.fnKind}; a lowered program has one orchestration function and InCore functions`, f.span,
        "run the full pass pipeline (inline, outline) before code generation");
    }
    let sym = `k_${ident(f.name)}`;
    for (let k = 2; used.has(sym); k++) sym = `k_${ident(f.name)}_${k}`;
    used.add(sym);
    symbols.set(f.name, sym);
  }
  return symbols;
}
