// Section 14 ("amx") of the bench: the CPU's dot-product / matrix units (issue 21). The peak of
// the best bf16 and int8 dot instruction this machine has (a register-only loop on all cores:
// tdpbf16ps / tdpbssd where AMX is usable, else vdpbf16ps / vpdpbusd), bf16 matmul at 2048³ and
// 4096³ as a fraction of the bf16 peak and against onnxruntime-node's fp32 MatMul on the same
// shapes, int8 matmul as a fraction of the int8 peak; contenders alternate within each round.
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { pl, ChipWorker, RunConfig, randn, tensor, zeros } from "../src/index.js";
import { onnxModel, type Ort } from "./peers.js";
import { cpuFlags, cpuIsa } from "../src/targets/cpu/toolchain.js";
import { DOT_PEAK, DotPeak } from "../src/targets/cpu/index.js";
// The dot peak program lives with the cpu target (src/targets/cpu/limits.ts: the roofline's
// dotGflops / dotInt8Gops); the bench runs it long-lived, in the same rounds as the matmuls.
export { DOT_PEAK, DotPeak };

/** A [n, n] @ [n, n] matmul of `dtype` inputs: one task per [TM, TN] output tile, K in KT steps. */
function matmulN(n: number, dtype: "bfloat16" | "int8") {
  const N = n, TMS = 256, TNS = 256, KS = dtype === "int8" ? 256 : 128;
  void dtype;
  return pl.jit(function dotMatmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
    for (const i of pl.range(0, N, TMS)) {
      for (const j of pl.range(0, N, TNS)) {
        pl.at(pl.Level.CORE_GROUP, () => {
          let acc = pl.matmul(pl.load(a, [i, 0], [TMS, KS]), pl.load(b, [0, j], [KS, TNS]));
          for (const k of pl.range(KS, N, KS)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [TMS, KS]), pl.load(b, [k, j], [KS, TNS]));
          pl.store(acc, [i, j], c);
        });
      }
    }
    return c;
  }, { scope: { N, TMS, TNS, KS } });
}

export interface IsaRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null; limit?: string }

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const k = s.length; return k % 2 ? s[(k - 1) / 2] : (s[k / 2 - 1] + s[k / 2]) / 2; };
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");

/** Section 14: rows and notes. */
export async function isaBench(work: string, ort: Ort | null, rounds: number, log: (s: string) => void, ortOpts: unknown): Promise<{ rows: IsaRow[]; notes: string[] }> {
  log("14. amx: the dot-product / matrix units");
  const rows: IsaRow[] = [], notes: string[] = [];
  const isa = cpuIsa();
  const flags = cpuFlags().split(/\s+/);
  const amxHere = ["amx_tile", "amx_bf16", "amx_int8"].every((f) => flags.includes(f));
  const threads = availableParallelism();
  const [l0] = loadavg();
  if (isa !== "amx" && isa !== "avx512bf16") {
    rows.push({ id: "14", what: "bf16 / int8 dot-product units", tspto: "", peer: `ISA path ${isa ?? "none"}`, result: "skipped", goal: "—", met: null });
    return { rows, notes };
  }
  const bfPeak = new DotPeak(join(work, "dotpeak"), threads, "bf16");
  const i8Peak = new DotPeak(join(work, "dotpeak"), threads, "int8");
  const w = new ChipWorker(new RunConfig());
  const res: Record<string, { ms: number[]; peak: number[]; ort: number[] }> = {};
  const gops = (n: number, ms: number) => (2 * n ** 3) / (ms / 1e3) / 1e9;
  let maxErr = 0;
  for (const [n, dtype] of [[2048, "bfloat16"], [4096, "bfloat16"], [2048, "int8"], [4096, "int8"]] as const) {
    const shape = [n, n];
    const f = matmulN(n, dtype);
    let A, B, C;
    if (dtype === "bfloat16") { A = randn(shape, { seed: 1, dtype }); B = randn(shape, { seed: 2, dtype }); C = zeros(shape); }
    else {
      const a = new Int8Array(n * n), b = new Int8Array(n * n);
      for (let i = 0; i < n * n; i++) { a[i] = ((i * 7919) % 255) - 127; b[i] = ((i * 104729) % 255) - 127; }
      A = tensor(a, { shape, dtype }); B = tensor(b, { shape, dtype }); C = zeros(shape, "int32");
    }
    const h = w.register(f.compile(A, B, C));
    const ra = w.allocTensor(shape, dtype, { init: A }), rb = w.allocTensor(shape, dtype, { init: B }), rc = w.allocTensor(shape, dtype === "int8" ? "int32" : "float32");
    let sess: Ort = null, feeds: Ort = null;
    if (ort && dtype === "bfloat16") {
      // onnxruntime's fp32 MatMul on the same values (bf16 widened to fp32)
      const fa = new Float32Array(n * n), fb = new Float32Array(n * n);
      const u = new Uint32Array(fa.buffer), v = new Uint32Array(fb.buffer);
      (A.data as Uint16Array).forEach((x, i) => { u[i] = x << 16; });
      (B.data as Uint16Array).forEach((x, i) => { v[i] = x << 16; });
      sess = await ort.InferenceSession.create(onnxModel("MatMul", [{ name: "a", shape }, { name: "b", shape }], shape), ortOpts);
      feeds = { a: new ort.Tensor("float32", fa, shape), b: new ort.Tensor("float32", fb, shape) };
      h(ra, rb, rc);
      w.copyFrom(C, rc, rc.nbytes);
      const ref = (await sess.run(feeds)).y.data as Float32Array;
      const got = C.data as Float32Array;
      for (let i = 0; i < n * n; i += 997) maxErr = Math.max(maxErr, Math.abs(got[i] - ref[i]) / (1 + Math.abs(ref[i])));
    }
    const key = `${dtype}${n}`;
    res[key] = { ms: [], peak: [], ort: [] };
    const peak = dtype === "int8" ? i8Peak : bfPeak;
    const R = n >= 4096 ? Math.max(3, Math.min(rounds, 5)) : rounds;
    for (let r = -1; r < R; r++) {
      let s = nowMs(); h(ra, rb, rc); const t = nowMs() - s;
      let o = NaN;
      if (sess) { s = nowMs(); await sess.run(feeds); o = nowMs() - s; }
      const pk = await peak.measure();
      if (r >= 0) { res[key].ms.push(t); res[key].peak.push(pk); if (sess) res[key].ort.push(o); }
    }
    if (sess) await sess.release();
    w.freeTensor(ra); w.freeTensor(rb); w.freeTensor(rc);
    const m = median(res[key].ms), pk = median(res[key].peak), label = dtype === "int8" ? "int8" : "bf16";
    const goal = dtype === "int8" ? 0.5 : 0.6, frac = gops(n, m) / pk;
    const unit = dtype === "int8" ? "GOPS" : "GFLOP/s";
    rows.push({ id: `14${dtype === "int8" ? "c" : "a"}${n}`, what: `${label} matmul ${n}³ (${dtype === "int8" ? "int32 out" : "fp32 accumulation"}) as a fraction of the ${peak.instruction} peak (${threads} threads)`,
      tspto: `${fmt(gops(n, m), 1)} ${unit} (${fmt(m, 1)} ms)`, peer: `${fmt(pk, 1)} ${unit}`, result: fmt(frac), goal: n === 4096 ? `≥ ${goal}` : "—", met: n === 4096 ? frac >= goal : null });
    if (sess) {
      const mo = median(res[key].ort);
      rows.push({ id: `14b${n}`, what: `bf16 matmul ${n}³ vs onnxruntime-node fp32 MatMul (same values)`, tspto: `${fmt(gops(n, m), 1)} GFLOP/s (${fmt(m, 1)} ms)`, peer: `${fmt(gops(n, mo), 1)} GFLOP/s (${fmt(mo, 1)} ms)`, result: `${fmt(mo / m)}×`, goal: "—", met: null });
    }
    log(`  ${key}: ${fmt(gops(n, m), 1)} ${unit}, peak ${fmt(pk, 1)}`);
  }
  w.close();
  bfPeak.close(); i8Peak.close();
  let mhz = NaN;
  try { mhz = Number(/^cpu MHz\s*:\s*([\d.]+)/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]); } catch { /* not linux */ }
  const [l1] = loadavg();
  const amxPeak = bfPeak.instruction === "tdpbf16ps";
  const peakText = amxPeak
    ? `a register-only loop of 4 independent tile accumulators fed by 4 operand tiles (tdpbf16ps / tdpbssd, after arch_prctl(ARCH_REQ_XCOMP_PERM)) on ${threads} threads, ops = 16 rows × 16 columns × 32 (bf16) or 64 (int8) products × 2 per instruction; the cross-check bound at the ${fmt(mhz, 0)} MHz /proc/cpuinfo reports, one tdpbf16ps per 16 cycles per core (Intel's figure): bf16 ${fmt(threads * 1024 * mhz / 1e3, 1)} GFLOP/s, int8 ${fmt(threads * 2048 * mhz / 1e3, 1)} GOPS`
    : `a register-only loop of 24 independent ${bfPeak.instruction} / ${i8Peak.instruction} chains on ${threads} threads (test/targets/cpu/limits.test.ts counts 24 in the compiled loop), ops = 16 lanes × 2 pairs × 2 (bf16) or × 4 × 2 (int8) per instruction; the cross-check bound at the ${fmt(mhz, 0)} MHz /proc/cpuinfo reports, one 512-bit dot instruction per cycle per core: bf16 ${fmt(threads * 64 * mhz / 1e3, 1)} GFLOP/s, int8 ${fmt(threads * 128 * mhz / 1e3, 1)} GOPS`;
  const kernels = amxPeak
    ? "packed per step (vectorized) into AMX tiles, 2 × 2 accumulator tiles per 32 × 32 block, whole blocks loading and storing their accumulators straight from the output (prelude_dot.ts)"
    : "packed per step into the pair / quad layout of the instruction (prelude_dot.ts)";
  notes.push(`14. ISA path ${isa}${amxHere ? "" : "; this CPU has no AMX (amx_tile / amx_bf16 / amx_int8 absent from its flags), so the AMX rows (tdpbf16ps / tdpbssd peaks, AMX matmuls) are unmeasured here: the peaks are those of vdpbf16ps and vpdpbusd"}. Peaks: ${peakText}; measured in the same rounds as the matmuls. Matmuls: one task per [256, 256] output tile, K in steps of 128 (bf16) / 256 (int8) accumulating in place; the tiles are loaded into scratch as fp32 (bf16) or int8 and ${kernels}. bf16 vs onnxruntime: max relative difference ${maxErr.toExponential(2)} (${amxPeak ? "AMX sums each instruction's 32 products in its own order" : "bf16 sums in k order"}, denormals flushed; onnxruntime's fp32 blocked sums in its own order). Load average ${fmt(l0)} at the start of the section, ${fmt(l1)} at its end.`);
  return { rows, notes };
}
