// API-misuse fuzzer: a seeded random sequence of calls over workers, tensors, handles,
// configs and programs, valid and invalid. Checks that
//  - every error thrown (or promise rejected) is a TsptoError with a code,
//  - a call that must fail fails, a call that must succeed succeeds with the right numbers,
//  - device bytes in use return to zero once the sequence frees what it allocated.
// Run in a child process (misuse_main.ts) so a crash or hang is caught as such; used by
// test/fuzz/misuse.test.ts (bounded) and scripts/fuzz.ts (long runs).
import {
  ChipWorker, DeviceTensor, HostTensor, RunConfig, TsptoError, ir, pl, tensor, type CompiledProgram, type DType,
  type RegistrationHandle,
} from "../../src/index.js";
import { rng } from "./differential.js";

const R = 8, C = 24, N = R * C;

const fuzzAdd = pl.jit(function fuzzAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.add(a, b));
  });
  return out;
});
const fuzzScale = pl.jit(function fuzzScale(x: pl.Tensor, k: pl.Scalar<pl.INT32>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(x, k));
  });
  return out;
});

const fuzzAddDyn = pl.jit(function fuzzAddDyn(a: pl.Tensor<["M", 24], pl.FP32>, b: pl.Tensor<["M", 24], pl.FP32>, out: pl.Out<pl.Tensor<["M", 24], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.add(a, b));
  });
  return out;
});

export interface MisuseReport {
  seed: number;
  calls: number;
  ok: number;
  /** TsptoErrors by code. */
  errors: Record<string, number>;
  /** Problems: non-TsptoErrors, wrong numbers, wrong outcomes, leaks. Empty = pass. */
  findings: string[];
  asyncLaunches: number;
}

type Outcome = "ok" | "fail" | "any";

function f32(r: () => number, n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.round((r() * 20 - 10) * 8) / 8; // exact sums
  return a;
}
const host = (data: Float32Array, shape = [R, C]) => new HostTensor(data, shape, "float32");
const detach = (buf: ArrayBufferLike) => structuredClone(buf as ArrayBuffer, { transfer: [buf as ArrayBuffer] });

export async function runMisuse(seed: number, calls: number): Promise<MisuseReport> {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const report: MisuseReport = { seed, calls: 0, ok: 0, errors: {}, findings: [], asyncLaunches: 0 };
  const finding = (m: string) => { if (report.findings.length < 50) report.findings.push(`call ${report.calls}: ${m}`); };

  const a0 = host(f32(r, N)), b0 = host(f32(r, N));
  const compiled: Record<string, { add: CompiledProgram; scale: CompiledProgram; dyn: CompiledProgram }> = {};
  for (const platform of ["cpu", "interp"] as const) {
    const cfg = new RunConfig({ platform });
    compiled[platform] = {
      add: fuzzAdd.compile(a0, b0, host(new Float32Array(N)), cfg),
      scale: fuzzScale.compile(a0, 3, host(new Float32Array(N)), cfg),
      dyn: fuzzAddDyn.compile(a0, b0, host(new Float32Array(N)), cfg), // every row count (a dynamic dimension)
    };
  }

  /** inflight: async launches queued that read the tensor (copies into it would race them:
   *  explicit copies are not ordered with queued launches, so the fuzzer does not do that). */
  interface TE { t: DeviceTensor; data: Float32Array; inflight: number }
  interface W { w: ChipWorker; platform: "cpu" | "interp"; tensors: TE[]; handles: RegistrationHandle[] }
  const workers: W[] = [];
  const pending: Promise<void>[] = [];

  const classify = (e: unknown, what: string): void => {
    if (e instanceof TsptoError && typeof e.code === "string" && e.code.startsWith("E_")) {
      report.errors[e.code] = (report.errors[e.code] ?? 0) + 1;
    } else {
      finding(`${what}: threw a non-TsptoError: ${e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)}`);
    }
  };
  /** Runs one call; checks its outcome; `check` validates a successful result. */
  const call = (what: string, expect: Outcome, f: () => unknown, check?: (v: unknown) => string | null): void => {
    report.calls++;
    let v: unknown;
    try {
      v = f();
    } catch (e) {
      classify(e, what);
      if (expect === "ok") finding(`${what}: expected success, threw ${(e as Error).message?.split("\n")[0]}`);
      return;
    }
    if (expect === "fail") { finding(`${what}: expected a TsptoError, succeeded`); return; }
    report.ok++;
    const bad = check?.(v);
    if (bad) finding(`${what}: ${bad}`);
  };
  /** `w`: a launch still queued when its worker closes rejects with E_CLOSED (documented). */
  const callAsync = (what: string, expect: Outcome, f: () => Promise<unknown>, check?: () => string | null, w?: ChipWorker, uses?: TE): void => {
    report.calls++;
    if (uses) uses.inflight++;
    const settle = () => { if (uses) uses.inflight--; };
    report.asyncLaunches++;
    let p: Promise<unknown>;
    try {
      p = f();
    } catch (e) {
      settle();
      classify(e, `${what} (sync throw of an async API)`);
      finding(`${what}: an async API threw synchronously instead of rejecting`);
      return;
    }
    pending.push(p.then(
      () => {
        settle();
        if (expect === "fail") { finding(`${what}: expected a rejection, resolved`); return; }
        report.ok++;
        const bad = check?.();
        if (bad) finding(`${what}: ${bad}`);
      },
      (e: unknown) => {
        settle();
        classify(e, what);
        if (expect === "ok" && w?.closed && e instanceof TsptoError && e.code === "E_CLOSED") return;
        if (expect === "ok") finding(`${what}: expected success, rejected ${(e as Error).message?.split("\n")[0]}`);
      },
    ));
  };
  const sameAs = (got: Float32Array, want: Float32Array) => {
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) return `element ${i}: got ${got[i]}, want ${want[i]}`;
    return null;
  };
  const addRef = (a: Float32Array, b: Float32Array) => a.map((v, i) => Math.fround(v + b[i]));

  const live = () => workers.filter((x) => !x.w.closed);
  const someWorker = (): W | undefined => { const l = live(); return l.length ? pick(l) : undefined; };
  const badShapes: unknown[] = [[0, 4], [-1], [], "x", [2, 4n], [1.5], [2 ** 40, 2 ** 20], null, [NaN], [[2]]];
  const badDtypes: unknown[] = ["float64", "", 3, null, "INT32"];

  const actions: [number, () => void][] = [
    [3, () => { // new worker: valid or invalid config
      const kind = r();
      if (kind < 0.7 || workers.length === 0) {
        const platform = pick(["cpu", "interp"] as const);
        if (live().length >= 4) return;
        call(`new ChipWorker(${platform})`, "ok", () => { const w = new ChipWorker(new RunConfig({ platform })); workers.push({ w, platform, tensors: [], handles: [] }); });
      } else {
        const bad = pick<unknown>([{ platform: "cpu" }, 5, "cpu", null, new Date()]);
        call("new ChipWorker(notAConfig)", bad === undefined ? "ok" : "fail", () => new ChipWorker(bad as RunConfig));
      }
    }],
    [3, () => { // RunConfig options, valid and not
      const opts = pick<unknown>([
        { platform: "tpu" }, { deviceId: -1 }, { ringHeap: 3000 }, { ringTaskWindow: [4, 8] }, { enableChipSwimlane: 9 },
        { platfrom: "cpu" }, { rtol: -1 }, 7, null, { saveKernelsDir: "" }, { aicpuThreadNum: 0 }, { deviceId: 2n },
        { platform: "cpu" }, { ringHeap: 4096 }, { enableDepGen: false },
      ]);
      const o = opts as Record<string, unknown> | null;
      const valid = o !== null && typeof o === "object" && (o.platform === "cpu" || o.ringHeap === 4096 || o.enableDepGen === false) && Object.keys(o).length === 1;
      call(`new RunConfig(${JSON.stringify(opts, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))})`, valid ? "ok" : "fail", () => new RunConfig(opts as never));
    }],
    [6, () => { // allocTensor valid (with init) or invalid shape/dtype/init
      const x = someWorker(); if (!x) return;
      const k = r();
      if (k < 0.55) {
        if (x.tensors.length > 6) return;
        const data = f32(r, N);
        call("allocTensor(valid, init)", "ok", () => x.w.allocTensor([R, C], "float32", { init: host(data) }), (t) => {
          x.tensors.push({ t: t as DeviceTensor, data, inflight: 0 });
          const back = new Float32Array(N);
          x.w.copyFrom(back, t as DeviceTensor, N * 4);
          return sameAs(back, data);
        });
      } else if (k < 0.75) {
        call("allocTensor(bad shape)", "fail", () => x.w.allocTensor(pick(badShapes) as number[]));
      } else if (k < 0.85) {
        call("allocTensor(bad dtype)", "fail", () => x.w.allocTensor([4], pick(badDtypes) as DType));
      } else {
        call("allocTensor(init mismatch)", "fail", () => x.w.allocTensor([R, C], "float32", { init: host(f32(r, 4), [2, 2]) }));
      }
    }],
    [4, () => { // freeTensor: valid, twice, foreign, not a tensor
      const x = someWorker(); if (!x) return;
      const k = r();
      if (k < 0.6 && x.tensors.length) {
        const i = Math.floor(r() * x.tensors.length);
        const { t } = x.tensors.splice(i, 1)[0];
        call("freeTensor", "ok", () => x.w.freeTensor(t));
        if (r() < 0.3) call("freeTensor twice (no-op)", "ok", () => x.w.freeTensor(t));
      } else if (k < 0.8) {
        const other = live().find((o) => o !== x && o.tensors.length);
        if (other) call("freeTensor(foreign)", "fail", () => x.w.freeTensor(other.tensors[0].t));
      } else {
        call("freeTensor(not a tensor)", "fail", () => x.w.freeTensor(pick<unknown>([null, 5, {}, a0]) as DeviceTensor));
      }
    }],
    [5, () => { // copies: valid round trip, bad sizes, detached views, raw bad addresses
      const x = someWorker(); if (!x || !x.tensors.length) return;
      const e = pick(x.tensors);
      if (e.inflight > 0) return;
      const k = r();
      if (k < 0.4) {
        const data = f32(r, N);
        call("copyTo+copyFrom", "ok", () => {
          x.w.copyTo(e.t, data, N * 4);
          e.data = data;
          const back = new Float32Array(N);
          x.w.copyFrom(back, e.t, N * 4);
          return back;
        }, (v) => sameAs(v as Float32Array, data));
      } else if (k < 0.55) {
        call("copyTo(too many bytes)", "fail", () => x.w.copyTo(e.t, new Float32Array(N + 8), (N + 8) * 4));
      } else if (k < 0.65) {
        call("copyFrom(negative nbytes)", "fail", () => x.w.copyFrom(new Float32Array(N), e.t, -1));
      } else if (k < 0.75) {
        const v = new Float32Array(N);
        detach(v.buffer);
        call("copyTo(detached view)", "fail", () => x.w.copyTo(e.t, v, N * 4));
      } else if (k < 0.9) {
        // (an address past the end may be another live allocation: raw addresses are checked
        // for liveness, not ownership, so only clearly invalid ones are used here)
        const addr = pick([e.t.dataPtr + 4n, 0x1000n, 0xdead0000n]);
        call("copyTo(raw bad address)", "fail", () => x.w.copyTo(addr, new Float32Array(4), 16 + (addr === e.t.dataPtr + 4n ? N * 4 : 0)));
      } else {
        call("copyFrom(not a view)", "fail", () => x.w.copyFrom(pick<unknown>([null, [1, 2], "x"]) as Float32Array, e.t, 4));
      }
    }],
    [10, () => { // run add: valid (host or device args, sync/async/handle) or invalid
      const x = someWorker(); if (!x) return;
      const P = compiled[x.platform];
      const k = r();
      const a = f32(r, N), b = f32(r, N);
      if (k < 0.5) {
        const useDev = x.tensors.length > 0 && r() < 0.5;
        const dev = useDev ? pick(x.tensors) : null;
        const bArg = dev ? dev.t : host(b);
        const bData = dev ? dev.data : b;
        const out = host(new Float32Array(N).fill(-1));
        const want = addRef(a, bData);
        const mode = r();
        if (mode < 0.5) {
          call("run(add)", "ok", () => x.w.run(P.add, host(a), bArg, out), () => sameAs(out.data as Float32Array, want));
        } else if (mode < 0.8) {
          callAsync("runAsync(add)", "ok", () => x.w.runAsync(P.add, host(a), bArg, out), () => sameAs(out.data as Float32Array, want), x.w, dev ?? undefined);
          if (dev && r() < 0.3) { // free it while the launch is in flight: the launch must still see the data
            x.tensors.splice(x.tensors.indexOf(dev), 1);
            call("freeTensor(in flight)", "ok", () => x.w.freeTensor(dev.t));
          }
        } else {
          let h = x.handles.find((hh) => !hh.closed && hh.compiled === P.add);
          if (!h) { call("register", "ok", () => { h = x.w.register(P.add); x.handles.push(h); }); }
          if (h) call("handle(add)", "ok", () => h!(host(a), bArg, out), () => sameAs(out.data as Float32Array, want));
        }
      } else {
        const bad = Math.floor(r() * 9);
        const out = host(new Float32Array(N));
        switch (bad) {
          case 0: call("run(arity)", "fail", () => x.w.run(P.add, host(a), host(b))); break;
          case 1: call("run(wrong shape)", "fail", () => x.w.run(P.add, host(a), host(f32(r, 4), [2, 2]), out)); break;
          case 2: call("run(wrong dtype)", "fail", () => x.w.run(P.add, host(a), tensor(new Int32Array(N), { shape: [R, C], dtype: "int32" }), out)); break;
          case 3: { const dout = host(new Float32Array(N)); detach(dout.data.buffer); call("run(detached Out)", "fail", () => x.w.run(P.add, host(a), host(b), dout)); break; }
          case 4: { const da = host(a); detach(da.data.buffer); call("run(detached In)", "fail", () => x.w.run(P.add, da, host(b), out)); break; }
          case 5: call("run(not a program)", "fail", () => x.w.run(pick<unknown>([null, {}, fuzzAdd]) as CompiledProgram, host(a), host(b), out)); break;
          case 6: { const other = compiled[x.platform === "cpu" ? "interp" : "cpu"].add; call("run(other platform)", "fail", () => x.w.run(other, host(a), host(b), out)); break; }
          case 7: callAsync("runAsync(arity)", "fail", () => x.w.runAsync(P.add, host(a))); break;
          default: {
            const other = live().find((o) => o !== x && o.tensors.length);
            if (other) call("run(foreign DeviceTensor)", "fail", () => x.w.run(P.add, host(a), other.tensors[0].t, out));
          }
        }
      }
    }],
    [5, () => { // run scale: valid ints, invalid scalars
      const x = someWorker(); if (!x) return;
      const P = compiled[x.platform];
      const a = f32(r, N);
      const kk = pick<unknown>([3, -2, 0, 7n, 1.5, NaN, true, 2 ** 31, "3", Infinity, -(2 ** 31)]);
      const valid = (typeof kk === "number" && Number.isInteger(kk) && kk >= -(2 ** 31) && kk < 2 ** 31) || kk === 7n;
      const out = host(new Float32Array(N));
      const kNum = Number(kk);
      call(`run(scale, k=${String(kk)})`, valid ? "ok" : "fail", () => x.w.run(P.scale, host(a), kk, out),
        () => sameAs(out.data as Float32Array, a.map((v) => Math.fround(v * kNum))));
    }],
    [4, () => { // run the dynamic-dimension add: any row count, or extents that disagree / a wrong static dimension
      const x = someWorker(); if (!x) return;
      const P = compiled[x.platform];
      const m = 1 + Math.floor(r() * 40);
      const a = f32(r, m * C), b = f32(r, m * C);
      const out = host(new Float32Array(m * C).fill(-1), [m, C]);
      const k = r();
      if (k < 0.7) {
        call(`run(dyn, M=${m})`, "ok", () => x.w.run(P.dyn, host(a, [m, C]), host(b, [m, C]), out), () => sameAs(out.data as Float32Array, addRef(a, b)));
      } else if (k < 0.85) {
        const m2 = m + 1 + Math.floor(r() * 5);
        call("run(dyn, extents disagree)", "fail", () => x.w.run(P.dyn, host(a, [m, C]), host(f32(r, m2 * C), [m2, C]), out));
      } else {
        call("run(dyn, wrong static dimension)", "fail", () => x.w.run(P.dyn, host(a, [m * C / 8, 8]), host(b, [m * C / 8, 8]), out));
      }
    }],
    [2, () => { // unregister a handle, then call it
      const x = someWorker(); if (!x || !x.handles.length) return;
      const h = x.handles.pop()!;
      call("unregister", "ok", () => h.unregister());
      call("handle after unregister", "fail", () => h(host(f32(r, N)), host(f32(r, N)), host(new Float32Array(N))));
    }],
    [1, () => { // close a worker (freeing its tensors first, checking bytes in use)
      const x = someWorker(); if (!x) return;
      if (r() < 0.5) {
        for (const { t } of x.tensors) call("freeTensor(before close)", "ok", () => x.w.freeTensor(t));
        x.tensors = [];
      }
      const had = x.tensors;
      call("close", "ok", () => x.w.close());
      if (had.length) call("copyFrom(after close)", "fail", () => x.w.copyFrom(new Float32Array(N), had[0].t, 4));
      call("allocTensor(after close)", "fail", () => x.w.allocTensor([4]));
      callAsync("runAsync(after close)", "fail", () => x.w.runAsync(compiled[x.platform].add, host(f32(r, N)), host(f32(r, N)), host(new Float32Array(N))));
      x.tensors = [];
    }],
    [2, () => { // host tensors and compile misuse
      const k = r();
      if (k < 0.5) {
        const data = pick<unknown>([[1, 2, 3], [[1, 2], [3]], "abc", [1, "x"], { data: new Float32Array(6), shape: [2, 2] }]);
        call("tensor(bad)", "fail", () => tensor(data as never, Array.isArray(data) && data.length === 3 && typeof data[0] === "number" ? { shape: [2, 2] } : undefined));
      } else {
        call("ir.compile(bad platform)", "fail", () => ir.compile(fuzzAdd.lower(a0, b0, host(new Float32Array(N))), { platform: pick(["npu", "tpu", ""]) as "cpu" }));
      }
    }],
  ];
  const total = actions.reduce((s, [w]) => s + w, 0);
  while (report.calls < calls) {
    let t = r() * total;
    for (const [w, act] of actions) {
      t -= w;
      if (t <= 0) { act(); break; }
    }
    if (pending.length > 64) { await Promise.all(pending.splice(0)); }
  }
  await Promise.all(pending.splice(0));

  // Everything this sequence allocated is freed: bytes in use must be back at zero.
  for (const x of workers) {
    if (x.w.closed) continue;
    for (const { t } of x.tensors) call("freeTensor(final)", "ok", () => x.w.freeTensor(t));
    x.tensors = [];
    const s = x.w.stats;
    if (s.deviceBytesInUse !== 0) finding(`worker ${x.platform}: ${s.deviceBytesInUse} device bytes still in use after freeing every tensor`);
    if (s.liveTensors !== 0) finding(`worker ${x.platform}: ${s.liveTensors} live tensors after freeing every tensor`);
    x.w.close();
  }
  return report;
}
