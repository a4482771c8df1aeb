// Listeners of launches' task traces (the roofline: benchmark's `roofline`, `tspto profile`).
// While one is registered, launches on a device that records record their tasks (times and
// accesses), whatever the RunConfig's DFX flags; DFX files are still written only as those ask.
import type { DeviceTrace } from "../targets/index.js";
import type { ChipWorker, Registration } from "./worker.js";

/**
 * Called after each launch with the worker, the registration, the launch's task trace (null on a
 * device that records none) and the caller's arguments.
 */
export type TaskListener = (worker: ChipWorker, reg: Registration, trace: DeviceTrace | null, args: readonly unknown[]) => void;

/** Listeners of every worker's launches (process-wide). */
export const globalTaskListeners = new Set<TaskListener>();

/** Adds a process-wide listener; returns its removal. */
export function addGlobalTaskListener(l: TaskListener): () => void {
  globalTaskListeners.add(l);
  return () => { globalTaskListeners.delete(l); };
}
