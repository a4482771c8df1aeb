// Opening a WebGPU device the way tspto uses it, in Node (Dawn, ./node.ts) and in a browser
// (navigator.gpu, ./browser.ts): the adapter with high performance preference, the device
// with the adapter's own limits for the buffers and workgroup memory tspto uses and with
// timestamp-query where the adapter has it. It imports no Node built-in.
import { TsptoDeviceError } from "../../ir/index.js";
import type { Gpu, GpuAdapter } from "./gpu.js";
import type { OpenedGpu } from "./device.js";

const LIMITS = ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupsPerDimension"];

/** Requests an adapter and a device; `hint` says what to do when there is no adapter. */
export async function openAdapter(gpu: Gpu, hint: string, noAdapter = "WebGPU found no adapter"): Promise<OpenedGpu> {
  let adapter: GpuAdapter | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (e) {
    throw new TsptoDeviceError("E_NO_GPU", `the WebGPU adapter request failed: ${(e as Error).message}`, undefined, hint);
  }
  if (!adapter) throw new TsptoDeviceError("E_NO_GPU", noAdapter, undefined, hint);
  const timestamps = adapter.features.has("timestamp-query");
  const requiredLimits: Record<string, number> = {};
  for (const k of LIMITS) if (typeof adapter.limits[k] === "number") requiredLimits[k] = adapter.limits[k];
  const device = await adapter.requestDevice({ requiredFeatures: timestamps ? ["timestamp-query"] : [], requiredLimits, label: "tspto" });
  const i = adapter.info ?? {};
  const words = [i.vendor, i.architecture, i.device, i.description].filter((x) => x && String(x).length > 0);
  const name = `${words.length ? words.join(" ") : "unknown adapter"}${adapter.isFallbackAdapter ? " (fallback adapter)" : ""}`;
  return { device, adapter: name, timestamps };
}
