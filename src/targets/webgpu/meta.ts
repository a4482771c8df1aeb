// The metadata of a webgpu program (compiled_meta.json in an artifact directory, ./build.ts;
// held in memory in a browser, ./browser.ts) and its module as the device loads it. It imports
// no Node built-in.
import type { Program } from "../../ir/index.js";
import { entrySignature } from "../../codegen/signature.js";
import { kernelSymbols } from "../../codegen/cpp/symbols.js";
import type { GeneratedWgsl } from "../../codegen/wgsl/index.js";
import { META_SCHEMA, META_SCHEMA_VERSION, type CompiledMeta } from "../../artifact/meta.js";
import type { WebGpuModuleSource } from "./device.js";

/** compiled_meta.json of a webgpu program: no library; one kernel entry per InCore function. */
export function webgpuMeta(program: Program, gen: GeneratedWgsl, packageVersion: string): CompiledMeta {
  const sig = entrySignature(program, { dynamicDims: false, platform: "webgpu" });
  const symbols = kernelSymbols(program);
  const kernels = program.functions.filter((fn) => fn.name !== program.entry).map((fn, i) => ({
    name: fn.name, symbol: symbols.get(fn.name)!, scratchBytes: gen.kernels[i]?.scratchBytes ?? 0,
  }));
  return {
    schema: META_SCHEMA, schemaVersion: META_SCHEMA_VERSION, name: program.name, entry: program.entry, platform: "webgpu",
    backendType: "wgsl", runtimeName: "tspto-webgpu", ...sig,
    scratchBytes: kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0),
    kernels, library: null, libraryHash: null, tspto: packageVersion, createdAt: new Date().toISOString(),
  };
}

/** The module a device loads, from the generated WGSL (what ./node.ts reads back from the files). */
export function moduleOf(program: Program, gen: GeneratedWgsl, dir: string): WebGpuModuleSource {
  return { name: program.name, dir, program, kernels: gen.kernels.map((k) => ({ ...k, file: `kernels/${k.symbol}.wgsl` })), sites: gen.sites };
}
