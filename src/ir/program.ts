// ir.Program: the unit that flows through the passes. Immutable.
import type { Func, Span } from "./nodes.js";
import { NO_SPAN } from "./nodes.js";
import { printProgram } from "./printer.js";
import { programToJSON, programFromJSON, type ProgramJSON } from "./json.js";
import { programsEqual } from "./equal.js";

export class Program {
  readonly name: string;
  /** Name of the entry (orchestration) function. */
  readonly entry: string;
  readonly functions: readonly Func[];
  readonly span: Span;
  constructor(name: string, entry: string, functions: readonly Func[], span: Span = NO_SPAN) {
    this.name = name;
    this.entry = entry;
    this.functions = Object.freeze([...functions]);
    this.span = span;
    Object.freeze(this);
  }
  get entryFunction(): Func {
    const f = this.functions.find((fn) => fn.name === this.entry);
    if (!f) throw new Error(`internal: program '${this.name}' has no entry function '${this.entry}'`);
    return f;
  }
  getFunction(name: string): Func | undefined {
    return this.functions.find((f) => f.name === name);
  }
  /** A copy with `functions` replaced. */
  withFunctions(functions: readonly Func[]): Program {
    return new Program(this.name, this.entry, functions, this.span);
  }
  /** Kernel source that parses back (src/dsl `parseProgramText`) to a structurally equal program. */
  asText(): string {
    return printProgram(this);
  }
  toString(): string {
    return this.asText();
  }
  toJSON(): ProgramJSON {
    return programToJSON(this);
  }
  static fromJSON(json: ProgramJSON | string): Program {
    const j = typeof json === "string" ? (JSON.parse(json) as ProgramJSON) : json;
    return programFromJSON(j, (name, entry, fns, span) => new Program(name, entry, fns, span));
  }
  /** Equal up to variable renaming (alpha-equivalence); spans are ignored. */
  structurallyEqual(other: Program): boolean {
    return programsEqual(this, other) === null;
  }
  /** Where two programs first differ, or null when structurally equal. */
  structuralDiff(other: Program): string | null {
    return programsEqual(this, other);
  }
}
