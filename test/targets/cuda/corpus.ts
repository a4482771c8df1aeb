// The programs the cuda tests compile: every ported example (examples/*.ts exporting
// main(platform)), the seed program of API.md §1, the tensor-level shape forms
// (test/passes/fixtures/tensor_shapes.ts) and the indexing ops (test/ops/fixtures/indexing.ts). The examples are run once on the interp
// platform with a private disk cache; each specialization they compiled left its lowered
// program (program.json) in that cache, and those are the programs, their memory planned
// again for cuda's facts where interp's plan differs (replanMemory: interp, like cpu, gives
// matmul operands read in place no scratch; the cuda code generator stages them).
import { mkdtempSync, readdirSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { pl, randn, zeros } from "tspto";
import { Program } from "../../../src/ir/index.js";
import { replanMemory } from "../../../src/passes/index.js";
import { cudaTarget } from "../../../src/targets/cuda/index.js";

const forCuda = (p: Program): Program => replanMemory(p, { scratchCapacity: cudaTarget.description.scratchBytes, matmulOperandsInPlace: cudaTarget.description.matmulOperandsInPlace === true });
import { tensorShapePrograms } from "../../passes/fixtures/tensor_shapes.js";
import { indexingPrograms } from "../../ops/fixtures/indexing.js";

const EXAMPLES = fileURLToPath(new URL("../../../examples/", import.meta.url));

export function exampleFiles(): string[] {
  return readdirSync(EXAMPLES).filter((f) => f.endsWith(".ts") && !f.startsWith("_"))
    .filter((f) => /export function main\(/.test(readFileSync(join(EXAMPLES, f), "utf8"))).sort();
}

/**
 * The examples the cuda platform can run: not those with dynamic dimensions (a name in a shape
 * annotation, `pl.Tensor<["B", 64], ...>`), which cuda rejects at compile time (E_DYNAMIC,
 * tested in test/codegen/cuda.test.ts).
 */
export function cudaExampleFiles(): string[] {
  return exampleFiles().filter((f) => !/pl\.Tensor<\[\s*"/.test(readFileSync(join(EXAMPLES, f), "utf8")));
}

/** Runs main(platform) of one example. */
export async function runExample(file: string, platform: string): Promise<void> {
  process.env.TSPTO_EXAMPLES_QUIET = "1";
  const mod = (await import(pathToFileURL(join(EXAMPLES, file)).href)) as { main: (p: string) => void | Promise<void> };
  await mod.main(platform);
}

const ROWS = 128, COLS = 128;
/** API.md §1's kernel, as written there. */
export const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});
export const seedProgram = (): Program => addKernel.lower(randn([ROWS, COLS], { seed: 0 }), randn([ROWS, COLS], { seed: 1 }), zeros([ROWS, COLS]));

/**
 * Every cast rounding mode to the float formats (from float32 and from int32) and non-finite
 * constants (issue 19 items 7, 8): the cuda prelude compiles the cast_modes.ts helpers and
 * the literals of NaN / ±Infinity / -0.
 */
export const castModes = pl.jit(function castModes(x: pl.Tensor, n: pl.Tensor, h: pl.Out<pl.Tensor>, b: pl.Out<pl.Tensor>, f: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [8, 32]);
    const k = pl.load(n, [0, 0], [8, 32]);
    pl.store(pl.cast(t, pl.FP16, "round"), [0, 0], h); pl.store(pl.cast(t, pl.FP16, "floor"), [8, 0], h); pl.store(pl.cast(t, pl.FP16, "ceil"), [16, 0], h);
    pl.store(pl.cast(t, pl.FP16, "trunc"), [24, 0], h); pl.store(pl.cast(k, pl.FP16, "trunc"), [32, 0], h);
    pl.store(pl.cast(t, pl.BF16, "round"), [0, 0], b); pl.store(pl.cast(t, pl.BF16, "floor"), [8, 0], b); pl.store(pl.cast(t, pl.BF16, "ceil"), [16, 0], b);
    pl.store(pl.cast(t, pl.BF16, "trunc"), [24, 0], b); pl.store(pl.cast(k, pl.BF16, "floor"), [32, 0], b);
    pl.store(pl.cast(k, pl.FP32, "round"), [0, 0], f); pl.store(pl.cast(k, pl.FP32, "floor"), [8, 0], f); pl.store(pl.cast(k, pl.FP32, "ceil"), [16, 0], f);
    pl.store(pl.cast(k, pl.FP32, "trunc"), [24, 0], f); pl.store(pl.maximum(pl.mul(pl.add(t, Infinity), NaN), -Infinity), [32, 0], f);
  });
  return f;
});
export const castModesProgram = (): Program => castModes.lower(randn([8, 32], { seed: 2 }), zeros([8, 32], "int32"),
  zeros([40, 32], "float16"), zeros([40, 32], "bfloat16"), zeros([40, 32]));

/** Lowered programs of every example specialization (by cache entry name) plus the seed and the tensor shape forms, planned for cuda. */
export async function corpusPrograms(): Promise<Map<string, Program>> {
  return new Map([...(await loweredCorpus())].map(([n, p]) => [n, forCuda(p)]));
}

/**
 * The corpus as interp lowered it (every example that has no dynamic dimension, the seed, the
 * tensor shape forms); a target plans memory again for its own facts (ir.compile does).
 */
export async function loweredCorpus(): Promise<Map<string, Program>> {
  const cache = mkdtempSync(join(tmpdir(), "tspto-cuda-corpus-"));
  const saved = process.env.TSPTO_CACHE_DIR;
  process.env.TSPTO_CACHE_DIR = cache;
  try {
    for (const f of cudaExampleFiles()) await runExample(f, "interp");
  } finally {
    if (saved === undefined) delete process.env.TSPTO_CACHE_DIR; else process.env.TSPTO_CACHE_DIR = saved;
  }
  const out = new Map<string, Program>();
  for (const d of readdirSync(cache).sort()) {
    const file = join(cache, d, "program.json");
    if (existsSync(file)) out.set(d, Program.fromJSON(JSON.parse(readFileSync(file, "utf8"))));
  }
  out.set("seed_addKernel", seedProgram());
  out.set("castModes", castModesProgram());
  for (const [name, p] of tensorShapePrograms()) out.set(`tensorShapes_${name}`, p);
  for (const [name, p] of indexingPrograms()) out.set(`indexing_${name}`, p);
  return out;
}
