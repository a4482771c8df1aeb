// Helpers shared by the ported PyPTO examples (not an example itself): the platform to run
// on, running main() when the file is executed directly, and a check that compares a result
// with an independent JavaScript reference and says what was checked.
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { assertClose, tensor, type HostTensor } from "tspto";

export type Platform = "cpu" | "interp" | "cuda" | "webgpu";

/** `TSPTO_PLATFORM` (cpu | interp | cuda | webgpu), default "cpu". */
export function platformFromEnv(): Platform {
  const p = process.env.TSPTO_PLATFORM ?? "cpu";
  if (p !== "cpu" && p !== "interp" && p !== "cuda" && p !== "webgpu") throw new Error(`TSPTO_PLATFORM must be "cpu", "interp", "cuda" or "webgpu", got ${JSON.stringify(p)}`);
  return p;
}

/** Run `main(platform)` when this module is the script node was started with (npx tsx examples/x.ts). */
export function runIfMain(moduleUrl: string, main: (platform: Platform) => void | Promise<void>): void {
  const argv1 = process.argv[1];
  if (!argv1) return;
  let self: string, started: string;
  try {
    self = realpathSync(fileURLToPath(moduleUrl));
    started = realpathSync(argv1);
  } catch {
    return;
  }
  if (self !== started) return;
  Promise.resolve(main(platformFromEnv())).catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}

/** Quiet when run from the test suite (TSPTO_EXAMPLES_QUIET=1). */
export const say = (...xs: unknown[]): void => {
  if (process.env.TSPTO_EXAMPLES_QUIET !== "1") console.log(...xs);
};

/** A float32 host tensor from a JS array (the reference). */
export const ref = (values: ArrayLike<number>, shape: readonly number[]): HostTensor => tensor(Float32Array.from(values), { shape });

/** assertClose(actual, expected, rtol = atol = tol), then print what was checked. */
export function check(what: string, actual: HostTensor, expected: HostTensor, tol: number): void {
  assertClose(actual, expected, { rtol: tol, atol: tol });
  let maxDiff = 0;
  const a = actual.toArray(), e = expected.toArray();
  for (let i = 0; i < a.length; i++) if (Number.isFinite(e[i])) maxDiff = Math.max(maxDiff, Math.abs(a[i] - e[i]));
  say(`  ${what}: ${JSON.stringify(actual.shape)} matches the JS reference (tol ${tol}, max |diff| ${maxDiff.toExponential(2)})`);
}

/** Row-major 2-D matrix product in double precision (the reference for matmul). */
export function matmulRef(a: readonly number[], b: readonly number[], m: number, k: number, n: number): number[] {
  const out = new Array<number>(m * n).fill(0);
  for (let i = 0; i < m; i++) for (let q = 0; q < k; q++) {
    const x = a[i * k + q];
    for (let j = 0; j < n; j++) out[i * n + j] += x * b[q * n + j];
  }
  return out;
}

export const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
