import { describe, expect, it } from "vitest";
import { TsptoConfigError, TsptoError } from "../../src/ir/errors.js";
import {
  DEFAULT_RING_HEAP, DEFAULT_RING_TASK_WINDOW, PLATFORMS, RUN_CONFIG_OPTIONS, RunConfig, type RunConfigOptions,
} from "../../src/runtime/config.js";

const RING_TW = "a power of 2 >= 4 (or a list of 4 such values, 0 = default)";
const RING_HEAP = "a power of 2 >= 1024 (or a list of 4 such values, 0 = default)";
const RING_DEP = "an integer in [4, 2147483647] (or a list of 4 such values, 0 = default)";

describe("RunConfig defaults", () => {
  it("has the documented defaults", () => {
    const c = new RunConfig();
    expect(c.platform).toBe("cpu");
    expect(c.deviceId).toBe(0);
    expect(c.enableChipSwimlane).toBe(0);
    expect(c.enableDepGen).toBe(false);
    expect(c.enablePmu).toBe(0);
    expect(c.enableDumpArgs).toBe(0);
    expect(c.enableScopeStats).toBe(false);
    expect(c.ringTaskWindow).toBe(1024);
    expect(c.ringHeap).toBe(1 << 20);
    expect(c.ringDepPool).toBe(1024);
    expect(c.aicpuThreadNum).toBe(1);
    expect(c.rtol).toBe(1e-5);
    expect(c.atol).toBe(1e-5);
    expect(c.goldenDataDir).toBeUndefined();
    expect(c.saveKernels).toBe(false);
    expect(c.codegenOnly).toBe(false);
    expect(c.saveKernelsDir).toBeUndefined();
    expect(c.launchTimeoutS).toBe(0); // no limit
    expect(new RunConfig({}).toJSON()).toEqual(c.toJSON());
    expect(new RunConfig({ platform: undefined, ringHeap: undefined }).toJSON()).toEqual(c.toJSON());
  });

  it("lists platforms and options", () => {
    expect([...PLATFORMS]).toEqual(["cpu", "interp", "cuda", "webgpu"]); // the registered targets (src/targets)
    expect(Object.isFrozen(PLATFORMS)).toBe(true);
    expect(RUN_CONFIG_OPTIONS).toContain("ringTaskWindow");
    expect(RUN_CONFIG_OPTIONS).toContain("launchTimeoutS");
    expect(RUN_CONFIG_OPTIONS).toHaveLength(19);
  });
});

describe("RunConfig accepted values", () => {
  it("accepts every platform and numeric fields", () => {
    for (const p of PLATFORMS) expect(new RunConfig({ platform: p }).platform).toBe(p);
    const c = new RunConfig({
      platform: "interp", deviceId: 3, enableChipSwimlane: 2, enableDepGen: true, enablePmu: 5, enableDumpArgs: 2,
      enableScopeStats: true, ringTaskWindow: 64, ringHeap: 4096, ringDepPool: 5, aicpuThreadNum: 4,
      rtol: 1e-3, atol: 0, goldenDataDir: "/tmp/golden", saveKernels: true, codegenOnly: true, saveKernelsDir: "out/k", fpContract: "off", launchTimeoutS: 2.5,
    });
    expect(c.toJSON()).toEqual({
      platform: "interp", deviceId: 3, enableChipSwimlane: 2, enableDepGen: true, enablePmu: 5, enableDumpArgs: 2,
      enableScopeStats: true, ringTaskWindow: 64, ringHeap: 4096, ringDepPool: 5, aicpuThreadNum: 4,
      rtol: 1e-3, atol: 0, goldenDataDir: "/tmp/golden", saveKernels: true, codegenOnly: true, saveKernelsDir: "out/k", fpContract: "off", launchTimeoutS: 2.5,
    });
    expect(c.compileKwargs()).toEqual({ platform: "interp", outputDir: "out/k", fpContract: "off" });
    expect(new RunConfig().fpContract).toBe("fast");
    expect(new RunConfig(c.toJSON()).toJSON()).toEqual(c.toJSON());
    expect(new RunConfig({ ringDepPool: 2147483647 }).ringDepPool).toBe(2147483647);
    expect(new RunConfig({ ringTaskWindow: 4 }).ringTaskWindow).toBe(4);
    expect(new RunConfig({ ringHeap: 1024 }).ringHeap).toBe(1024);
    expect(new RunConfig({ ringHeap: 2 ** 40 }).ringHeap).toBe(2 ** 40);
  });

  it("maps booleans to levels", () => {
    expect(new RunConfig({ enableChipSwimlane: true }).enableChipSwimlane).toBe(4);
    expect(new RunConfig({ enableChipSwimlane: false }).enableChipSwimlane).toBe(0);
    expect(new RunConfig({ enableChipSwimlane: 4 }).enableChipSwimlane).toBe(4);
    expect(new RunConfig({ enablePmu: true }).enablePmu).toBe(1);
    expect(new RunConfig({ enablePmu: false }).enablePmu).toBe(0);
    expect(new RunConfig({ enableDumpArgs: true }).enableDumpArgs).toBe(1);
    expect(new RunConfig({ enableDumpArgs: 2 }).enableDumpArgs).toBe(2);
  });

  it("accepts 4-entry ring lists and resolves them per depth", () => {
    const c = new RunConfig({ ringTaskWindow: [16, 0, 256, 4], ringHeap: [0, 2048, 0, 1 << 21], ringDepPool: [4, 100, 0, 7] });
    expect(c.ringTaskWindow).toEqual([16, 0, 256, 4]);
    expect(Object.isFrozen(c.ringTaskWindow)).toBe(true);
    expect([0, 1, 2, 3].map((d) => c.ringTaskWindowFor(d))).toEqual([16, DEFAULT_RING_TASK_WINDOW, 256, 4]);
    expect([0, 1, 2, 3].map((d) => c.ringHeapFor(d))).toEqual([DEFAULT_RING_HEAP, 2048, DEFAULT_RING_HEAP, 1 << 21]);
    expect([0, 1, 2, 3].map((d) => c.ringDepPoolFor(d))).toEqual([4, 100, 1024, 7]);
    expect(c.ringTaskWindowFor()).toBe(16);
    const s = new RunConfig({ ringTaskWindow: 32 });
    expect([0, 1, 2, 3].map((d) => s.ringTaskWindowFor(d))).toEqual([32, 32, 32, 32]);
    expect(() => s.ringHeapFor(4)).toThrow("RunConfig.ringHeapFor: depth must be an integer in [0, 3], got 4");
    // the caller's array is copied
    const arr = [8, 8, 8, 8];
    const c2 = new RunConfig({ ringTaskWindow: arr });
    arr[0] = 3;
    expect(c2.ringTaskWindowFor(0)).toBe(8);
  });
});

describe("RunConfig validation messages", () => {
  const bad: [RunConfigOptions | Record<string, unknown>, "TypeError" | "RangeError", string][] = [
    [{ platform: "tpu" }, "RangeError", 'RunConfig.platform must be one of "cpu", "interp", "cuda", "webgpu", got "tpu"'],
    [{ platform: 1 }, "TypeError", 'RunConfig.platform must be one of "cpu", "interp", "cuda", "webgpu", got 1'],
    [{ deviceId: -1 }, "RangeError", "RunConfig.deviceId must be an integer >= 0, got -1"],
    [{ deviceId: 1.5 }, "RangeError", "RunConfig.deviceId must be an integer >= 0, got 1.5"],
    [{ deviceId: "0" }, "TypeError", 'RunConfig.deviceId must be an integer >= 0, got "0"'],
    [{ enableChipSwimlane: 5 }, "RangeError", "RunConfig.enableChipSwimlane must be an integer 0-4 or a boolean (true = 4), got 5"],
    [{ enableChipSwimlane: -1 }, "RangeError", "RunConfig.enableChipSwimlane must be an integer 0-4 or a boolean (true = 4), got -1"],
    [{ enableChipSwimlane: "yes" }, "TypeError", 'RunConfig.enableChipSwimlane must be an integer 0-4 or a boolean (true = 4), got "yes"'],
    [{ enableDepGen: 1 }, "TypeError", "RunConfig.enableDepGen must be a boolean, got 1"],
    [{ enablePmu: -2 }, "RangeError", "RunConfig.enablePmu must be an integer >= 0 or a boolean (true = 1), got -2"],
    [{ enablePmu: 0.5 }, "RangeError", "RunConfig.enablePmu must be an integer >= 0 or a boolean (true = 1), got 0.5"],
    [{ enableDumpArgs: 3 }, "RangeError", "RunConfig.enableDumpArgs must be an integer 0-2 or a boolean (true = 1), got 3"],
    [{ enableScopeStats: "true" }, "TypeError", 'RunConfig.enableScopeStats must be a boolean, got "true"'],
    [{ ringTaskWindow: 6 }, "RangeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got 6`],
    [{ ringTaskWindow: 2 }, "RangeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got 2`],
    [{ ringTaskWindow: 0 }, "RangeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got 0`],
    [{ ringTaskWindow: "64" }, "TypeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got "64"`],
    [{ ringTaskWindow: [4, 8] }, "RangeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got [4, 8] (a list needs exactly 4 entries, got 2)`],
    [{ ringTaskWindow: [4, 6, 0, 0] }, "RangeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got [4, 6, 0, 0] (entry 1 is 6)`],
    [{ ringTaskWindow: [4, 8, "x", 0] }, "TypeError", `RunConfig.ringTaskWindow must be ${RING_TW}, got [4, 8, "x", 0] (entry 2 is "x")`],
    [{ ringHeap: 512 }, "RangeError", `RunConfig.ringHeap must be ${RING_HEAP}, got 512`],
    [{ ringHeap: 3000 }, "RangeError", `RunConfig.ringHeap must be ${RING_HEAP}, got 3000`],
    [{ ringHeap: [0, 0, 0, 512] }, "RangeError", `RunConfig.ringHeap must be ${RING_HEAP}, got [0, 0, 0, 512] (entry 3 is 512)`],
    [{ ringDepPool: 3 }, "RangeError", `RunConfig.ringDepPool must be ${RING_DEP}, got 3`],
    [{ ringDepPool: 2147483648 }, "RangeError", `RunConfig.ringDepPool must be ${RING_DEP}, got 2147483648`],
    [{ ringDepPool: [4, 4, 4, 4, 4] }, "RangeError", `RunConfig.ringDepPool must be ${RING_DEP}, got [4, 4, 4, 4, 4] (a list needs exactly 4 entries, got 5)`],
    [{ aicpuThreadNum: 0 }, "RangeError", "RunConfig.aicpuThreadNum must be an integer >= 1, got 0"],
    [{ rtol: -1e-5 }, "RangeError", "RunConfig.rtol must be a finite number >= 0, got -0.00001"],
    [{ atol: Infinity }, "RangeError", "RunConfig.atol must be a finite number >= 0, got Infinity"],
    [{ atol: "1e-5" }, "TypeError", 'RunConfig.atol must be a finite number >= 0, got "1e-5"'],
    [{ goldenDataDir: 3 }, "TypeError", "RunConfig.goldenDataDir must be a non-empty string (a directory path), got 3"],
    [{ saveKernelsDir: "" }, "RangeError", 'RunConfig.saveKernelsDir must be a non-empty string (a directory path), got ""'],
    [{ saveKernels: "yes" }, "TypeError", 'RunConfig.saveKernels must be a boolean, got "yes"'],
    [{ codegenOnly: 0 }, "TypeError", "RunConfig.codegenOnly must be a boolean, got 0"],
    [{ launchTimeoutS: -1 }, "RangeError", "RunConfig.launchTimeoutS must be a finite number >= 0, got -1"],
    [{ launchTimeoutS: Infinity }, "RangeError", "RunConfig.launchTimeoutS must be a finite number >= 0, got Infinity"],
    [{ launchTimeoutS: "5" }, "TypeError", 'RunConfig.launchTimeoutS must be a finite number >= 0, got "5"'],
  ];
  for (const [opts, kind, msg] of bad) {
    it(`rejects ${JSON.stringify(opts)}`, () => {
      let err: unknown;
      try {
        new RunConfig(opts as RunConfigOptions);
      } catch (e) {
        err = e;
      }
      // Wrong kind of value (formerly TypeError) and outside the rule (formerly RangeError)
      // are both a TsptoConfigError naming the field.
      void kind;
      expect(err).toBeInstanceOf(TsptoConfigError);
      expect(err).toBeInstanceOf(TsptoError);
      const ce = err as TsptoConfigError;
      expect(ce.code).toBe("E_CONFIG");
      expect(ce.detail).toBe(msg);
      expect(ce.message).toBe(`[E_CONFIG] ${msg}`);
      expect(ce.argument).toBe(Object.keys(opts)[0]);
    });
  }

  it("rejects unknown options and suggests the closest name", () => {
    const known = RUN_CONFIG_OPTIONS.join(", ");
    expect(() => new RunConfig({ platfrom: "cpu" } as never)).toThrow(
      `RunConfig: unknown option 'platfrom'; known options: ${known}; did you mean 'platform'?`);
    expect(() => new RunConfig({ ring_task_window: 8 } as never)).toThrow("did you mean 'ringTaskWindow'?");
    expect(() => new RunConfig({ enable_pmu: 1 } as never)).toThrow("did you mean 'enablePmu'?");
    expect(() => new RunConfig({ device_id: 1 } as never)).toThrow("did you mean 'deviceId'?");
    expect(() => new RunConfig({ zzzzzz: 1 } as never)).toThrow(`RunConfig: unknown option 'zzzzzz'; known options: ${known}`);
    expect(() => new RunConfig({ zzzzzz: 1 } as never)).not.toThrow("did you mean");
    expect(() => new RunConfig(5 as never)).toThrow("RunConfig: options must be an object, got 5");
    expect(() => new RunConfig(null as never)).toThrow("RunConfig: options must be an object, got null");
  });
});

describe("RunConfig behaviour", () => {
  it("is frozen", () => {
    const c = new RunConfig({ ringHeap: [0, 2048, 0, 0] });
    expect(Object.isFrozen(c)).toBe(true);
    expect(() => { (c as { platform: string }).platform = "cuda"; }).toThrow(TypeError);
    expect(() => { (c.ringHeap as number[])[0] = 4096; }).toThrow(TypeError);
    expect(c.platform).toBe("cpu");
  });

  it("forwards saveKernelsDir as outputDir only when set", () => {
    expect(new RunConfig().compileKwargs()).toEqual({ platform: "cpu" });
    expect("outputDir" in new RunConfig().compileKwargs()).toBe(false);
    expect(new RunConfig({ platform: "interp", saveKernelsDir: "/tmp/k" }).compileKwargs())
      .toEqual({ platform: "interp", outputDir: "/tmp/k" });
    // harness-only options do not appear
    expect(new RunConfig({ codegenOnly: true, rtol: 1e-2 }).compileKwargs()).toEqual({ platform: "cpu" });
  });

  it("with() makes a new validated config", () => {
    const base = new RunConfig({ platform: "interp", ringTaskWindow: 16, saveKernelsDir: "/tmp/a" });
    const c = base.with({ deviceId: 2 });
    expect(c).not.toBe(base);
    expect(c.platform).toBe("interp");
    expect(c.ringTaskWindow).toBe(16);
    expect(c.deviceId).toBe(2);
    expect(base.deviceId).toBe(0);
    expect(base.with({ saveKernelsDir: undefined }).saveKernelsDir).toBeUndefined();
    expect(() => base.with({ ringTaskWindow: 6 })).toThrow(`RunConfig.ringTaskWindow must be ${RING_TW}, got 6`);
    expect(() => base.with({ platfrom: "cpu" } as never)).toThrow("RunConfig: unknown option 'platfrom'");
    expect(() => base.with(null as never)).toThrow("RunConfig.with: overrides must be an object, got null");
  });

  it("serialises and prints", () => {
    const c = new RunConfig({ platform: "interp", ringHeap: [0, 2048, 0, 0], enableChipSwimlane: true });
    expect(JSON.parse(JSON.stringify(c))).toEqual({ ...new RunConfig().toJSON(), platform: "interp", ringHeap: [0, 2048, 0, 0], enableChipSwimlane: 4 });
    expect(String(c)).toBe('RunConfig(platform="interp", enableChipSwimlane=4, ringHeap=[0, 2048, 0, 0])');
    expect(String(new RunConfig())).toBe("RunConfig()");
    expect(new RunConfig(c).toJSON()).toEqual(c.toJSON());
  });

  it("recognises RunConfig instances", () => {
    expect(RunConfig.isRunConfig(new RunConfig())).toBe(true);
    expect(RunConfig.isRunConfig({ platform: "cpu" })).toBe(false);
    expect(RunConfig.isRunConfig(null)).toBe(false);
  });
});
