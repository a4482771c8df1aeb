// What the webgpu tests share: whether a webgpu device opens here (else the reason the tests
// skip with), and a differential run of one lowered program on webgpu against interp.
import { ChipWorker, RunConfig, ir, randn, assertClose, type HostTensor } from "tspto";
import type { Program } from "../../../src/ir/index.js";
import { dawnInstalled } from "../../../src/targets/webgpu/index.js";

let opened: Promise<string | null> | null = null;

/** null when a webgpu device opens on this machine, else why not (the tests skip and say so). */
export function webgpuUnavailable(): Promise<string | null> {
  opened ??= (async () => {
    if (!dawnInstalled()) return "Dawn's npm package 'webgpu' is not installed (npm install webgpu)";
    const w = new ChipWorker(new RunConfig({ platform: "webgpu" }));
    try {
      await w.initAsync();
      return null;
    } catch (e) {
      return (e as Error).message.split("\n")[0];
    } finally {
      w.close();
    }
  })();
  return opened;
}

/** The name of a describe block, with the skip reason when there is one. */
export const titled = (name: string, why: string | null): string => (why ? `${name} (skipped: ${why})` : name);

const hash = (s: string): number => { let h = 2166136261; for (const c of s) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0; return h % 100000; };

/**
 * Random arguments for a program's entry: a tensor per tensor parameter, the specialized value
 * of a specialized scalar (`values[i]`), a small value per dynamic scalar.
 */
export function argsFor(p: Program, seed: string, values: readonly (number | boolean | undefined)[] = []): unknown[] {
  const base = hash(seed);
  return p.entryFunction.params.map((prm, i) => {
    const t = prm.var.type;
    if (t.kind === "tensor") return randn(t.shape as number[], { seed: base + i, dtype: t.dtype });
    if (values[i] !== undefined) return values[i];
    if (t.kind === "scalar") return t.dtype === "bool" ? true : t.dtype === "float32" || t.dtype === "float16" || t.dtype === "bfloat16" ? 0.75 : 2;
    throw new Error(`parameter ${prm.var.name}: ${t.kind}`);
  });
}

const clone = (a: unknown): unknown => (a && typeof a === "object" && "data" in (a as object) ? (a as HostTensor).clone() : a);

/** Runs `p` on webgpu (awaited) and on interp with the same arguments (random, or `given` by position); compares every Out / InOut tensor. */
export async function agreesWithInterp(p: Program, name: string, gpu: ChipWorker, cpu: ChipWorker, tol?: { rtol: number; atol: number },
  given: Readonly<Record<number, unknown>> = {}): Promise<void> {
  const cw = ir.compile(p, { platform: "webgpu" }), ci = ir.compile(p, { platform: "interp" });
  const args = argsFor(p, name, cw.meta.params.map((x) => x.value)).map((a, i) => (i in given ? given[i] : a));
  const mine = args.map(clone), ref = args.map(clone);
  await gpu.runAsync(cw, ...mine);
  cpu.run(ci, ...ref);
  p.entryFunction.params.forEach((prm, i) => {
    if (prm.var.type.kind !== "tensor" || prm.dir === "in") return;
    const half = prm.var.type.dtype === "float16" || prm.var.type.dtype === "bfloat16";
    const t = tol ?? (half ? { rtol: 2e-2, atol: 2e-2 } : { rtol: 2e-3, atol: 2e-3 });
    try {
      assertClose(mine[i] as HostTensor, ref[i] as HostTensor, t);
    } catch (e) {
      throw new Error(`${name}: output '${prm.var.name}' (${prm.var.type.dtype}) differs from interp: ${(e as Error).message}`);
    }
  });
}
