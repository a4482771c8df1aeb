// Issue 9 through the public API: host buffers that changed under tspto, tensors freed under
// in-flight launches, and every misuse reaching the user as a TsptoError with a stable code
// (and the argument's name and 1-based position where there is one).
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ChipWorker, RunConfig, TsptoArgumentError, TsptoRuntimeError, TsptoConfigError, TsptoDeviceError, TsptoError, TsptoOutOfMemoryError,
  assertClose, ir, pl, randn, tensor, zeros,
} from "tspto";
import { entryDir, lookup } from "../../src/cache.js";

const R = 16, C = 64;
const N = R * C;

const addKernel = pl.jit(function safetyAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], out);
  });
  return out;
});

// out = x * k for a dynamic int32 scalar k
const scaleKernel = pl.jit(function safetyScale(x: pl.Tensor, k: pl.Scalar<pl.INT32>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(x, k));
  });
  return out;
});

const A = randn([R, C], { seed: 91 }), B = randn([R, C], { seed: 92 });
const programs = {
  cpu: ir.compile(addKernel.lower(A, B, zeros([R, C])), { platform: "cpu" }),
  interp: ir.compile(addKernel.lower(A, B, zeros([R, C])), { platform: "interp" }),
};
const open: ChipWorker[] = [];
const worker = (platform: "cpu" | "interp") => {
  const w = new ChipWorker(new RunConfig({ platform }));
  open.push(w);
  return w;
};
afterAll(() => open.forEach((w) => w.close()));

function caught(f: () => unknown): TsptoError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(TsptoError);
    return e as TsptoError;
  }
  throw new Error("expected a throw");
}
const detach = (buf: ArrayBufferLike) => structuredClone(buf as ArrayBuffer, { transfer: [buf as ArrayBuffer] });

for (const platform of ["cpu", "interp"] as const) {
  describe(`host buffers that changed under tspto (${platform})`, () => {
    it("a detached Out HostTensor is an E_HOST_VIEW error naming the argument; a resident tensor is untouched", () => {
      const w = worker(platform);
      const resident = w.allocTensor([R, C], "float32", { init: B });
      const out = zeros([R, C]);
      detach(out.data.buffer);
      const e = caught(() => w.run(programs[platform], A, resident, out));
      expect(e).toBeInstanceOf(TsptoArgumentError);
      expect(e.code).toBe("E_HOST_VIEW");
      expect(e.detail).toBe(`argument 'out' (#3) of 'safetyAdd' is a host view of 0 bytes, but the program uses ${N * 4} bytes (its ArrayBuffer is detached (transferred))`);
      expect(e.argument).toBe("out");
      expect(e.position).toBe(3);
      const back = zeros([R, C]);
      w.copyFrom(back, resident, N * 4);
      expect(back.data).toEqual(B.data);
      expect(w.stats.deviceBytesInUse).toBe(Math.ceil((N * 4) / 64) * 64); // only the resident tensor
    });

    it("a detached In HostTensor is rejected (no garbage read)", () => {
      const w = worker(platform);
      const a = A.clone();
      detach(a.data.buffer);
      const e = caught(() => w.run(programs[platform], a, B, zeros([R, C])));
      expect(e.code).toBe("E_HOST_VIEW");
      expect(e.detail).toContain("argument 'a' (#1) of 'safetyAdd' is a host view of 0 bytes");
    });

    it("the jit fast path checks the live length too", () => {
      const out = zeros([R, C]);
      addKernel(A, B, out, new RunConfig({ platform })); // warm: the next call takes the fast path
      const a = A.clone();
      detach(a.data.buffer);
      const e = caught(() => addKernel(a, B, zeros([R, C]), new RunConfig({ platform })));
      expect(e.code).toBe("E_HOST_VIEW");
      expect(e.position).toBe(1);
    });
  });
}

describe("a launch holds the DeviceTensors it uses", () => {
  it("3000 runAsync launches using dB, then freeTensor(dB) and a new allocation: every result is from dB's data", async () => {
    const w = worker("cpu");
    const dB = w.allocTensor([R, C], "float32", { init: B });
    const outs = Array.from({ length: 3000 }, () => zeros([R, C]));
    const pending = outs.map((o) => w.runAsync(programs.cpu, A, dB, o));
    w.freeTensor(dB);
    const other = randn([R, C], { seed: 93 });
    const dC = w.allocTensor([R, C], "float32", { init: other });
    await Promise.all(pending);
    const want = A.add(B);
    let wrong = 0;
    for (const o of outs) if (!o.data.every((v, i) => v === want.data[i])) wrong++;
    expect(wrong).toBe(0);
    // dC kept its data; after the launches only dC is in use.
    const back = zeros([R, C]);
    w.copyFrom(back, dC, N * 4);
    expect(back.data).toEqual(other.data);
    expect(w.stats.deviceBytesInUse).toBe(N * 4);
    w.freeTensor(dC);
    expect(w.stats.deviceBytesInUse).toBe(0);
  });
});

describe("one error type", () => {
  it("new ChipWorker(notAConfig) is a TsptoRuntimeError naming the argument", () => {
    const e = caught(() => new ChipWorker({ platform: "cpu" } as never));
    expect(e).toBeInstanceOf(TsptoRuntimeError);
    expect(e.code).toBe("E_ARG");
    expect(e.detail).toBe("ChipWorker: config must be a RunConfig, got Object");
    expect(e.argument).toBe("config");
    expect(e.position).toBe(1);
  });

  it("RunConfig validation is a TsptoConfigError", () => {
    const e = caught(() => new RunConfig({ ringHeap: 3000 }));
    expect(e).toBeInstanceOf(TsptoConfigError);
    expect(e.argument).toBe("ringHeap");
  });

  it("allocTensor([2, 4n]) formats the BigInt instead of crashing", () => {
    const w = worker("cpu");
    const e = caught(() => w.allocTensor([2, 4n] as never));
    expect(e.code).toBe("E_SHAPE");
    expect(e.detail).toBe(`allocTensor: shape must be a non-empty list of positive integers, got [2,"4n"]`);
  });

  it("device OOM is a TsptoOutOfMemoryError with requested / in use / capacity", () => {
    const w = worker("cpu");
    const e = caught(() => w.allocTensor([2 ** 20, 2 ** 15], "float32")); // 128 GiB
    expect(e).toBeInstanceOf(TsptoOutOfMemoryError);
    expect(e.code).toBe("E_DEVICE_OOM");
    expect(e.detail).toMatch(/^device out of memory: requested 137438953472 bytes, 0 bytes in use of \d+ bytes capacity/);
    // one hint on every platform, each ending with what else makes room there
    expect(e.hint).toBe("free DeviceTensors you no longer need (ChipWorker.freeTensor), use smaller tensors, or raise TSPTO_DEVICE_MEMORY");
    expect(caught(() => worker("interp").allocTensor([2 ** 20, 2 ** 15], "float32")).hint)
      .toBe("free DeviceTensors you no longer need (ChipWorker.freeTensor), use smaller tensors, or set TSPTO_DEVICE_MEMORY to reserve more device memory");
  });

  it("interp: an allocation over the host's 4 GiB buffer limit is E_DEVICE_OOM, not a RangeError, and the worker still works", () => {
    const w = worker("interp");
    const e = caught(() => w.allocTensor([2 ** 30, 5], "uint8")); // 5 GiB, inside the 16 GiB capacity
    expect(e).toBeInstanceOf(TsptoOutOfMemoryError);
    expect(e.code).toBe("E_DEVICE_OOM");
    expect(e.detail).toBe("device out of memory: requested 5368709120 bytes: the interp platform holds each allocation in one host buffer, of at most 4294967296 bytes");
    const t = w.allocTensor([4], "float32");
    w.copyTo(t.dataPtr, new Float32Array([1, 2, 3, 4]), 16);
    const back = new Float32Array(4);
    w.copyFrom(back, t.dataPtr, 16);
    expect(Array.from(back)).toEqual([1, 2, 3, 4]);
  });

  it("native argument and address errors are TsptoErrors", () => {
    const w = worker("cpu");
    const t = w.allocTensor([4], "float32");
    const e1 = caught(() => w.copyTo(t.dataPtr + 8n, new Float32Array(4), 16));
    expect(e1).toBeInstanceOf(TsptoDeviceError);
    expect(e1.code).toBe("E_ADDRESS");
    expect(e1.detail).toMatch(/^h2d: range \[0x[0-9a-f]+, 0x[0-9a-f]+ \+ 16\) leaves the allocation/);
    const e2 = caught(() => w.copyTo(t.dataPtr, new Float32Array(4), -1));
    expect(e2.code).toBe("E_ARG");
    expect(e2.detail).toBe("copyTo: nbytes must be a non-negative integer, got number -1");
  });

  for (const platform of ["cpu", "interp"] as const) {
    it(`pl.Scalar<pl.INT32> given 1.5 / NaN / true / 2^31 is rejected before the device (${platform})`, () => {
      const x = randn([R, C], { seed: 94 });
      const compiled = scaleKernel.compile(x, 3, zeros([R, C]), new RunConfig({ platform }));
      const w = worker(platform);
      const out = zeros([R, C]);
      w.run(compiled, x, 3, out);
      assertClose(out, x.mul(3), { rtol: 1e-6, atol: 0 });
      for (const [bad, shown] of [[1.5, "1.5"], [NaN, "NaN"], [true, "boolean true"], [2 ** 31, "2147483648"]] as const) {
        const e = caught(() => w.run(compiled, x, bad, zeros([R, C])));
        expect(e).toBeInstanceOf(TsptoArgumentError);
        expect(e.code).toBe("E_SCALAR");
        expect(e.detail).toBe(`argument 'k' (#2) of 'safetyScale' must be an integer in [-2147483648, 2147483647] (int32 scalar), got ${shown}`);
        expect(e.position).toBe(2);
      }
      const viaJit = caught(() => scaleKernel(x, 1.5, zeros([R, C]), new RunConfig({ platform })));
      expect(viaJit.code).toBe("E_SCALAR");
      expect(w.stats.launches).toBe(1);
    });
  }

  it("zero-size dimensions through the jit are rejected up front with E_SHAPE", () => {
    const e = caught(() => addKernel(zeros([0, C]), zeros([0, C]), zeros([0, C])));
    expect(e).toBeInstanceOf(TsptoArgumentError);
    expect(e.code).toBe("E_SHAPE");
    expect(e.detail).toBe("argument 'a' (#1) of 'safetyAdd' has shape [0, 64]; kernels take tensors whose every dimension is >= 1");
  });

  it("a cache entry path occupied by a regular file is corrupt and recovered from", () => {
    // lookup() sees it as corrupt (the jit evicts and rebuilds); it never throws ENOTDIR.
    const root = mkdtempSync(join(tmpdir(), "tspto-safety-"));
    try {
      const dir = entryDir(root, "k", "0123456789abcdef0123456789abcdef");
      writeFileSync(dir, "not a directory");
      expect(lookup(dir, "cpu")).toEqual({ kind: "corrupt", why: "the entry path is not a directory" });
      expect(lookup(join(root, "absent"), "cpu")).toEqual({ kind: "miss" });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a tensor-like with a bad shape is a TsptoArgumentError (host.ts)", () => {
    const e = caught(() => tensor([1, 2, 3], { shape: [2, 2] }));
    expect(e).toBeInstanceOf(TsptoArgumentError);
    expect(e.code).toBe("E_SHAPE");
    expect(e.detail).toBe("tensor: shape [2, 2] (4 elements) does not match data length 3");
  });
});
