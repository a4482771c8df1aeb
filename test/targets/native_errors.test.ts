// fromNativeError: the one table from native codes to TsptoError classes and public codes,
// on errors the real addon throws and on hand-made ones (unknown code, non-Error values).
import { describe, expect, it } from "vitest";
import {
  TsptoArgumentError, TsptoDeviceError, TsptoError, TsptoKernelError, TsptoOutOfMemoryError, TsptoSyntaxError,
} from "../../src/ir/errors.js";
import { NATIVE_ERROR_CODES, fromNativeError, guardNative } from "../../src/targets/native_errors.js";
import { ArgKind as K } from "../../src/targets/native.js";
import { CpuDevice } from "../../src/targets/cpu/device.js";

const nativeErr = (message: string, code?: string, argIndex?: number) => Object.assign(new Error(message), { code, argIndex });

describe("fromNativeError", () => {
  const rows: [string, string, new (...a: never[]) => TsptoError][] = [
    ["TSPTO_DEVICE_OOM", "E_DEVICE_OOM", TsptoOutOfMemoryError],
    ["TSPTO_KERNEL_FAILURE", "E_KERNEL", TsptoKernelError],
    ["TSPTO_DEVICE_CLOSED", "E_CLOSED", TsptoDeviceError],
    ["TSPTO_BAD_ADDRESS", "E_ADDRESS", TsptoDeviceError],
    ["TSPTO_HOST_VIEW", "E_HOST_VIEW", TsptoArgumentError],
    ["TSPTO_BAD_ARGUMENT", "E_ARG", TsptoArgumentError],
    ["TSPTO_MODULE", "E_MODULE", TsptoDeviceError],
    ["TSPTO_NO_GPU", "E_NO_GPU", TsptoDeviceError],
    ["TSPTO_CUDA", "E_CUDA", TsptoDeviceError],
  ];
  it("has exactly the codes of native/src/errors.h", () => {
    expect(Object.keys(NATIVE_ERROR_CODES).sort()).toEqual(rows.map((r) => r[0]).sort());
  });
  for (const [native, code, cls] of rows) {
    it(`${native} -> ${cls.name} ${code}`, () => {
      const src = nativeErr(`something about ${native}`, native);
      const e = fromNativeError(src);
      expect(e).toBeInstanceOf(cls);
      expect(e.code).toBe(code);
      expect(e.detail).toBe(`something about ${native}`);
      expect(e.message.startsWith(`[${code}] something about ${native}`)).toBe(true);
      expect(e.hint).toBe(NATIVE_ERROR_CODES[native].hint);
      expect(e.cause).toBe(src);
      expect(e.position).toBeUndefined();
    });
  }

  it("names the argument from argIndex (1-based position) and the context's names", () => {
    const src = nativeErr("launch: argument 2 (host Out) is a host view of 0 bytes", "TSPTO_HOST_VIEW", 2);
    const e = fromNativeError(src, { argNames: ["a", "b", "out"], program: "addKernel" });
    expect(e.detail).toBe("argument 'out' (#3) of 'addKernel': launch: argument 2 (host Out) is a host view of 0 bytes");
    expect(e.argument).toBe("out");
    expect(e.position).toBe(3);
    const bare = fromNativeError(src);
    expect(bare.detail).toBe("argument #3: launch: argument 2 (host Out) is a host view of 0 bytes");
    expect(bare.position).toBe(3);
  });

  it("passes TsptoErrors through and wraps unknown failures as E_NATIVE", () => {
    const t = new TsptoSyntaxError("E_SYNTAX", "x");
    expect(fromNativeError(t)).toBe(t);
    const e = fromNativeError(new Error("tspto native: boom"));
    expect(e).toBeInstanceOf(TsptoDeviceError);
    expect(e.code).toBe("E_NATIVE");
    expect(e.detail).toBe("tspto native: boom");
    const odd = fromNativeError("a string");
    expect(odd.code).toBe("E_NATIVE");
    expect(odd.detail).toBe("non-Error value thrown by the native runtime: a string");
    const unknown = fromNativeError(nativeErr("m", "TSPTO_SOMETHING_NEW"));
    expect(unknown.code).toBe("E_NATIVE");
  });

  it("guardNative rethrows translated", () => {
    expect(() => guardNative(() => { throw nativeErr("device is closed", "TSPTO_DEVICE_CLOSED"); })).toThrow(TsptoDeviceError);
    expect(guardNative(() => 5)).toBe(5);
  });
});

describe("the cpu Device: real native errors arrive as TsptoErrors", () => {
  it("alloc/free/copies/launch/launchAsync/close", async () => {
    const d = new CpuDevice(({
      deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 16, memoryBytes: 1 << 20,
      ringTaskWindow: 16, ringHeap: 1 << 16, ringDepPool: 1 << 10,
    }));
    const grab = (f: () => unknown) => { try { f(); } catch (e) { return e as TsptoError; } throw new Error("no throw"); };
    expect(grab(() => d.alloc(2 << 20))).toBeInstanceOf(TsptoOutOfMemoryError);
    expect(grab(() => d.free(0x1000n)).code).toBe("E_ADDRESS");
    expect(grab(() => d.h2d(0n, new Uint8Array(1), -1)).code).toBe("E_ARG");
    const e = grab(() => d.launch(1, [1.5], Uint8Array.from([K.Int])));
    expect(e).toBeInstanceOf(TsptoArgumentError);
    expect(e.code).toBe("E_ARG");
    expect(e.position).toBe(1);
    await expect(d.launchAsync(77, [], new Uint8Array(0))).rejects.toBeInstanceOf(TsptoDeviceError);
    d.close();
    expect(d.closed).toBe(true);
    expect(grab(() => d.alloc(64)).code).toBe("E_CLOSED");
  });
});
