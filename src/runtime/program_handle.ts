// The handle of a built artifact directory (the base of CompiledProgram, which adds
// dispatch). The runtime sees a program only through this object: its metadata
// (compiled_meta.json) and what its target loads (a library, or the lowered IR document).
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Program, TsptoError, interpret, newTensor, type Value, type TensorValue } from "../ir/index.js";
import { FILE_LIMITS, PASSES_DUMP_DIR, readProgram, readTextInside, verifiedLibrary, type ArtifactRef, type CompiledMeta } from "../artifact/index.js";
import { asTensorLike, assertClose, HostTensor } from "./host/index.js";

/** What a runtime needs to launch the program (loaded lazily, once). */
export type ChipCallable =
  | { readonly kind: "library"; readonly path: string; readonly sha256: string | null }
  | { readonly kind: "ir"; readonly program: Program };

export interface ValidateIrReport {
  /** Pass dumps checked, in order, with whether their result matched. */
  readonly passes: { readonly pass: string; readonly ok: boolean; readonly message?: string }[];
  /** The first pass whose result departs from `expected` (null: all agree). */
  readonly firstBadPass: string | null;
}

export class ProgramHandle implements ArtifactRef {
  readonly outputDir: string;
  readonly meta: CompiledMeta;
  /** The ir.Program handed to compile, as received; null after fromDir. */
  readonly program: Program | null;
  #callable: ChipCallable | undefined;

  /** @internal use ir.compile or CompiledProgram.fromDir */
  constructor(outputDir: string, meta: CompiledMeta, program: Program | null) {
    this.outputDir = resolve(outputDir);
    this.meta = meta;
    this.program = program;
  }

  get platform(): string { return this.meta.platform; }
  get backendType(): string { return this.meta.backendType; }
  get paramNames(): string[] { return this.meta.params.map((p) => p.name); }
  get outputIndices(): number[] { return [...this.meta.outputIndices]; }
  get hasReturn(): boolean { return this.meta.hasReturn; }
  get runtimeName(): string { return this.meta.runtimeName; }
  get runtimeConfig(): { readonly scratchBytes: number; readonly kernels: readonly string[] } {
    return { scratchBytes: this.meta.scratchBytes, kernels: this.meta.kernels.map((k) => k.name) };
  }

  /** What a device loads: the artifact's library (hash-checked), or its lowered IR when it has none. */
  get chipCallable(): ChipCallable {
    if (this.#callable) return this.#callable;
    this.#callable = this.meta.library
      ? { kind: "library", path: verifiedLibrary(this), sha256: this.meta.libraryHash }
      : { kind: "ir", program: readProgram(this) };
    return this.#callable;
  }

  /** Loads the runtime-side handle now (it is otherwise loaded on first launch). */
  load(): this {
    void this.chipCallable;
    return this;
  }

  /**
   * Runs the program after every pass (from passes_dump/*.json, written when compiled with
   * dumpPasses) through the interpreter and compares the outputs with `expected`
   * (one per output parameter, in outputIndices order). Reports the first pass that departs.
   */
  validateIr(inputs: readonly unknown[], expected: readonly unknown[], tol: { rtol?: number; atol?: number } = {}): ValidateIrReport {
    const dir = join(this.outputDir, PASSES_DUMP_DIR);
    const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")).sort() : [];
    if (files.length === 0) throw new TsptoError("E_NO_DUMPS", `${dir}: no pass dumps`, undefined, "compile with ir.compile(program, { dumpPasses: true })");
    const outputs = this.meta.outputIndices;
    if (expected.length !== outputs.length) {
      throw new TsptoError("E_ARG", `validateIr: expected ${outputs.length} expected tensors (one per output parameter: ${outputs.map((i) => this.meta.params[i].name).join(", ")}), got ${expected.length}`);
    }
    const passes: { pass: string; ok: boolean; message?: string }[] = [];
    for (const f of files) {
      const pass = f.replace(/^\d+_after_/, "").replace(/\.json$/, "");
      let message: string | undefined;
      try {
        const program = Program.fromJSON(readTextInside(this.outputDir, `${PASSES_DUMP_DIR}/${f}`, { maxBytes: FILE_LIMITS.program }));
        // Fresh device-side copies of the inputs for every pass (outputs start zeroed).
        const values: Value[] = this.meta.params.map((prm, i) => {
          if (prm.kind === "scalar") return inputs[i] as Value;
          const h = asTensorLike(inputs[i]);
          if (!h) throw new TsptoError("E_ARG", `validateIr: input '${prm.name}' must be a tensor`);
          const tv = newTensor(h.shape, h.dtype);
          if (prm.direction !== "out") new Uint8Array(tv.data.buffer).set(new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength));
          return tv;
        });
        interpret(program, values);
        outputs.forEach((pi, k) => {
          const tv = values[pi] as TensorValue;
          assertClose(new HostTensor(tv.data as never, tv.shape as number[], tv.dtype), expected[k] as HostTensor,
            { rtol: tol.rtol ?? 1e-5, atol: tol.atol ?? 1e-5 });
        });
      } catch (e) {
        message = (e as Error).message;
      }
      passes.push(message === undefined ? { pass, ok: true } : { pass, ok: false, message });
    }
    return { passes, firstBadPass: passes.find((p) => !p.ok)?.pass ?? null };
  }

  toString(): string {
    return `CompiledProgram(${this.meta.name}, platform=${this.platform}, outputDir=${this.outputDir})`;
  }
}

