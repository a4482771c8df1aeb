// Region dependencies end to end: tasks declare the tensor windows they touch, so a loop of
// two pl.at scopes over disjoint 64-row windows has independent tasks (deps.json: the widest
// layer holds every first-scope task), and the results with 1 and 2 core threads are
// identical to the interpreter's. Column blocks (non-contiguous windows) are independent
// too; a reader of a band that straddles two blocks waits for both.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pl, ir, ChipWorker, RunConfig, randn, zeros, tensor, type HostTensor } from "tspto";

const R = 1024, C = 256, B = 64;

const twoScopes = pl.jit(function twoScopes(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, R, B)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [B, C]);
      pl.store(pl.exp(pl.mul(t, 0.5)), [r, 0], mid);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(mid, [r, 0], [B, C]);
      pl.store(pl.sub(t, 1), [r, 0], out);
    });
  }
  return out;
});

const CB = 64;
/** Column blocks written independently, then row bands read across two neighbouring blocks. */
const columns = pl.jit(function columns(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  for (const c of pl.range(0, C, CB)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [0, c], [R, CB]);
      pl.store(pl.mul(t, 3), [0, c], mid);
    });
  }
  for (const c of pl.range(0, C - CB, CB)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(mid, [0, c + CB / 2], [R, CB]);
      pl.store(pl.add(t, 1), [0, c], out);
    });
  }
  return out;
});

const dirs: string[] = [];
const workers: ChipWorker[] = [];
const saved = process.env.TSPTO_CORE_THREADS;
afterAll(() => {
  for (const w of workers) w.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  if (saved === undefined) delete process.env.TSPTO_CORE_THREADS; else process.env.TSPTO_CORE_THREADS = saved;
});

const clone = (t: HostTensor) => tensor(t.data.slice() as never, { shape: t.shape, dtype: t.dtype });

interface Deps { tasks: { id: number; kernel: string }[]; edges: { from: number; to: number; tensor: string }[] }
/** Tasks per layer (layer = longest dependency path reaching the task). */
function layers(d: Deps): number[] {
  const layer = new Map<number, number>();
  for (const t of d.tasks) layer.set(t.id, 0);
  const sorted = [...d.edges].sort((x, y) => x.to - y.to);
  for (const e of sorted) layer.set(e.to, Math.max(layer.get(e.to)!, layer.get(e.from)! + 1));
  const counts: number[] = [];
  for (const l of layer.values()) counts[l] = (counts[l] ?? 0) + 1;
  return counts;
}

function run(fn: typeof twoScopes, make: () => HostTensor[]): { deps: Deps[]; outs: HostTensor[][] } {
  const dir = mkdtempSync(join(tmpdir(), "tspto-regions-"));
  dirs.push(dir);
  const ref = make();
  const interp = ir.compile(fn.lower(...ref), { platform: "interp" });
  process.env.TSPTO_CORE_THREADS = "1";
  const wi = new ChipWorker(new RunConfig({ platform: "interp" }));
  workers.push(wi);
  wi.run(interp, ...ref);
  const compiled = ir.compile(fn.lower(...make()), { platform: "cpu", outputDir: dir });
  const deps: Deps[] = [];
  const outs: HostTensor[][] = [ref];
  for (const n of [1, 2]) {
    process.env.TSPTO_CORE_THREADS = String(n);
    const w = new ChipWorker(new RunConfig({ platform: "cpu", enableDepGen: true }));
    workers.push(w);
    const args = make();
    w.run(compiled, ...args);
    outs.push(args);
    deps.push(JSON.parse(readFileSync(join(dir, "dfx_outputs", "deps.json"), "utf8")) as Deps);
  }
  return { deps, outs };
}

describe("region dependencies", () => {
  it("two pl.at scopes over disjoint 64-row windows: independent tasks, same results on 1 and 2 cores as interp", () => {
    const a = randn([R, C], { seed: 11 });
    const { deps, outs } = run(twoScopes, () => [clone(a), zeros([R, C]), zeros([R, C])]);
    const n = R / B;
    for (const d of deps) {
      expect(d.tasks).toHaveLength(2 * n);
      // each second-scope task waits only for the first-scope task of its own rows
      expect(d.edges).toHaveLength(n);
      for (const e of d.edges) {
        expect(e.to).toBe(e.from + 1);
        expect(e.tensor).toBe("mid");
      }
      expect(layers(d)).toEqual([n, n]);
      expect(Math.max(...layers(d))).toBeGreaterThan(1);
    }
    const [ref, one, two] = outs;
    for (const k of [1, 2]) {
      expect(Array.from(one[k].data as Float32Array)).toEqual(Array.from(two[k].data as Float32Array));
    }
    // exp is the prelude's tspto_expf (<= 1 ulp from interp's exp rounded to float32)
    const r = ref[2].data as Float32Array, g = one[2].data as Float32Array;
    let worst = 0;
    for (let i = 0; i < r.length; i++) worst = Math.max(worst, Math.abs(r[i] - g[i]) / Math.max(1, Math.abs(r[i])));
    expect(worst).toBeLessThan(1e-6);
  });

  it("column windows: blocks are independent; a reader straddling two blocks waits for both", () => {
    const a = randn([R, C], { seed: 12 });
    const { deps, outs } = run(columns as never as typeof twoScopes, () => [clone(a), zeros([R, C]), zeros([R, C])]);
    const nw = C / CB, nr = C / CB - 1;
    for (const d of deps) {
      expect(d.tasks).toHaveLength(nw + nr);
      const want: string[] = [];
      for (let j = 0; j < nr; j++) want.push(`${j}>${nw + j}`, `${j + 1}>${nw + j}`);
      expect(d.edges.map((e) => `${e.from}>${e.to}`).sort()).toEqual(want.sort());
      expect(layers(d)).toEqual([nw, nr]);
    }
    const [ref, one, two] = outs;
    for (const k of [1, 2]) {
      expect(Array.from(one[k].data as Float32Array)).toEqual(Array.from(ref[k].data as Float32Array));
      expect(Array.from(two[k].data as Float32Array)).toEqual(Array.from(ref[k].data as Float32Array));
    }
  });
});
