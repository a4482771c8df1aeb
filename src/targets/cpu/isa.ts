// The instruction-set path of cpu builds (issue 21): what the machine has, detected at run time
// from its CPU flags, or the lower path $TSPTO_CPU_ISA asks for. The path decides the compiler
// flags (toolchain.ts: -march=native, minus the extensions above the path), so the generated
// code's `#if defined(__AMX_BF16__)` / `__AVX512BF16__` / `__AVX512VNNI__` / `__AVX512F__`
// branches (the matmul kernels of the prelude) follow it, and it is part of every cache and
// artifact key through those flags. AMX also needs the kernel's tile-data permission, which
// the generated module asks for once (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) and
// falls back to the avx512bf16 code where it is refused.
import { arch } from "node:os";
import { TsptoConfigError } from "../../ir/index.js";

/** The paths, best first. */
export const CPU_ISAS = ["amx", "avx512bf16", "avx512", "avx2"] as const;
export type CpuIsa = (typeof CPU_ISAS)[number];

/** What each path needs of /proc/cpuinfo's flags (all of them; AVX-512 paths also need the lower ones). */
const NEEDS: Record<CpuIsa, readonly string[]> = {
  avx2: ["avx2", "fma", "f16c"],
  avx512: ["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"],
  avx512bf16: ["avx512_bf16"],
  amx: ["amx_tile", "amx_bf16", "amx_int8"],
};

/** The paths a machine with these CPU flags has, best first ("" or a non-x86 machine: none). */
export function isasOf(flags: string, machine: string = arch()): CpuIsa[] {
  if (machine !== "x64") return [];
  const have = new Set(flags.split(/\s+/).filter(Boolean));
  const out: CpuIsa[] = [];
  for (const isa of ["avx2", "avx512", "avx512bf16", "amx"] as const) {
    if (!NEEDS[isa].every((f) => have.has(f))) break; // each path needs the ones below it
    out.unshift(isa);
  }
  return out;
}

/**
 * The path of this process's cpu builds: $TSPTO_CPU_ISA where set (it must name a path the
 * machine has), else the best the machine has; null on a machine with none of them (not x86-64,
 * or without AVX2: -march=native alone).
 */
export function selectIsa(flags: string, env: string | undefined = process.env.TSPTO_CPU_ISA, machine: string = arch()): CpuIsa | null {
  const have = isasOf(flags, machine);
  if (env === undefined || env === "") return have[0] ?? null;
  if (!(CPU_ISAS as readonly string[]).includes(env)) {
    throw new TsptoConfigError("E_CONFIG", `TSPTO_CPU_ISA must be one of ${CPU_ISAS.join(", ")}, got ${JSON.stringify(env)}`,
      undefined, `unset it to use the best path this machine has${have.length ? ` (${have[0]})` : ""}`, { argument: "TSPTO_CPU_ISA" });
  }
  if (!have.includes(env as CpuIsa)) {
    const missing = machine !== "x64" ? [`an x86-64 CPU (this one is ${machine})`]
      : (["avx2", "avx512", "avx512bf16", "amx"] as const).slice(0, ["avx2", "avx512", "avx512bf16", "amx"].indexOf(env) + 1)
        .flatMap((i) => NEEDS[i]).filter((f) => !new Set(flags.split(/\s+/)).has(f));
    throw new TsptoConfigError("E_CONFIG", `TSPTO_CPU_ISA=${env} asks for a path this machine does not have (it lacks ${missing.join(", ")})`,
      undefined, have.length ? `set TSPTO_CPU_ISA to one of ${have.join(", ")} (what this machine has), or unset it` : "unset TSPTO_CPU_ISA: this machine has none of the paths",
      { argument: "TSPTO_CPU_ISA" });
  }
  return env as CpuIsa;
}

/**
 * The compiler flags of a path, after -march=native: the extensions above it turned off, so its
 * code holds none of their instructions (avx2: no AVX-512 at all; -mno-avx512f turns off every
 * AVX-512 subset).
 */
export function isaFlags(isa: CpuIsa | null): string[] {
  const noAmx = ["-mno-amx-tile", "-mno-amx-bf16", "-mno-amx-int8"];
  switch (isa) {
    case "amx": case null: return [];
    case "avx512bf16": return noAmx;
    case "avx512": return [...noAmx, "-mno-avx512bf16"];
    case "avx2": return [...noAmx, "-mno-avx512f"];
  }
}
