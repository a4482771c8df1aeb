// The distributed runtime across processes: collectives under mpirun with 2 and 4 ranks (and
// 2 devices per rank), the data/tensor-parallel example, a rank lost mid-run, and the error
// when MPI is needed but missing. Tests that need Open MPI skip, saying so, where `mpirun` is
// not installed (the missing-MPI error is checked everywhere).
import { describe, it, expect, vi } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

// An mpirun job of 4 ranks on a busy 2-core machine can take minutes: the jobs' own timeouts
// (below) end a hang; the test's must be longer.
vi.setConfig({ testTimeout: 300_000 });

const root = fileURLToPath(new URL("../../", import.meta.url));
const child = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));
const hasMpirun = spawnSync("mpirun", ["--version"], { encoding: "utf8" }).status === 0;
if (!hasMpirun) {
  console.warn("SKIPPED: distributed tests over MPI (no `mpirun` on this machine: apt-get install openmpi-bin libopenmpi-dev)");
}

// Environment of a child: the test runner's, without variables of an enclosing MPI job.
const childEnv = (extra: Record<string, string> = {}) => {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  for (const k of Object.keys(env)) if (k.startsWith("OMPI_") || k.startsWith("PMIX_")) delete env[k];
  return { ...env, ...extra };
};

/**
 * Runs a command to its end without blocking the test worker's event loop (spawnSync would
 * starve vitest's own messages for as long as the job runs); a hang is ended by the timeout
 * (SIGKILL: then `signal` is set).
 */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ status: number | null; signal: string | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (b) => (out += b));
    p.stderr.on("data", (b) => (out += b));
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("error", reject);
    p.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, out });
    });
  });
}

/** mpirun -np <ranks> node --import tsx <script> <args>. */
const mpirun = (ranks: number, script: string, args: string[], timeoutMs = 180_000) =>
  run("mpirun", ["--allow-run-as-root", "--oversubscribe", "-np", String(ranks), "node", "--import", "tsx", script, ...args], childEnv(), timeoutMs);

const CHECKS = ["allReduce sharded (4 ops x 6 dtypes)", "allReduce DeviceTensor", "broadcast DeviceTensor", "allGather DeviceTensor",
  "reduceScatter DeviceTensor", "allGather sharded axis 1", "reduceScatter sharded axis 1", "scatter/gather", "broadcast sharded",
  "uneven shards: gather, scatter, allGather (axis 0 and 1), elementwise collectives refused", "uneven shards: reduceScatter into uneven chunks (axis 0 and 1, and a DeviceTensor per rank)",
  "barrier", "closed"];

function expectAllChecks(out: string, ranks: number) {
  for (let r = 0; r < ranks; r++) for (const c of CHECKS) expect(out, `rank ${r}: ${c}`).toContain(`ok rank=${r} ${c}`);
}

describe.skipIf(!hasMpirun)("collectives over MPI (Open MPI, mpirun)", () => {
  for (const [ranks, devices] of [[2, 1], [4, 1], [2, 2]] as const) {
    it(`${ranks} ranks x ${devices} device(s): every collective matches the single-process reference (integers bit-identical)`, async () => {
      const r = await mpirun(ranks, child("collectives_child.ts"), [String(devices)]);
      expect(r.status, r.out).toBe(0);
      expectAllChecks(r.out, ranks);
    });
  }

  it("2 ranks x 1 interp device (memory in TypeScript: MPI through host copies): every collective matches the reference", async () => {
    const r = await mpirun(2, child("collectives_child.ts"), ["1", "required", "interp"]);
    expect(r.status, r.out).toBe(0);
    expectAllChecks(r.out, 2);
  });

  it("examples/distributed/data_parallel.ts with 4 ranks matches one process doing it all", async () => {
    const r = await mpirun(4, "examples/distributed/data_parallel.ts", []);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain("rank 0 of 4");
    expect(r.out).toMatch(/data parallel: .* on all 4 devices match one process/);
    expect(r.out).toMatch(/tensor parallel: .* from 4 column shards \(allGather\) matches one process/);
  });

  for (const mode of ["kill", "throw", "idle"] as const) {
    const how = { kill: "is killed (SIGKILL) while the others wait in allReduce", throw: "exits with an uncaught error while the others wait in allReduce",
      idle: "is killed while the others sleep between collectives" }[mode];
    it(`a rank that ${how}: the others fail naming rank 1, no hang`, async () => {
      const r = await mpirun(3, child("lost_rank_child.ts"), [mode], 90_000);
      expect(r.signal, `the job hung (killed by the test's timeout):\n${r.out}`).toBeNull();
      expect(r.status, r.out).not.toBe(0);
      // The first survivor to name the lost rank exits failing and mpirun then ends the job:
      // under load the other survivor may be ended before it reports. At least one names rank 1.
      const named = [0, 2].filter((survivor) => (mode === "idle"
        ? new RegExp(`\\[E_RANK_LOST\\] MPI rank 1 \\(pid \\d+ on host .*\\) was lost during the run: its process exited; rank ${survivor} stops here`)
        // caught around the second allReduce, or (when rank 1 went while a survivor was still
        // finishing the first one) thrown from the first: either way it names rank 1
        : new RegExp(`rank ${survivor}: caught E_RANK_LOST lostRank=1 MPI rank 1 \\(pid \\d+ on host .*\\) was lost during allReduce|\\[E_RANK_LOST\\] MPI rank 1 \\(pid \\d+ on host .*\\) was lost during allReduce: its process exited; rank ${survivor} stops here`)).test(r.out));
      expect(named.length, r.out).toBeGreaterThanOrEqual(1);
      expect(r.out).not.toContain("completed (unexpected)");
    });
  }
});

describe.skipIf(!hasMpirun)("MPI world checks", () => {
  it("a rank that is alive but never joins: the others fail after their timeout (TSPTO_MPI_TIMEOUT) instead of hanging", async () => {
    const r = await mpirun(3, child("lost_rank_child.ts"), ["stall"], 90_000);
    expect(r.signal, `the job hung:\n${r.out}`).toBeNull();
    expect(r.status, r.out).not.toBe(0);
    // The first survivor to time out exits failing, and mpirun then ends the job: under load
    // the other survivor may be ended before its own timeout fires. At least one says why, and
    // none completes the collective.
    const said = [0, 2].filter((s) => r.out.includes(`rank ${s}: caught E_MPI_TIMEOUT lostRank=undefined allReduce did not complete within 2 s (TSPTO_MPI_TIMEOUT): a rank did not join it`));
    expect(said.length, r.out).toBeGreaterThanOrEqual(1);
    expect(r.out).not.toContain("second allReduce completed");
  });

  it("ranks with different numbers of devices are refused, naming both", async () => {
    const r = await mpirun(2, child("lost_rank_child.ts"), ["mismatch"], 90_000);
    expect(r.status, r.out).not.toBe(0);
    expect(r.out).toContain("rank 0: constructor failed: E_DEVICES DistributedWorker: rank 1 has 2 devices, rank 0 has 1");
  });
});

describe("MPI missing", () => {
  it("a process started by mpirun without a loadable libmpi fails with E_MPI_MISSING naming what to install", async () => {
    const script = `import { DistributedWorker } from "tspto";
try { new DistributedWorker(); console.log("constructed"); } catch (e) { console.log("CODE=" + e.code); console.log(e.message); }`;
    const r = await run("node", ["--import", "tsx", "--input-type=module", "-e", script],
      childEnv({ OMPI_COMM_WORLD_SIZE: "2", OMPI_COMM_WORLD_RANK: "0", TSPTO_LIBMPI: "/nonexistent/libmpi.so.40" }), 60_000);
    const out = r.out;
    expect(out).toContain("CODE=E_MPI_MISSING");
    expect(out).toContain("libmpi could not be loaded (/nonexistent/libmpi.so.40:");
    expect(out).toContain("apt-get install openmpi-bin libopenmpi-dev");
  });

  it("a library that is not Open MPI is refused by name", async () => {
    const script = `import { DistributedWorker } from "tspto";
try { new DistributedWorker(); } catch (e) { console.log("CODE=" + e.code); console.log(e.message); }`;
    const r = await run("node", ["--import", "tsx", "--input-type=module", "-e", script], childEnv({ OMPI_COMM_WORLD_SIZE: "2", TSPTO_LIBMPI: "libm.so.6" }), 60_000);
    const out = r.out;
    expect(out).toContain("CODE=E_MPI_MISSING");
    expect(out).toContain("the MPI library 'libm.so.6' is not Open MPI");
  });
});

describe.skipIf(!hasMpirun)("DFX across ranks", () => {
  it("each rank writes dfx_outputs/rank_<r>/device_<d>/; tspto inspect --trace merges them into one timeline; benchmark reports per-rank times", async () => {
    const { mkdtempSync, existsSync, readFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { renderTrace } = await import("../../src/tools/cli.js");
    const dir = join(mkdtempSync(join(tmpdir(), "tspto-dfx-ranks-")), "artifact");
    try {
      const r = await mpirun(2, child("dfx_child.ts"), [dir]);
      expect(r.status, r.out).toBe(0);
      // DistributedWorker.benchmark: every rank gets every rank's device and host medians (host >= device).
      for (const rank of [0, 1]) expect(r.out).toContain(`rank ${rank}: benchmark rows 0/0:ok 1/0:ok`);
      expect(r.out).toMatch(/rank\s+device\s+device us\s+host us/);
      for (const rank of [0, 1]) expect(existsSync(join(dir, "dfx_outputs", `rank_${rank}`, "device_0", "swimlane.json"))).toBe(true);
      const page = renderTrace(dir);
      expect(page).toBe(join(dir, "dfx_outputs", "swimlane.html"));
      const merged = JSON.parse(readFileSync(join(dir, "dfx_outputs", "swimlane_ranks.json"), "utf8")) as { traceEvents: { ph: string; name: string; pid: number; args: { name?: string } }[] };
      const procs = merged.traceEvents.filter((e) => e.ph === "M" && e.name === "process_name").map((e) => e.args.name);
      expect(procs).toEqual(["rank 0 / device 0", "rank 1 / device 0"]);
      const tasksOf = (pid: number) => merged.traceEvents.filter((e) => e.ph === "X" && e.pid === pid && e.name.startsWith("scale"));
      expect(tasksOf(0).length).toBeGreaterThan(0);
      expect(tasksOf(1).length).toBeGreaterThan(0);
      const html = readFileSync(page, "utf8");
      expect(html).toContain("rank 0 / device 0 / core 0");
      expect(html).toContain("rank 1 / device 0 / core 0");
    } finally {
      rmSync(join(dir, ".."), { recursive: true, force: true });
    }
  });
});
