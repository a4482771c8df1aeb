// Native (device) errors -> TsptoErrors. The native addon throws plain Errors carrying a
// stable `code` (native/src/errors.h) and, for a launch argument, `argIndex` (0-based);
// fromNativeError maps them to the TsptoError subclass and public code of the table below
// (docs/errors.md lists every public code). The cpu and cuda targets' Devices (targets/*/device.ts)
// call it wherever a native call can fail, so no native error reaches the user untranslated.
import {
  TsptoArgumentError,
  TsptoDeviceError,
  TsptoError,
  TsptoKernelError,
  TsptoOutOfMemoryError,
  type Span,
} from "../ir/index.js";
import { oomHint } from "./target.js";

type ErrorClass = new (...a: ConstructorParameters<typeof TsptoError>) => TsptoError;

/** One row of the native code table. */
export interface NativeCodeEntry {
  /** The public TsptoError code. */
  readonly code: string;
  readonly cls: ErrorClass;
  readonly hint: string;
}

/** Native code -> public code, class and hint. The one place this mapping lives. */
export const NATIVE_ERROR_CODES: Readonly<Record<string, NativeCodeEntry>> = Object.freeze({
  TSPTO_DEVICE_OOM: {
    code: "E_DEVICE_OOM",
    cls: TsptoOutOfMemoryError,
    hint: oomHint("raise TSPTO_DEVICE_MEMORY"),
  },
  TSPTO_KERNEL_FAILURE: {
    code: "E_KERNEL",
    cls: TsptoKernelError,
    hint: "the program failed while it ran (see the message: a dynamic window out of bounds, an orchestration buffer that did not fit); host Out buffers were not written",
  },
  TSPTO_DEVICE_CLOSED: {
    code: "E_CLOSED",
    cls: TsptoDeviceError,
    hint: "the device (its ChipWorker) was closed; construct a new ChipWorker",
  },
  TSPTO_BAD_ADDRESS: {
    code: "E_ADDRESS",
    cls: TsptoDeviceError,
    hint: "use the dataPtr of a live DeviceTensor of this worker (not freed, not interior, the range inside the tensor)",
  },
  TSPTO_HOST_VIEW: {
    code: "E_HOST_VIEW",
    cls: TsptoArgumentError,
    hint: "pass a view that holds the whole tensor; do not transfer, detach or shrink its ArrayBuffer while tspto uses it",
  },
  TSPTO_BAD_ARGUMENT: {
    code: "E_ARG",
    cls: TsptoArgumentError,
    hint: "check the value named in the message",
  },
  TSPTO_MODULE: {
    code: "E_MODULE",
    cls: TsptoDeviceError,
    hint: "rebuild the program (ir.compile / the jit does it) and register it again",
  },
  TSPTO_NO_GPU: {
    code: "E_NO_GPU",
    cls: TsptoDeviceError,
    hint: "run on a machine with an NVIDIA GPU and its driver (libcuda.so.1), or use the cpu / interp platform",
  },
  TSPTO_CUDA: {
    code: "E_CUDA",
    cls: TsptoDeviceError,
    hint: "a CUDA driver call failed (see the message); check the GPU with nvidia-smi",
  },
});

/** What a caller knows about the failed call, to make the message name the argument. */
export interface NativeErrorContext {
  /** Names of the launch arguments (entry parameters), by index. */
  readonly argNames?: readonly string[];
  /** The program's name (CompiledProgram.meta.name). */
  readonly program?: string;
  /** The user's call site. */
  readonly span?: Span;
}

/**
 * Turns an error thrown by the native addon into the TsptoError subclass of its code.
 * TsptoErrors pass through unchanged; errors without a known code become a
 * TsptoDeviceError with code E_NATIVE (the original error is the `cause` in every case).
 * With `argIndex` on the error the result names the argument (`argument`, 1-based
 * `position`, and `argNames` from the context when given).
 */
export function fromNativeError(e: unknown, context: NativeErrorContext = {}): TsptoError {
  if (e instanceof TsptoError) return e;
  const err = e instanceof Error ? (e as Error & { code?: unknown; argIndex?: unknown }) : undefined;
  const nativeCode = typeof err?.code === "string" ? err.code : undefined;
  const entry = nativeCode !== undefined ? NATIVE_ERROR_CODES[nativeCode] : undefined;
  const message = err ? err.message : `non-Error value thrown by the native runtime: ${String(e)}`;
  const index = typeof err?.argIndex === "number" && Number.isInteger(err.argIndex) && err.argIndex >= 0 ? err.argIndex : undefined;
  const name = index !== undefined ? context.argNames?.[index] : undefined;
  let detail = message;
  if (index !== undefined) {
    const who = name !== undefined ? `argument '${name}' (#${index + 1})` : `argument #${index + 1}`;
    detail = `${who}${context.program ? ` of '${context.program}'` : ""}: ${message}`;
  }
  const where = {
    argument: name ?? (index !== undefined ? `#${index + 1}` : undefined),
    position: index !== undefined ? index + 1 : undefined,
    cause: e,
  };
  if (!entry) {
    return new TsptoDeviceError("E_NATIVE", detail, context.span, "an unexpected failure of the native runtime; please report it with this message", where);
  }
  return new entry.cls(entry.code, detail, context.span, entry.hint, where);
}

/** Calls `f`, rethrowing native errors as TsptoErrors. */
export function guardNative<T>(f: () => T, context?: NativeErrorContext): T {
  try {
    return f();
  } catch (e) {
    throw fromNativeError(e, context);
  }
}
