// The distributed runtime across processes: collectives under mpirun with 2 and 4 ranks (and
// 2 devices per rank), the data/tensor-parallel example, a rank lost mid-run, and the error
// when MPI is needed but missing. Tests that need Open MPI skip, saying so, where `mpirun` is
// not installed (the missing-MPI error is checked everywhere).
import { describe, it, expect, vi } from "vitest";
import { child, childEnv, expectAllChecks, hasMpirun, run } from "./jobs.js";
import { freeWatchPorts } from "./sockets.js";
import { nativeMpi } from "../../src/distributed/mpi.js";

// An mpirun job of 4 ranks on a busy 2-core machine can take minutes: the jobs' own timeouts
// (below) end a hang; the test's must be longer.
vi.setConfig({ testTimeout: 300_000 });

if (!hasMpirun) {
  console.warn("SKIPPED: distributed tests over MPI (no `mpirun` on this machine: apt-get install openmpi-bin libopenmpi-dev)");
}

/** mpirun <mpirunArgs> -np <ranks> node --import tsx <script> <args>. */
const mpirun = (ranks: number, script: string, args: string[], timeoutMs = 180_000, env: Record<string, string> = {}, mpirunArgs: string[] = []) =>
  run("mpirun", ["--allow-run-as-root", "--oversubscribe", ...mpirunArgs, "-np", String(ranks), "node", "--import", "tsx", script, ...args], childEnv(env), timeoutMs);

describe.skipIf(!hasMpirun)("collectives over MPI (Open MPI, mpirun)", () => {
  // The last one without the agreement checks (TSPTO_MPI_CHECKS=0: the collectives' other path).
  for (const [ranks, devices, checks] of [[2, 1, true], [4, 1, true], [2, 2, false]] as const) {
    it(`${ranks} ranks x ${devices} device(s)${checks ? "" : ", checks off"}: every collective matches the single-process reference (integers bit-identical)`, async () => {
      const r = await mpirun(ranks, child("collectives_child.ts"), [String(devices)], 180_000, checks ? {} : { TSPTO_MPI_CHECKS: "0" });
      expect(r.status, r.out).toBe(0);
      expectAllChecks(r.out, ranks);
      expect(r.out).toContain(`rank 0 on host`);
      expect(r.out).toContain(`; checks ${checks}`);
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

describe.skipIf(!hasMpirun)("agreement across ranks (issue 19, item 12)", () => {
  // Each scenario: what every rank must print. "$r" is the printing rank.
  const expected: [string, (r: number) => string][] = [
    ["shape", () => "E_MPI_MISMATCH allReduce (collective #1): the ranks passed different arguments: ranks 0, 2: #1 allReduce(DeviceTensor float32 [4, 8], op sum); rank 1: #1 allReduce(DeviceTensor float32 [4, 6], op sum)"],
    ["dtype", () => "E_MPI_MISMATCH allReduce (collective #2): the ranks passed different arguments: ranks 0, 2: #2 allReduce(DeviceTensor float32 [4, 8], op sum); rank 1: #2 allReduce(DeviceTensor int32 [4, 8], op sum)"],
    ["op", () => "E_MPI_MISMATCH allReduce (collective #3): the ranks passed different arguments: ranks 0, 1: #3 allReduce(DeviceTensor float32 [4, 8], op sum); rank 2: #3 allReduce(DeviceTensor float32 [4, 8], op max)"],
    ["root", () => "E_MPI_MISMATCH broadcast (collective #4): the ranks passed different arguments: rank 0: #4 broadcast(DeviceTensor float32 [4, 8], root 0); ranks 1, 2: #4 broadcast(DeviceTensor float32 [4, 8], root 1)"],
    ["kind", (r) => `E_MPI_MISMATCH ${r === 1 ? "broadcast" : "allReduce"} (collective #5): the ranks passed different arguments: ranks 0, 2: #5 allReduce(DeviceTensor float32 [4, 8], op sum); rank 1: #5 broadcast(DeviceTensor float32 [4, 8], root 0)`],
    ["axis", () => "E_MPI_MISMATCH allGather (collective #6): the ranks passed different arguments: ranks 0, 2: #6 allGather(ShardedTensor float32 [6, 6] axis 0 in 3); rank 1: #6 allGather(ShardedTensor float32 [6, 6] axis 1 in 3)"],
    ["barrier", (r) => `E_MPI_MISMATCH ${r === 0 ? "barrier" : "allReduce"} (collective #7): the ranks passed different arguments: rank 0: #7 barrier(); ranks 1, 2: #7 allReduce(DeviceTensor float32 [2], op sum)`],
    ["local dtype", (r) => (r === 1 ? "E_DTYPE allReduce: float16 tensors cannot be reduced (MPI has no float16 type)"
      : `E_RANK_FAILED allReduce (collective #8): rank 1 (host HOST) failed in it: [E_DTYPE] allReduce: float16 tensors cannot be reduced (MPI has no float16 type); rank ${r} stops here instead of waiting for it`)],
    ["local freed", (r) => (r === 2 ? "E_FREED gather: the ShardedTensor was freed"
      : `E_RANK_FAILED gather (collective #9): rank 2 (host HOST) failed in it: [E_FREED] gather: the ShardedTensor was freed; rank ${r} stops here instead of waiting for it`)],
    ["after", () => "allReduce gives 6, 60, 1.5"],
  ];

  it("different shapes, dtypes, ops, roots, collectives or axes make every rank fail naming who passed what; a rank whose own arguments fail is named by the others; the world stays usable", async () => {
    const r = await mpirun(3, child("agreement_child.ts"), ["all"], 120_000);
    expect(r.signal, `the job hung:\n${r.out}`).toBeNull();
    expect(r.status, r.out).toBe(0);
    const host = (await import("node:os")).hostname();
    for (let rank = 0; rank < 3; rank++) {
      for (const [name, want] of expected) expect(r.out, `rank ${rank}: ${name}`).toContain(`rank ${rank}: ${name}: ${want(rank).replace("HOST", host)}`);
    }
  });

  it("a rank that closes one collective early: the others, waiting in the collective it never joins, fail naming it (no hang)", async () => {
    const r = await mpirun(3, child("agreement_child.ts"), ["left"], 120_000);
    expect(r.signal, `the job hung:\n${r.out}`).toBeNull();
    const said = [0, 2].filter((s) => new RegExp(`rank ${s}: left: E_MPI_MISMATCH MPI rank 1 \\(pid \\d+ on host .*\\) left the job \\(closed its DistributedWorker\\) after 1 collective, but rank ${s} waits in collective #2 \\(allReduce\\), which it will never join`).test(r.out));
    expect(said.length, r.out).toBeGreaterThanOrEqual(1);
  });
});

describe.skipIf(!hasMpirun)("the watch's port (TSPTO_MPI_WATCH_PORTS) and interfaces (btl_tcp_if_include)", () => {
  it("two ranks of one host and a range of one port: the rank that gets none fails every rank's init with E_MPI_WATCH naming it, instead of running without a watch", async () => {
    const p = freeWatchPorts(1, nativeMpi().watchTest);
    const r = await mpirun(2, child("watch_child.ts"), ["ok"], 90_000, { TSPTO_MPI_WATCH_PORTS: `${p}-${p}` });
    expect(r.signal, `the job hung:\n${r.out}`).toBeNull();
    expect(r.status, r.out).not.toBe(0);
    const failed = [...r.out.matchAll(new RegExp(`^rank (\\d): constructor failed: E_MPI_WATCH MPI init: the watch of rank (\\d) \\(pid \\d+ on host [^)]+\\) cannot listen: none of the 1 port of TSPTO_MPI_WATCH_PORTS=${p}-${p} could listen at 0\\.0\\.0\\.0 \\(${p}: (bind|listen): Address already in use\\); every rank needs its watch \\(it finds a rank lost on another host\\), so rank (\\d) stops here$`, "gm"))];
    // both ranks, naming the same rank (the one without a port), each saying it stops
    expect(failed.map((m) => m[1]).sort(), r.out).toEqual(["0", "1"]);
    expect(new Set(failed.map((m) => m[2])).size, r.out).toBe(1);
    for (const m of failed) expect(m[4]).toBe(m[1]);
    expect(r.out).not.toContain("watch listens on");
  });

  it("mpirun --mca btl_tcp_if_include lo: each rank's watch listens on 127.0.0.1 only (the kernel's table), on a port of its own, and still hears a rank that fails", async () => {
    const p = freeWatchPorts(3, nativeMpi().watchTest);
    const r = await mpirun(3, child("watch_child.ts"), ["throw"], 90_000, { TSPTO_MPI_WATCH_PORTS: `${p}-${p + 2}` }, ["--mca", "btl_tcp_if_include", "lo"]);
    expect(r.signal, `the job hung:\n${r.out}`).toBeNull();
    const where = [0, 1, 2].map((rank) => new RegExp(`^rank ${rank}: watch listens on (.*)$`, "m").exec(r.out)?.[1]);
    expect(new Set(where).size, r.out).toBe(3);
    for (const w of where) expect(w, r.out).toMatch(new RegExp(`^127\\.0\\.0\\.1:(${p}|${p + 1}|${p + 2})$`));
    // "it failed: ..." comes only through the watch (the pid check would say "its process exited")
    const named = [0, 2].filter((s) => r.out.includes(`rank ${s}: caught E_RANK_LOST lostRank=1 MPI rank 1 (pid `) &&
      new RegExp(`was lost during allReduce: it failed: uncaught Error: rank 1 fails on purpose; rank ${s} stops here`).test(r.out));
    expect(named.length, r.out).toBeGreaterThanOrEqual(1);
    expect(r.out).not.toContain("could not connect");
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
