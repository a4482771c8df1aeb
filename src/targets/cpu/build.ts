// cpu target: lowered Program -> artifact directory with the generated C++ (kernels/: the
// program and the prelude header it includes), the orchestration excerpt, and
// build/libprogram.so compiled by the system C++ compiler.
import { readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { arch, cpus } from "node:os";
import { join } from "node:path";
import type { Program } from "../../ir/index.js";
import { ENTRY_BEGIN, ENTRY_END, entrySignature, generateCpp } from "../../codegen/index.js";
import {
  BUILD_DIR, KERNELS_DIR, META_SCHEMA, META_SCHEMA_VERSION, ORCHESTRATION_DIR, PROGRAM_FILE, STAMP_FILE,
  canonicalJSON, sha256, writeArtifactSteps, type ArtifactRef,
} from "../../artifact/index.js";
import type { BuildOptions } from "../target.js";
import { runSteps, runStepsAsync, type Steps } from "../steps.js";
import { LIBRARY_PATH, SOURCE_PATH, compileLibrarySteps, cpuFlags, cpuIsa, cxxFlags, toolchain } from "./toolchain.js";

/** Bump when generated code changes meaning (part of the artifact key). */
const CODEGEN_VERSION = "cpp-2";

/** The cpu build's identity: toolchain, flags, the ISA path (isa.ts) and the CPU it targets (-march=native). */
export function cpuKeyParts(): string[] {
  const tc = toolchain();
  return [tc.command, tc.path ?? "", tc.version, cxxFlags().join(" "), `isa=${cpuIsa() ?? "native"}`, arch(), cpus()[0]?.model ?? "", cpuFlags()];
}

export function buildCpu(program: Program, opts: BuildOptions): ArtifactRef {
  return runSteps(buildCpuSteps(program, opts));
}

/** buildCpu with its compiles off the event loop (compileAsync). */
export function buildCpuAsync(program: Program, opts: BuildOptions): Promise<ArtifactRef> {
  return runStepsAsync(buildCpuSteps(program, opts));
}

function* buildCpuSteps(program: Program, opts: BuildOptions): Steps<ArtifactRef> {
  const sig = entrySignature(program, { dynamicDims: true, platform: "cpu" });
  const gen = generateCpp(program);
  const tc = toolchain();
  const key = sha256([CODEGEN_VERSION, opts.packageVersion, opts.fingerprint ?? "", "cpu", JSON.stringify(opts.options ?? {}),
    canonicalJSON(program.toJSON()), sha256(gen.source), sha256(gen.prelude.text), ...cpuKeyParts()].join("\0"));
  return yield* writeArtifactSteps({ name: program.name, key, outputDir: opts.outputDir, dumps: opts.dumps }, function* (f) {
    const dir = f.dir;
    writeFileSync(join(dir, PROGRAM_FILE), `${JSON.stringify(program.toJSON(), null, 1)}\n`);
    for (const d of [KERNELS_DIR, ORCHESTRATION_DIR, BUILD_DIR]) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, SOURCE_PATH), gen.source);
    // the prelude the source includes, next to it: the artifact builds (and reads) without the precompiled header
    writeFileSync(join(dir, KERNELS_DIR, gen.prelude.header), gen.prelude.text);
    const b = gen.source.indexOf(ENTRY_BEGIN), e = gen.source.indexOf(ENTRY_END);
    writeFileSync(join(dir, ORCHESTRATION_DIR, "entry.cpp"),
      `// Excerpt of ../${SOURCE_PATH}: the orchestration, compiled into ../${LIBRARY_PATH} as tspto_entry.\n${b >= 0 && e > b ? gen.source.slice(b, e + ENTRY_END.length) : ""}\n`);
    writeFileSync(join(dir, ORCHESTRATION_DIR, "README.md"),
      `The orchestration of '${program.entry}' runs on the host as \`tspto_entry\` in ../${LIBRARY_PATH}; it submits one task per InCore call to the runtime.\nentry.cpp is the excerpt of ../${SOURCE_PATH} that defines it.\n`);
    // on a compile failure, leave the generated source where the user can read it
    const { flags, ms, groups, cached } = yield* compileLibrarySteps(tc, dir, program.name, () => join(f.publishPartial(), SOURCE_PATH), gen.units, gen.prelude);
    const libraryHash = sha256(readFileSync(join(dir, LIBRARY_PATH)));
    writeFileSync(join(dir, STAMP_FILE), `${JSON.stringify({
      compiler: tc.command, compilerPath: tc.path, version: tc.version, flags, compileMs: Math.round(ms),
      // built as several objects at once (src/targets/cpu/units.ts): the source units of each
      ...(groups.length > 1 ? { units: groups } : {}),
      // the units whose objects came from the object cache (src/targets/cpu/objects.ts): compiled by an earlier build
      ...(cached.length ? { cachedUnits: cached } : {}),
      sourceSha256: sha256(gen.source), librarySha256: libraryHash, key,
    }, null, 2)}\n`);
    return {
      schema: META_SCHEMA, schemaVersion: META_SCHEMA_VERSION, name: program.name, entry: program.entry, platform: "cpu",
      backendType: "cpp", runtimeName: "tspto-cpu-sim", ...sig,
      scratchBytes: gen.kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0),
      kernels: gen.kernels, library: LIBRARY_PATH, libraryHash, tspto: opts.packageVersion, createdAt: new Date().toISOString(),
    };
  });
}
