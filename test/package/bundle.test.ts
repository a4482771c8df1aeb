// Kernels in an application bundle that inlines tspto (esbuild, ESM and CommonJS output): the
// call site is in the bundle, `pl` is renamed to esbuild's namespace object
// (`language_exports.at`), decorators are lowered to helper calls, and in CommonJS output
// `import.meta` is empty. Each bundle runs in a new plain-node process and checks its results
// against JavaScript arithmetic.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const APP = `import { pl, randn, zeros, assertClose } from "tspto";
class Kernels {
  @pl.jit
  static twice(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.mul(pl.load(a, [0, 0], [16, 16]), 2), [0, 0], out); });
    return out;
  }
}
const sub = pl.jit(function sub(a, b, out) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.sub(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16])), [0, 0], out); });
  return out;
});
const A = randn([16, 16], { seed: 21 }), B = randn([16, 16], { seed: 22 });
assertClose(Kernels.twice(A, zeros([16, 16])), A.mul(2), { rtol: 1e-6 });
assertClose(sub(A, B, zeros([16, 16])), A.sub(B), { rtol: 1e-6 });
console.log("bundle ok");
`;

describe("an esbuild bundle that inlines tspto", () => {
  for (const format of ["esm", "cjs"] as const) {
    it(`--format=${format}: finds, parses and runs its kernels`, () => {
      mkdirSync(join(ROOT, ".tspto"), { recursive: true });
      const dir = mkdtempSync(join(ROOT, ".tspto", "bundle-"));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      writeFileSync(join(dir, "app.ts"), APP);
      const outfile = join(dir, format === "esm" ? "app.mjs" : "app.cjs");
      // tsconfig.json's paths map "tspto" to src/index.ts, as node_modules/tspto would be
      execFileSync(join(ROOT, "node_modules/.bin/esbuild"), [join(dir, "app.ts"), "--bundle", "--platform=node", "--target=node20",
        `--format=${format}`, `--outfile=${outfile}`, "--log-level=error"], { cwd: ROOT });
      const bundle = readFileSync(outfile, "utf8");
      expect(bundle).toMatch(/language_exports\d*\.at\(/);           // the renamed namespace is what gets parsed
      expect(bundle).not.toMatch(/@language_exports\d*\.jit/);       // decorators lowered
      const out = execFileSync(process.execPath, [outfile], { cwd: dir, encoding: "utf8", timeout: 90_000 });
      expect(out.trim()).toBe("bundle ok");
    }, 120_000);
  }
});
