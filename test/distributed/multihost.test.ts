// The distributed runtime across hosts, on one machine: scripts/netns_hosts.sh makes each
// "host" a network namespace (its own network stack, one link to a bridge, an address in
// 192.0.2.0/24, its own host name), and mpirun starts its daemons in them through the
// script (as ssh would on real hosts), with the TCP transport only. The collectives and the
// example run across 2 and 3 hosts; a rank killed, a rank failing, a host's link taken down
// mid-collective and a rank that never joins each end in a named error on the others, with
// no hang and no process left behind. Skips, saying why, where namespaces cannot be made
// (not root, no `ip`) or Open MPI is missing.
import { describe, it, expect, vi, afterEach } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { child, childEnv, expectAllChecks, hasMpirun, root, run, type JobResult } from "./jobs.js";
import { COLLECTIVES, NEW, PROMPT, precompile, readLogits, singleProcess, tinyCheckpoint, worstDiff } from "../examples/gpt2_fixture.js";

// Every job starts a daemon per host and a node process per rank on a busy 2-core machine.
vi.setConfig({ testTimeout: 300_000 });

const script = join(root, "scripts", "netns_hosts.sh");
const why = !hasMpirun ? "no `mpirun` (apt-get install openmpi-bin libopenmpi-dev)" : netnsProblem();
if (why) console.warn(`SKIPPED: multi-host tests over network namespaces (${why})`);

function netnsProblem(): string | null {
  const r = spawnSync(script, ["check"], { encoding: "utf8" });
  return r.status === 0 ? null : `cannot make network namespaces here: ${`${r.stdout}${r.stderr}`.trim() || `exit ${r.status}`}`;
}

let count = 0;
const used: string[] = [];
/** A fresh prefix owned by this process (scripts/netns_hosts.sh gc deletes those of dead owners). */
const newPrefix = () => {
  const p = `tmh${process.pid}_t${++count}`;
  used.push(p);
  return p;
};
// A backstop: the script tears its namespaces down itself, also on failure and SIGTERM.
afterEach(() => {
  for (const p of used.splice(0)) spawnSync(script, ["down", p]);
});

/** scripts/netns_hosts.sh mpirun over `hosts` hosts with `slots` ranks each: <mpirunArgs> node --import tsx <script> <args>. */
function hostsJob(hosts: number, slots: number, program: string, args: string[], opts: {
  prefix?: string; env?: Record<string, string>; timeoutMs?: number; heal?: boolean; onOutput?: (chunk: string, atMs: number) => void;
} = {}): Promise<JobResult> {
  const prefix = opts.prefix ?? newPrefix();
  return run(script, ["mpirun", "-p", prefix, "-n", String(hosts), "--slots", String(slots), ...(opts.heal ? ["--heal"] : []), "--",
    "-np", String(hosts * slots), "node", "--import", "tsx", program, ...args],
  childEnv(opts.env), opts.timeoutMs ?? 180_000, { killWith: "SIGTERM", onOutput: opts.onOutput });
}

/** Bytes each host's link received and sent, from the script's report. */
function traffic(out: string): Map<string, { rx: number; tx: number }> {
  const m = new Map<string, { rx: number; tx: number }>();
  for (const x of out.matchAll(/^netns: (h\d+) eth0 rx=(\d+)B tx=(\d+)B$/gm)) m.set(x[1], { rx: Number(x[2]), tx: Number(x[3]) });
  return m;
}

const expectNothingLeft = (r: JobResult) => {
  expect(r.signal, `the job hung (ended by the test's timeout):\n${r.out}`).toBeNull();
  expect(r.out, "processes left behind in a host").toContain("netns: no processes left in any host");
  expect(r.out).not.toContain("netns: orphans");
};

describe.skipIf(why !== null)("the namespace hosts (scripts/netns_hosts.sh)", () => {
  it("each host has only its loopback and one link in 192.0.2.0/24 (no default route); the root namespace gains nothing; down removes every namespace", () => {
    const p = newPrefix();
    const before = spawnSync("ip", ["-o", "link"], { encoding: "utf8" }).stdout;
    const up = spawnSync(script, ["up", p, "3"], { encoding: "utf8" });
    expect(up.status, up.stderr).toBe(0);
    try {
      for (const h of ["h0", "h1", "h2"]) {
        const links = spawnSync("ip", ["-n", `${p}-${h}`, "-o", "link"], { encoding: "utf8" }).stdout;
        expect(links.split("\n").filter(Boolean).map((l) => l.split(": ")[1].split("@")[0])).toEqual(["lo", "eth0"]);
        const routes = spawnSync("ip", ["-n", `${p}-${h}`, "route"], { encoding: "utf8" }).stdout.trim();
        expect(routes).toMatch(new RegExp(`^192\\.0\\.2\\.0/24 dev eth0 proto kernel scope link src 192\\.0\\.2\\.${Number(h[1]) + 1}\\s*$`));
      }
      expect(spawnSync("ip", ["-o", "link"], { encoding: "utf8" }).stdout).toBe(before);
      // Hosts reach each other, and nothing else: no route out of 192.0.2.0/24.
      const ping = (from: string, to: string) => spawnSync("ip", ["netns", "exec", `${p}-${from}`, "node", "-e",
        `const s=require("net").connect(9,"${to}");s.on("error",e=>{console.log(e.code);process.exit(0)});s.on("connect",()=>{console.log("open");process.exit(0)})`], { encoding: "utf8" }).stdout.trim();
      expect(ping("h0", "192.0.2.3")).toBe("ECONNREFUSED"); // h2 answers (nothing listens on port 9)
      expect(ping("h0", "1.1.1.1")).toBe("ENETUNREACH");
    } finally {
      expect(spawnSync(script, ["down", p]).status).toBe(0);
    }
    expect(spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout).not.toContain(p);
  });
});

describe.skipIf(why !== null)("collectives across hosts (TCP only)", () => {
  it("2 hosts, one rank each: every collective matches the single-process reference; the data crossed the hosts' links", async () => {
    const r = await hostsJob(2, 1, child("collectives_child.ts"), ["1"]);
    expect(r.status, r.out).toBe(0);
    expectAllChecks(r.out, 2);
    expect(r.out).toContain("rank 1 on host h1; hosts h0 h1; checks true");
    // The 1 MiB allReduce alone moves half a MiB each way over each link.
    for (const h of ["h0", "h1"]) expect(traffic(r.out).get(h)?.rx ?? 0, r.out).toBeGreaterThan(512 * 1024);
    expectNothingLeft(r);
  });

  it("3 hosts, one rank of 2 devices each (6 devices, uneven shards over 6): every collective matches the reference", async () => {
    const r = await hostsJob(3, 1, child("collectives_child.ts"), ["2"]);
    expect(r.status, r.out).toBe(0);
    expectAllChecks(r.out, 3);
    expect(r.out).toContain("rank 2 on host h2; hosts h0 h1 h2; checks true");
    expectNothingLeft(r);
  });

  it("examples/distributed/data_parallel.ts over 2 hosts with 2 ranks each (TCP between the ranks of one host too) matches one process", async () => {
    const r = await hostsJob(2, 2, "examples/distributed/data_parallel.ts", []);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain("rank 0 of 4");
    expect(r.out).toMatch(/data parallel: .* on all 4 devices match one process/);
    expect(r.out).toMatch(/tensor parallel: .* from 4 column shards \(allGather\) matches one process/);
    expectNothingLeft(r);
  });

  describe("examples/gpt2 --tp N across hosts", () => {
    const dir = tinyCheckpoint("tphosts");
    let ref: Awaited<ReturnType<typeof singleProcess>> | undefined;
    for (const [hosts, slots] of [[2, 1], [2, 2]]) {
      const tp = hosts * slots;
      it(`--tp ${tp} over ${hosts} hosts with ${slots} rank${slots > 1 ? "s" : ""} each: the tokens of one process, logits within 2e-5; the ranks ran on h0 and h1`, async () => {
        const out = join(dir, `logits_hosts_tp${tp}.bin`);
        await precompile(tp);
        const r = await hostsJob(hosts, slots, "examples/gpt2/generate.ts",
          ["--tp", String(tp), "--model", dir, "--tokens", PROMPT.join(","), "--max-new", String(NEW), "--logits-out", out], { timeoutMs: 240_000 });
        expect(r.status, r.out).toBe(0);
        ref ??= await singleProcess(dir);
        expect(r.out.match(/^\d+(,\d+)*$/gm), r.out).toEqual([ref.tokens.join(",")]);
        expect(worstDiff(readLogits(out), ref.logits)).toBeLessThan(2e-5);
        // the ranks ran on both hosts, so every allReduce crossed the links (TCP only)
        expect(r.out).toContain(`tensor parallel over ${tp} ranks on h0, h1 (${COLLECTIVES * NEW} collectives`);
        expectNothingLeft(r);
      });
    }
  });

  it("3 hosts: ranks that disagree, or one whose arguments fail, fail together naming who (agreement_child.ts)", async () => {
    const r = await hostsJob(3, 1, child("agreement_child.ts"), ["all"]);
    expect(r.status, r.out).toBe(0);
    for (let s = 0; s < 3; s++) {
      expect(r.out).toContain(`rank ${s}: shape: E_MPI_MISMATCH allReduce (collective #1): the ranks passed different arguments: ranks 0, 2: #1 allReduce(DeviceTensor float32 [4, 8], op sum); rank 1: #1 allReduce(DeviceTensor float32 [4, 6], op sum)`);
      if (s !== 1) expect(r.out).toContain(`rank ${s}: local dtype: E_RANK_FAILED allReduce (collective #8): rank 1 (host h1) failed in it: [E_DTYPE] allReduce: float16 tensors cannot be reduced`);
      expect(r.out).toContain(`rank ${s}: after: allReduce gives 6, 60, 1.5`);
    }
    expectNothingLeft(r);
  });
});

describe.skipIf(why !== null)("the watch across hosts", () => {
  it("2 hosts with 2 ranks each, btl_tcp_if_include 192.0.2.0/24 (the script's): each rank's watch listens on its host's 192.0.2.x only, on a port of its own; the survivors hear through it why a rank failed", async () => {
    const r = await hostsJob(2, 2, child("watch_child.ts"), ["throw"], { timeoutMs: 120_000, env: { TSPTO_MPI_WATCH_PORTS: "47000-47001" } });
    expect(r.status, r.out).not.toBe(0);
    const where = [0, 1, 2, 3].map((rank) => new RegExp(`^rank ${rank}: watch listens on (.*)$`, "m").exec(r.out)?.[1] ?? "");
    for (const w of where) expect(w, r.out).toMatch(/^192\.0\.2\.[12]:4700[01]$/);
    // two ranks per host address, each on a port of its own: four distinct address:port pairs
    expect(new Set(where).size, r.out).toBe(4);
    expect(where.filter((w) => w.startsWith("192.0.2.1:")).length, r.out).toBe(2);
    // "it failed: ..." comes only through the watch (its 192.0.2.x sockets); a survivor that says
    // so exits failing and mpirun ends the job, so under load the others may be ended first
    const named = [0, 2, 3].filter((s) => new RegExp(`rank ${s}: caught E_RANK_LOST lostRank=1 MPI rank 1 \\(pid \\d+ on host h0\\) was lost during allReduce: it failed: uncaught Error: rank 1 fails on purpose; rank ${s} stops here`).test(r.out));
    expect(named.length, r.out).toBeGreaterThanOrEqual(1);
    expect(r.out).not.toContain("could not connect");
    expectNothingLeft(r);
  });
});

describe.skipIf(why !== null)("faults across hosts", () => {
  // A survivor that names the lost rank exits failing, and mpirun then ends the job: under load
  // the other survivor may be ended before it reports. At least one of them names it.
  const survivorsSaying = (out: string, survivors: number[], pattern: (s: number) => RegExp) => survivors.filter((s) => pattern(s).test(out));

  it("a rank killed (SIGKILL) on host h1 while the others wait in allReduce: they fail naming rank 1 on h1", async () => {
    const r = await hostsJob(3, 1, child("lost_rank_child.ts"), ["kill"], { timeoutMs: 120_000 });
    expect(r.status, r.out).not.toBe(0);
    const named = survivorsSaying(r.out, [0, 2], (s) => new RegExp(`rank ${s}: caught E_RANK_LOST lostRank=1 MPI rank 1 \\(pid \\d+ on host h1\\) was lost during allReduce: its process exited; rank ${s} stops here`));
    expect(named.length, r.out).toBeGreaterThanOrEqual(1);
    expect(r.out).not.toContain("completed (unexpected)");
    expectNothingLeft(r);
  });

  it("a rank on h1 that fails with an uncaught error: the others say it failed and why", async () => {
    const r = await hostsJob(3, 1, child("lost_rank_child.ts"), ["throw"], { timeoutMs: 120_000 });
    expect(r.status, r.out).not.toBe(0);
    const named = survivorsSaying(r.out, [0, 2], (s) => new RegExp(`MPI rank 1 \\(pid \\d+ on host h1\\) was lost during allReduce: it failed: uncaught Error: rank 1 fails on purpose; rank ${s} stops here`));
    expect(named.length, r.out).toBeGreaterThanOrEqual(1);
    expectNothingLeft(r);
  });

  it("host h2's link taken down mid-collective: the ranks on h0 and h1 fail naming rank 2 on h2 (heartbeats stopped), well before TSPTO_MPI_TIMEOUT", async () => {
    const prefix = newPrefix();
    let looping = 0, downAt = 0, firstError = 0;
    let seen = "";
    const r = await hostsJob(3, 1, child("link_child.ts"), [], {
      prefix, heal: true, timeoutMs: 150_000, env: { TSPTO_MPI_TIMEOUT: "120" },
      onOutput: (chunk, at) => {
        seen += chunk;
        if (!downAt && (seen.match(/: looping/g)?.length ?? 0) === 3) {
          looping = at;
          const d = spawnSync(script, ["link", prefix, "2", "down"], { encoding: "utf8" });
          if (d.status !== 0) throw new Error(`link down failed: ${d.stderr}`);
          downAt = Date.now();
        }
        if (downAt && !firstError && /rank [01]: caught /.test(seen)) {
          firstError = at;
          // the detection is what this test checks; then the link comes back so that mpirun can
          // reach h2's daemon to end the job (cut off, mpirun waited on it past the test's timeout
          // once: a CI run hung 300 s after the survivors had named rank 2 within 2.9 s)
          setTimeout(() => spawn(script, ["link", prefix, "2", "up"], { stdio: "ignore" }), 3000).unref();
        }
      },
    });
    expect(looping, r.out).toBeGreaterThan(0);
    const named = survivorsSaying(r.out, [0, 1], (s) => new RegExp(`rank ${s}: caught E_RANK_LOST lostRank=2 MPI rank 2 \\(pid \\d+ on host h2\\) was lost during allReduce: no heartbeat from it for \\d+\\.\\d s \\(its host or network link is down, or the process is stopped\\); rank ${s} stops here`));
    expect(named.length, r.out).toBeGreaterThanOrEqual(1);
    expect(r.out).not.toContain("E_MPI_TIMEOUT");
    console.log(`link down -> first survivor's named error: ${((firstError - downAt) / 1e3).toFixed(1)} s (heartbeatS 3)`);
    expect(r.out).toContain("netns: every link is up again");
    expectNothingLeft(r);
  });

  it("a rank on h1 that is alive but never joins: the others fail after TSPTO_MPI_TIMEOUT (2 s) instead of hanging", async () => {
    const r = await hostsJob(3, 1, child("lost_rank_child.ts"), ["stall"], { timeoutMs: 120_000 });
    expect(r.status, r.out).not.toBe(0);
    const said = survivorsSaying(r.out, [0, 2], (s) => new RegExp(`rank ${s}: caught E_MPI_TIMEOUT lostRank=undefined allReduce did not complete within 2 s \\(TSPTO_MPI_TIMEOUT\\)`));
    expect(said.length, r.out).toBeGreaterThanOrEqual(1);
    expect(r.out).not.toContain("second allReduce completed");
    expectNothingLeft(r);
  });
});
