// The interp target: no code generation; the device evaluates the lowered IR (program.json)
// in TypeScript with the op registry's reference semantics. The golden reference of the tests
// and a debugging mode. Its device memory is TypeScript memory.
import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { entrySignature } from "../../codegen/signature.js";
import { META_SCHEMA, META_SCHEMA_VERSION, ORCHESTRATION_DIR, PROGRAM_FILE, canonicalJSON, sha256, writeArtifact } from "../../artifact/index.js";
import { kernelSymbols } from "../../codegen/cpp/symbols.js";
import type { Target } from "../target.js";
import { InterpDevice } from "./device.js";

export const interpTarget: Target = {
  name: "interp",
  summary: "the TypeScript reference interpreter of the IR",
  // The cpu target's capacity and plan (the interpreter reads no scratch itself: it keeps the
  // cpu plan so that a kernel that fits on cpu fits here too).
  description: { scratchBytes: 1 << 20, matmulOperandsInPlace: true },
  cacheKeyParts: () => [],
  openDevice: (opts) => new InterpDevice(opts),
  build(program, opts) {
    const sig = entrySignature(program, { dynamicDims: true, platform: "interp" });
    const key = sha256(["interp-1", opts.packageVersion, opts.fingerprint ?? "", "interp", JSON.stringify(opts.options ?? {}), canonicalJSON(program.toJSON())].join("\0"));
    return writeArtifact({ name: program.name, key, outputDir: opts.outputDir, dumps: opts.dumps }, (f) => {
      writeFileSync(join(f.dir, PROGRAM_FILE), `${JSON.stringify(program.toJSON(), null, 1)}\n`);
      mkdirSync(join(f.dir, ORCHESTRATION_DIR), { recursive: true });
      writeFileSync(join(f.dir, ORCHESTRATION_DIR, "README.md"),
        `Platform "interp": the runtime evaluates ../${PROGRAM_FILE} (entry '${program.entry}') with the op registry's reference semantics; nothing is compiled.\n`);
      const symbols = kernelSymbols(program);
      const kernels = program.functions.filter((fn) => fn.name !== program.entry).map((fn) => ({
        name: fn.name, symbol: symbols.get(fn.name)!, scratchBytes: typeof fn.attrs.scratchBytes === "number" ? fn.attrs.scratchBytes : 0,
      }));
      return {
        schema: META_SCHEMA, schemaVersion: META_SCHEMA_VERSION, name: program.name, entry: program.entry, platform: "interp",
        backendType: "interp", runtimeName: "tspto-interp", ...sig,
        scratchBytes: kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0),
        kernels, library: null, libraryHash: null, tspto: opts.packageVersion, createdAt: new Date().toISOString(),
      };
    });
  },
};
