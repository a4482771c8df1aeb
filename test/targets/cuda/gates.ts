// Static gates of generated CUDA (no GPU needed): what `ptxas -v` reports per kernel (registers,
// spills, stack, shared memory), ptxas's C7510 (wgmma serialized across a function boundary),
// and the PTX instruction classes a kernel must hold. Used by test/targets/cuda/static_gates.test.ts.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NVCC_FLAGS } from "../../../src/targets/cuda/toolchain.js";

export interface KernelUse { name: string; registers: number; spillStores: number; spillLoads: number; stack: number; smem: number }

/** Per-kernel resource use from `ptxas -v` output (entry functions only). */
export function parsePtxasInfo(out: string): Map<string, KernelUse> {
  const res = new Map<string, KernelUse>();
  const lines = out.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const fm = /Function properties for (\S+)/.exec(lines[i]);
    if (!fm) continue;
    const name = fm[1];
    const props = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(lines[i + 1] ?? "");
    const used = /Used (\d+) registers(.*)/.exec(lines[i + 2] ?? "");
    if (!props || !used) continue; // a device function (no "Used" line of its own)
    const smem = /(\d+) bytes smem/.exec(used[2]);
    res.set(name, { name, registers: Number(used[1]), stack: Number(props[1]), spillStores: Number(props[2]), spillLoads: Number(props[3]), smem: smem ? Number(smem[1]) : 0 });
  }
  return res;
}

export interface Budget { registers: number; smem: number }

/** What breaks a kernel's budget or the gates: spills, registers / shared memory over budget, C7510. */
export function gateFailures(ptxasOut: string, budgets: ReadonlyMap<string, Budget>, dynamicShared: ReadonlyMap<string, number> = new Map()): string[] {
  const fails: string[] = [];
  for (const l of ptxasOut.split(/\r?\n/)) if (/C7510/.test(l)) fails.push(`C7510 (wgmma serialized): ${l.trim()}`);
  const use = parsePtxasInfo(ptxasOut);
  for (const [k, b] of budgets) {
    const u = use.get(k);
    if (!u) { fails.push(`${k}: not in the ptxas output`); continue; }
    if (u.spillStores || u.spillLoads) fails.push(`${k}: ${u.spillStores} bytes spill stores, ${u.spillLoads} bytes spill loads`);
    if (u.registers > b.registers) fails.push(`${k}: ${u.registers} registers, budget ${b.registers}`);
    const smem = u.smem + (dynamicShared.get(k) ?? 0);
    if (smem > b.smem) fails.push(`${k}: ${smem} bytes of shared memory (static ${u.smem} + dynamic), budget ${b.smem}`);
  }
  return fails;
}

/** The text of one entry function in a PTX file (from `.entry name` to the next `.entry`). */
export function ptxEntry(ptx: string, name: string): string {
  const at = ptx.search(new RegExp(`\\.entry\\s+${name}\\b`));
  if (at < 0) return "";
  const next = ptx.indexOf(".entry", at + 6);
  return ptx.slice(at, next < 0 ? undefined : next);
}

export interface Compiled { status: number | null; ptxas: string; ptx: string; cubin: string }

const run = (cmd: string, args: string[], cwd: string) => new Promise<{ status: number | null; output: string }>((res) => {
  const p = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  p.stdout.on("data", (d: Buffer) => { output += d.toString(); });
  p.stderr.on("data", (d: Buffer) => { output += d.toString(); });
  p.on("error", (e) => res({ status: null, output: e.message }));
  p.on("close", (status) => res({ status, output }));
});

/** nvcc: `file` -> cubin (ptxas -v) and PTX for `arch` (sm_90a: -gencode=arch=compute_90a,code=sm_90a), both at once. */
export async function compileForGates(nvcc: string, dir: string, file: string, arch: string): Promise<Compiled> {
  const cc = arch.replace(/^sm_/, "");
  const flags = NVCC_FLAGS.filter((f) => f !== "-fatbin");
  const base = file.replace(/\.cu$/, "");
  const [c, p] = await Promise.all([
    run(nvcc, [...flags, "-cubin", `-gencode=arch=compute_${cc},code=${arch}`, "-Xptxas", "-v", "-o", `${base}.cubin`, file], dir),
    run(nvcc, [...flags, "-ptx", `-arch=compute_${cc}`, "-o", `${base}.ptx`, file], dir),
  ]);
  const ptxFile = join(dir, `${base}.ptx`);
  return {
    status: c.status !== 0 ? c.status : p.status,
    ptxas: `${c.output}${p.output}`,
    ptx: existsSync(ptxFile) ? readFileSync(ptxFile, "utf8") : "",
    cubin: join(dir, `${base}.cubin`),
  };
}

/** Writes `src` to dir/name and compiles it. */
export function compileSource(nvcc: string, dir: string, name: string, src: string, arch: string): Promise<Compiled> {
  writeFileSync(join(dir, name), src);
  return compileForGates(nvcc, dir, name, arch);
}
