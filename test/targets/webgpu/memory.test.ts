// The webgpu device's memory at its limits, each in a child process (./fixtures/memory_child.ts)
// whose output is captured whole: allocating until the device refuses (on SwiftShader, the
// adapter's own 1 GiB: every tensor allocated before reads back, the device works on), and arena
// growths the implementation cannot back (out of memory from Dawn itself): resident tensors stay
// readable, the ones that did not fit fail with E_DEVICE_OOM where they are used, later
// allocations past what exists are refused at once; a read back buffer that cannot be backed fails
// that operation alone; an error outside every error scope is reported once; and nothing floods
// the output.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { titled, webgpuUnavailable } from "./helpers.js";
import { runChild } from "../../setup/child.js";

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu memory tests skipped: ${why}`);

const root = fileURLToPath(new URL("../../../", import.meta.url));
const child = fileURLToPath(new URL("./fixtures/memory_child.ts", import.meta.url));

interface Step { step: string; [k: string]: unknown }

/** Runs the child in `mode`; its steps by name, and every line it wrote that is not a step. */
async function run(mode: string): Promise<{ steps: Map<string, Step>; other: string[] }> {
  const r = await runChild(process.execPath, ["--import", "tsx", child, mode], { cwd: root, timeout: 300_000 });
  const lines = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.trim() !== "");
  const steps = new Map<string, Step>(), other: string[] = [];
  for (const l of lines) {
    let s: Step | null = null;
    try { s = JSON.parse(l) as Step; } catch { /* not a step */ }
    if (s && typeof s.step === "string") steps.set(s.step, s); else other.push(l);
  }
  expect(r.signal, `the child was stopped (${r.signal}); its output:\n${lines.slice(-40).join("\n")}`).toBeNull();
  expect(steps.has("DONE"), `the child did not finish; its output:\n${lines.slice(-40).join("\n")}`).toBe(true);
  return { steps, other };
}

const MiB = 1 << 20;

describe.skipIf(!!why)(titled("webgpu device memory", why), () => {
  it("16 MiB tensors until the device refuses: E_DEVICE_OOM at allocTensor, every earlier tensor reads back, launches work at full memory and after freeing", async () => {
    const { steps, other } = await run("fill");
    const refused = steps.get("refused")!;
    expect(refused.code).toBe("E_DEVICE_OOM");
    expect(refused.message).toMatch(/^device out of memory: requested 16777216 bytes, \d+ bytes in use of \d+ bytes capacity \(webgpu device memory is one storage buffer of at most the adapter's maxStorageBufferBindingSize\b.*\)$/);
    // refused only when the next one did not fit what the adapter allows
    const capacity = refused.capacity as number, inUse = refused.bytesInUse as number;
    expect(inUse + 16 * MiB).toBeGreaterThan(capacity);
    expect(refused.tensors as number).toBeGreaterThanOrEqual(Math.floor(capacity / (16 * MiB)) - 1);
    expect(steps.get("read back")!.wrong).toEqual([]);
    expect(steps.get("launch at full memory")).toMatchObject({ ok: true });
    expect(steps.get("after freeing")).toMatchObject({ ok: true });
    expect(other).toEqual([]);
  });

  it("a growth the implementation cannot back: resident tensors intact, the ones past it E_DEVICE_OOM where used, later allocations refused at once; a read back buffer it cannot back fails that operation alone; an uncaptured error is reported once; no flood", async () => {
    const { steps, other } = await run("refuse");
    const unbacked = steps.get("unbacked")!;
    expect(unbacked.a).toEqual({ ok: true });
    expect(unbacked.b).toMatchObject({ code: "E_DEVICE_OOM" });
    expect((unbacked.b as { message: string }).message).toMatch(
      /^d2hAsync: the allocation of 1048576 bytes at 0x[0-9a-f]+ has no device memory: growing webgpu device memory to 4194304 bytes failed \(.+\); it stays at 2097152 bytes$/);
    expect(unbacked.later).toMatchObject({ code: "E_DEVICE_OOM" });
    expect((unbacked.later as { message: string }).message).toMatch(
      /^device out of memory: requested 1048576 bytes, \d+ bytes in use of 2097152 bytes capacity \(the WebGPU implementation could not grow device memory past 2097152 bytes: .+ \(asked for 4194304 bytes\)\)$/);
    expect(unbacked.capacity).toBe(2 * MiB);
    expect(steps.get("unbacked, after freeing")).toEqual({ step: "unbacked, after freeing", launch: { ok: true }, a: { ok: true }, alloc: { ok: true } });
    // the doubling could not be backed, what the allocations needed could: nothing lost
    const smaller = steps.get("smaller growth")!;
    expect(smaller).toMatchObject({ a: { ok: true }, b: { ok: true }, later: { code: "E_DEVICE_OOM" } });
    expect(smaller.capacity as number).toBeGreaterThanOrEqual(2.5 * MiB);
    expect(smaller.capacity as number).toBeLessThan(3 * MiB);
    expect(steps.get("smaller growth, after freeing")).toMatchObject({ launch: { ok: true }, b: { ok: true } });
    // a read back buffer that cannot be backed: that read back and that launch fail (out of memory, caught by their error scopes), the next ones work
    const rb = steps.get("read back buffer")!;
    expect(rb.first).toMatchObject({ code: "E_DEVICE_OOM" });
    expect((rb.first as { message: string }).message).toMatch(/^a read back of device memory \(copyFromAsync\) could not get the memory it needs from the WebGPU implementation \(nothing of it ran\): .+$/);
    expect(rb.launch).toMatchObject({ code: "E_DEVICE_OOM" });
    expect((rb.launch as { message: string }).message).toMatch(/^the launch of 'addOne' could not get the memory it needs from the WebGPU implementation \(nothing of it ran\): .+$/);
    expect(rb).toMatchObject({ again: { ok: true }, launchAgain: { ok: true } });
    // an error outside every error scope: reported once, by the next wait (Dawn would print it too unless prevented)
    const unc = steps.get("uncaptured")!;
    expect(unc.first).toMatchObject({ code: "E_WEBGPU" });
    expect((unc.first as { message: string }).message).toMatch(/^the WebGPU implementation reported an error: .*tspto dispatch uniforms/s);
    expect(unc.again).toEqual({ ok: true });
    // Dawn printed nothing (no error reached it uncaptured, no command named a buffer that failed)
    expect(other).toEqual([]);
  });
});
