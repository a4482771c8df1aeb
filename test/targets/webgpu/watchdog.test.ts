// A webgpu kernel that runs for hours (./fixtures/long_kernel_child.ts, a child process with a
// hard limit: a regression fails here instead of hanging the suite): RunConfig.launchTimeoutS
// fails its wait with E_LAUNCH_TIMEOUT and gives the device up (later use says why), and close()
// while it runs returns at once (the launch and what is queued behind it fail with E_CLOSED).
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { titled, webgpuUnavailable } from "./helpers.js";
import { runChild } from "../../setup/child.js";

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu watchdog tests skipped: ${why}`);

const root = fileURLToPath(new URL("../../../", import.meta.url));
const child = fileURLToPath(new URL("./fixtures/long_kernel_child.ts", import.meta.url));

interface Step { step: string; [k: string]: unknown }

/** Runs the child in `mode` (stopped after 120 s: the kernel itself would run for hours); its steps by name. */
async function run(mode: string): Promise<Map<string, Step>> {
  const r = await runChild(process.execPath, ["--import", "tsx", child, mode], { cwd: root, timeout: 120_000 });
  const lines = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.trim() !== "");
  const steps = new Map<string, Step>(), other: string[] = [];
  for (const l of lines) {
    let s: Step | null = null;
    try { s = JSON.parse(l) as Step; } catch { /* not a step */ }
    if (s && typeof s.step === "string") steps.set(s.step, s); else other.push(l);
  }
  expect(r.signal, `the child hung and was stopped after 120 s; its output:\n${lines.join("\n")}`).toBeNull();
  expect(steps.has("DONE"), `the child did not finish; its output:\n${lines.join("\n")}`).toBe(true);
  expect(other).toEqual([]);
  return steps;
}

const gaveUp = (op: string) => ({
  code: "E_LAUNCH_TIMEOUT",
  message: `${op}: the webgpu device was given up: the launch of 'spin' did not complete within 1 s (RunConfig.launchTimeoutS); WebGPU cannot stop a running kernel, so its queue and memory are unusable`,
});
const late = (what: string) => ({
  code: "E_LAUNCH_TIMEOUT",
  message: `${what} did not complete within 1 s (RunConfig.launchTimeoutS); WebGPU cannot stop a running kernel, so the device was given up: every later operation on it fails`,
});

describe.skipIf(!!why)(titled("webgpu watchdog", why), () => {
  it("RunConfig.launchTimeoutS: a launch past it fails with E_LAUNCH_TIMEOUT, the device is given up (later use says why), other workers work", async () => {
    const steps = await run("timeout");
    expect(steps.get("short launch")).toMatchObject({ ok: true });
    expect(steps.get("long launch")).toMatchObject(late("the launch of 'spin'"));
    expect(steps.get("later")).toMatchObject({ alloc: gaveUp("alloc"), launch: gaveUp("launchAsync"), read: gaveUp("d2hAsync"), free: { ok: true } });
    expect(steps.get("closed")).toMatchObject({ closed: true });
    expect(steps.get("another worker")).toMatchObject({ ok: true });
    // a read back waiting behind a launch nobody awaited, and a launch's own RunConfig
    expect(steps.get("read back behind it")).toMatchObject(late("a read back of device memory (copyFromAsync)"));
    expect(steps.get("per-launch timeout")).toMatchObject(late("the launch of 'spin'"));
  });

  it("close() while a kernel runs returns; the launch and the read back queued behind it fail with E_CLOSED, later use too", async () => {
    const steps = await run("close");
    expect(steps.get("short launch")).toMatchObject({ ok: true });
    expect(steps.get("close returned")).toMatchObject({ closed: true });
    expect(steps.get("long launch")).toMatchObject({ code: "E_CLOSED", message: "the launch of 'spin': the device was closed while it was queued or waiting for the GPU" });
    expect(steps.get("read back queued behind it")).toMatchObject({ code: "E_CLOSED", message: "a read back of device memory (copyFromAsync): the device was closed while it was queued or waiting for the GPU" });
    expect(steps.get("later")).toMatchObject({ alloc: { code: "E_CLOSED" } });
    expect(steps.get("another worker")).toMatchObject({ ok: true });
  });
});
