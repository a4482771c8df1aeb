// CompiledProgram: the handle of a built artifact directory. The runtime sees a program
// only through this object: its metadata (compiled_meta.json), its library (cpu) or its
// lowered IR document (interp).
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Program, TsptoRuntimeError, type Value, type TensorValue } from "../ir/index.js";
import { validateMeta, type CompiledMeta } from "../codegen/index.js";
import type { RunConfig } from "./config.js";
import { asTensorLike, assertClose, HostTensor } from "./host.js";
import { interpret } from "./interp.js";
import { newTensor } from "../ir/index.js";

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

export class CompiledProgram {
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

  /** The runtime-side handle: the library to dlopen (cpu) or the lowered IR (interp). */
  get chipCallable(): ChipCallable {
    if (this.#callable) return this.#callable;
    if (this.meta.library) {
      const path = join(this.outputDir, this.meta.library);
      if (!existsSync(path)) throw new Error(`${path}: program library is missing; compile the program again`);
      if (this.meta.libraryHash) {
        const h = createHash("sha256").update(readFileSync(path)).digest("hex");
        if (h !== this.meta.libraryHash) {
          throw new Error(`${path}: library hash ${h.slice(0, 12)}… does not match compiled_meta.json (${this.meta.libraryHash.slice(0, 12)}…); the artifact was modified — compile it again`);
        }
      }
      this.#callable = { kind: "library", path, sha256: this.meta.libraryHash };
    } else {
      const file = join(this.outputDir, "program.json");
      let text: string;
      try { text = readFileSync(file, "utf8"); } catch { throw new Error(`${file}: missing; compile the program again`); }
      this.#callable = { kind: "ir", program: Program.fromJSON(text) };
    }
    return this.#callable;
  }

  /** Loads the runtime-side handle now (it is otherwise loaded on first launch). */
  load(): this {
    void this.chipCallable;
    return this;
  }

  static fromDir(dir: string, opts: { platform?: string } = {}): CompiledProgram {
    const file = join(resolve(dir), "compiled_meta.json");
    let text: string;
    try { text = readFileSync(file, "utf8"); } catch (e) {
      throw new Error(`${file}: cannot read compiled_meta.json (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); is '${dir}' a tspto artifact directory?`);
    }
    const meta = validateMeta(text, file);
    if (opts.platform !== undefined && opts.platform !== meta.platform) {
      throw new Error(`${file}: the program was built for platform '${meta.platform}', not '${opts.platform}'; compile it for '${opts.platform}'`);
    }
    return new CompiledProgram(dir, meta, null);
  }

  /** One-shot dispatch on the default worker of the config's (or this program's) platform. */
  run(...args: unknown[]): unknown {
    return dispatchDefault(this, args);
  }

  /**
   * Runs the program after every pass (from passes_dump/*.json, written when compiled with
   * dumpPasses) through the interpreter and compares the outputs with `expected`
   * (one per output parameter, in outputIndices order). Reports the first pass that departs.
   */
  validateIr(inputs: readonly unknown[], expected: readonly unknown[], tol: { rtol?: number; atol?: number } = {}): ValidateIrReport {
    const dir = join(this.outputDir, "passes_dump");
    const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")).sort() : [];
    if (files.length === 0) throw new Error(`${dir}: no pass dumps; compile with ir.compile(program, { dumpPasses: true })`);
    const outputs = this.meta.outputIndices;
    if (expected.length !== outputs.length) {
      throw new Error(`validateIr: expected ${outputs.length} expected tensors (one per output parameter: ${outputs.map((i) => this.meta.params[i].name).join(", ")}), got ${expected.length}`);
    }
    const passes: { pass: string; ok: boolean; message?: string }[] = [];
    for (const f of files) {
      const pass = f.replace(/^\d+_after_/, "").replace(/\.json$/, "");
      let message: string | undefined;
      try {
        const program = Program.fromJSON(readFileSync(join(dir, f), "utf8"));
        // Fresh device-side copies of the inputs for every pass (outputs start zeroed).
        const values: Value[] = this.meta.params.map((prm, i) => {
          if (prm.kind === "scalar") return inputs[i] as Value;
          const h = asTensorLike(inputs[i]);
          if (!h) throw new Error(`validateIr: input '${prm.name}' must be a tensor`);
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

/** Set by worker.ts (avoids an import cycle at module evaluation). */
let dispatchDefault: (c: CompiledProgram, args: unknown[]) => unknown = () => {
  throw new TsptoRuntimeError("E_INTERNAL", "runtime not initialised");
};
export function setDefaultDispatch(f: (c: CompiledProgram, args: unknown[]) => unknown): void {
  dispatchDefault = f;
}
export type { RunConfig };
