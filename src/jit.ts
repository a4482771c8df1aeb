// JitFunction: what pl.jit returns. Specializes a kernel on its arguments (tensor shapes and
// dtypes, scalar values), lowers and compiles on a cache miss, keeps the CompiledProgram in
// an in-memory LRU, and dispatches through the default worker of the call's platform.
import { LRUCache } from "lru-cache";
import { TsptoRuntimeError, scalarT, tensorT, type Program, type Type } from "./ir/index.js";
import { parseKernel, paramInfo, roundTrip, type KernelDef, type ParamBinding } from "./dsl/index.js";
import { lowerProgram } from "./passes/index.js";
import { compile, rememberDumps } from "./compile.js";
import { CompiledProgram } from "./runtime/compiled.js";
import { RunConfig } from "./runtime/config.js";
import { DeviceTensor } from "./runtime/device_tensor.js";
import { HostTensor, asTensorLike } from "./runtime/host.js";
import { defaultWorker } from "./runtime/worker.js";
import { callerSpan } from "./runtime/caller.js";

export interface JitFunction<F extends (...args: never[]) => unknown = (...args: never[]) => unknown> {
  (...args: [...Parameters<F>, RunConfig?] | unknown[]): unknown;
  /** Specialize + compile (cached); same key -> the identical CompiledProgram. */
  compile(...sampleArgs: unknown[]): CompiledProgram;
  /** Specialize + run the passes; returns the lowered program (no artifacts, no cache). */
  lower(...sampleArgs: unknown[]): Program;
  /** Number of specializations held. */
  readonly cacheSize: number;
  clearCache(): void;
  /** @internal the kernel definition */
  readonly def: KernelDef;
}

const DEFAULT_CONFIG = new RunConfig();
const CACHE_MAX = 256;

export function createJitFunction(def: KernelDef): JitFunction {
  const cache = new LRUCache<string, CompiledProgram>({ max: CACHE_MAX });

  const splitConfig = (args: unknown[]): [unknown[], RunConfig] => {
    const last = args[args.length - 1];
    return last instanceof RunConfig ? [args.slice(0, -1), last] : [args, DEFAULT_CONFIG];
  };

  /** Binds call arguments to parameters; the key holds everything that changes the output. */
  const bind = (args: unknown[], platform: string): { bindings: ParamBinding[]; key: string } => {
    const params = paramInfo(def);
    if (args.length !== params.length) {
      throw new TsptoRuntimeError("E_ARITY", `'${def.name}' takes ${params.length} arguments (${params.map((p) => p.name).join(", ")}), got ${args.length}`,
        callerSpan(), "pass one argument per kernel parameter, optionally followed by a RunConfig");
    }
    let key = platform;
    const bindings: ParamBinding[] = params.map((p, i) => {
      const a = args[i];
      if (a instanceof DeviceTensor) {
        throw new TsptoRuntimeError("E_DEVICE_TENSOR_AT_JIT", `missing inferred tensor metadata for parameter '${p.name}'`, callerSpan(),
          "a DeviceTensor carries no shape/dtype for the jit specializer: compile the program from samples (f.compile(...) or ir.compile(f.lower(...))) and dispatch it with ChipWorker.run or a registered handle");
      }
      if (typeof a === "number" || typeof a === "boolean") {
        const dynamic = p.kind === "scalar" && p.annotated?.kind === "scalar";
        const type: Type = dynamic ? p.annotated! : scalarT(typeof a === "boolean" ? "bool" : Number.isInteger(a) ? "int64" : "float32");
        key += dynamic ? `|${p.name}:s` : `|${p.name}=${typeof a === "boolean" ? a : Object.is(a, -0) ? "-0" : a}`;
        return dynamic ? { name: p.name, type } : { name: p.name, type, value: a };
      }
      const h = a instanceof HostTensor ? a : asTensorLike(a);
      if (!h) {
        throw new TsptoRuntimeError("E_ARG", `argument '${p.name}' (#${i + 1}) of '${def.name}' must be a tensor or a number, got ${a === null ? "null" : typeof a}`, callerSpan(),
          "pass a HostTensor (tensor/zeros/randn), a tensor-like {data, shape}, or a number");
      }
      key += `|${p.name}:${h.dtype}[${h.shape.join(",")}]`;
      return { name: p.name, type: tensorT(h.shape, h.dtype) };
    });
    return { bindings, key };
  };

  const lowerFrom = (bindings: ParamBinding[], platform: string) => {
    const program = parseKernel(def, bindings);
    const r = lowerProgram(program, { platform, dump: true });
    // Self-checks (tests set TSPTO_ROUNDTRIP=1): every program built, and its form after every
    // pass, must print as kernel source that parses back to a structurally equal program.
    if (process.env.TSPTO_ROUNDTRIP === "1") for (const d of r.dumps) roundTrip(d.program);
    rememberDumps(r.program, r.dumps);
    return r.program;
  };

  const compiledFor = (args: unknown[], cfg: RunConfig): CompiledProgram => {
    if (def.kind !== "orchestration") {
      throw new TsptoRuntimeError("E_NOT_ENTRY", `'${def.name}' is a pl.jit.${def.kind} kernel; it can only be called from a pl.jit entry`, def.site ?? undefined,
        "call it from a function wrapped with pl.jit, or wrap it with pl.jit to make it an entry");
    }
    const { bindings, key } = bind(args, cfg.platform);
    let c = cache.get(key);
    if (!c) {
      c = compile(lowerFrom(bindings, cfg.platform), { platform: cfg.platform, ...(cfg.saveKernelsDir ? { outputDir: cfg.saveKernelsDir } : {}) });
      cache.set(key, c);
    }
    return c;
  };

  const f = function (this: unknown, ...all: unknown[]) {
    const [args, cfg] = splitConfig(all);
    const compiled = compiledFor(args, cfg);
    return defaultWorker(cfg).run(compiled, ...args, cfg);
  } as unknown as JitFunction;

  Object.defineProperties(f, {
    name: { value: def.name },
    def: { value: def },
    compile: { value: (...all: unknown[]) => { const [args, cfg] = splitConfig(all); return compiledFor(args, cfg); } },
    lower: { value: (...all: unknown[]) => { const [args, cfg] = splitConfig(all); return lowerFrom(bind(args, cfg.platform).bindings, cfg.platform); } },
    cacheSize: { get: () => cache.size },
    clearCache: { value: () => cache.clear() },
  });
  return f;
}
