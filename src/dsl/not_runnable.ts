// The guard of every `pl` declaration: kernels are parsed, not run.
import { TsptoRuntimeError } from "../ir/errors.js";

export function notRunnable(name: string): never {
  throw new TsptoRuntimeError("E_NOT_RUNNABLE",
    `pl.${name} was called at run time; kernels are parsed, not run — wrap the function with pl.jit and call the jit function`);
}
