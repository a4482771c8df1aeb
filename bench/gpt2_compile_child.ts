// Child process of the compile benchmark (bench/run.ts, row 5f): the six GPT-2-shaped programs
// (bench/gpt2_shaped.ts at GPT-2 small's dimensions) compiled cold in a fresh process, the way
// a model's first call meets them (f.compile, one after another). TSPTO_CACHE_DIR (an empty
// directory) and TSPTO_CXX_JOBS come from the parent. Prints one JSON line: the wall time of
// all six, the C++ compilers' CPU time (children's user + system time), this process's own CPU
// time (parse, passes, codegen, artifacts: the TS side), and the first two per program.
import { readFileSync } from "node:fs";
import { zeros } from "tspto";
import { gpt2Programs, GPT2_SMALL } from "./gpt2_shaped.js";

/** CPU ms of the waited-for children (the compilers) so far (/proc/self/stat cutime + cstime). */
function childCpuMs(): number {
  try {
    const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    return (Number(f[13]) + Number(f[14])) * 10; // clock ticks of 10 ms
  } catch {
    return NaN;
  }
}

const P = gpt2Programs(GPT2_SMALL);
const { D, F, C, V, S, D3 } = P.dims;
const z = (s: number[], dt: "float32" | "int32" = "float32") => zeros(s, dt);
const wte = z([V, D]);
const programs: [string, { compile(...a: unknown[]): unknown }, unknown[]][] = [
  ["embed", P.embed, [wte, z([C, D]), 5, 3, z([1, D])]],
  ["layer", P.layer, [z([S, D]), z([1, D]), z([1, D]), z([D, D3]), z([1, D3]), z([D, D]), z([1, D]), z([1, D]), z([1, D]), z([D, F]), z([1, F]), z([F, D]), z([1, D]), z([C, D]), z([C, D]), z([S, C]), 3, z([S, D])]],
  ["finalNorm", P.finalNorm, [z([S, D]), z([1, D]), z([1, D]), z([S, D])]],
  ["logits", P.logits, [z([S, D]), wte, z([S, V])]],
  ["argmax", P.argmax, [z([S, V]), z([S, 1], "int32")]],
  ["head", P.head, [z([S, D]), z([1, D]), z([1, D]), wte, z([S, V])]],
];
const per: Record<string, { ms: number; cxxCpuMs: number }> = {};
const t0 = performance.now(), c0 = childCpuMs(), u0 = process.cpuUsage();
for (const [name, f, args] of programs) {
  const t = performance.now(), c = childCpuMs();
  f.compile(...args);
  per[name] = { ms: Math.round(performance.now() - t), cxxCpuMs: childCpuMs() - c };
}
const u = process.cpuUsage(u0);
console.log(JSON.stringify({ wallMs: Math.round(performance.now() - t0), cxxCpuMs: childCpuMs() - c0, tsCpuMs: Math.round((u.user + u.system) / 1000), programs: per }));
