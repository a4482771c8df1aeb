// webgpu target: lowered Program -> artifact directory:
//   compiled_meta.json       platform "webgpu", no library
//   program.json             the lowered IR (the device runs its entry in JavaScript)
//   kernels/<symbol>.wgsl    one WGSL compute module per InCore function (src/codegen/wgsl)
//   kernels/webgpu.json      the kernel table: entry points, parameters, uniform words,
//                            scratch, workgroup memory, and the run-time failure sites
//   orchestration/README.md  how the entry runs
// Nothing is compiled here: the WebGPU implementation compiles the modules when a device loads
// the program (createShaderModule / createComputePipeline), and reports their errors then.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Program } from "../../ir/index.js";
import { generateWgsl, WGSL_CODEGEN_VERSION } from "../../codegen/wgsl/index.js";
import { ORCHESTRATION_DIR, PROGRAM_FILE, canonicalJSON, sha256, writeArtifact } from "../../artifact/index.js";
import { webgpuMeta } from "./meta.js";
import type { ArtifactRef, BuildOptions } from "../target.js";
import { KERNEL_TABLE } from "./node.js";

export function buildWebgpu(program: Program, opts: BuildOptions): ArtifactRef {
  const gen = generateWgsl(program);
  const key = sha256([WGSL_CODEGEN_VERSION, opts.packageVersion, opts.fingerprint ?? "", "webgpu", JSON.stringify(opts.options ?? {}), canonicalJSON(program.toJSON())].join("\0"));
  return writeArtifact({ name: program.name, key, outputDir: opts.outputDir, dumps: opts.dumps }, (f) => {
    writeFileSync(join(f.dir, PROGRAM_FILE), `${JSON.stringify(program.toJSON(), null, 1)}\n`);
    mkdirSync(join(f.dir, "kernels"), { recursive: true });
    const table = {
      workgroupSize: gen.workgroupSize,
      kernels: gen.kernels.map((k) => {
        const file = `kernels/${k.symbol}.wgsl`;
        writeFileSync(join(f.dir, file), k.source);
        const { source: _s, ...rest } = k;
        return { ...rest, file };
      }),
      sites: gen.sites,
    };
    writeFileSync(join(f.dir, KERNEL_TABLE), `${JSON.stringify(table, null, 1)}\n`);
    mkdirSync(join(f.dir, ORCHESTRATION_DIR), { recursive: true });
    writeFileSync(join(f.dir, ORCHESTRATION_DIR, "README.md"),
      `Platform "webgpu": the device runs the entry '${program.entry}' of ../${PROGRAM_FILE} in JavaScript (src/targets/webgpu/orchestrate.ts); `
      + `each call of an InCore function is one dispatch of its WGSL module (../kernels/), all of a launch's dispatches in one command encoder and one submit.\n`);
    return webgpuMeta(program, gen, opts.packageVersion);
  });
}
