// Merging the per-(rank, device) swimlanes of a distributed run into one timeline.
import { describe, it, expect } from "vitest";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findRankTraces, mergeRankTraces } from "../../src/tools/ranks.js";

function lane(dir: string, rank: number, device: number, body: object) {
  const d = join(dir, "dfx_outputs", `rank_${rank}`, `device_${device}`);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, "swimlane.json"), JSON.stringify(body));
}
const events = (start: number, dur: number) => [
  { ph: "M", name: "process_name", pid: 0, args: { name: "tspto-cpu-sim device 0" } },
  { ph: "M", name: "thread_name", pid: 0, tid: 0, args: { name: "core 0" } },
  { ph: "X", name: "k", pid: 0, tid: 0, ts: start, dur, args: { task: 0 } },
];

describe("mergeRankTraces", () => {
  it("orders files by rank then device, names each process and core row, and shifts times onto one clock", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-ranks-"));
    lane(dir, 1, 0, { traceEvents: events(2, 5), startUnixUs: 1_000_250 });
    lane(dir, 0, 1, { traceEvents: events(0, 3), startUnixUs: 1_000_100 });
    lane(dir, 0, 0, { traceEvents: events(1, 4), startUnixUs: 1_000_000 });
    mkdirSync(join(dir, "dfx_outputs", "rank_x")); // not a rank folder: ignored
    const files = findRankTraces(dir);
    expect(files.map((f) => [f.rank, f.device])).toEqual([[0, 0], [0, 1], [1, 0]]);
    const m = mergeRankTraces(dir, files);
    expect(m.ranks).toEqual([0, 1]);
    expect(m.startUnixUs).toBe(1_000_000);
    const ev = m.traceEvents as { ph: string; name: string; pid: number; ts?: number; args?: { name?: string } }[];
    expect(ev.filter((e) => e.name === "process_name").map((e) => [e.pid, e.args?.name])).toEqual([[0, "rank 0 / device 0"], [1, "rank 0 / device 1"], [2, "rank 1 / device 0"]]);
    expect(ev.filter((e) => e.name === "thread_name").map((e) => e.args?.name)).toEqual(["rank 0 / device 0 / core 0", "rank 0 / device 1 / core 0", "rank 1 / device 0 / core 0"]);
    expect(ev.filter((e) => e.ph === "X").map((e) => [e.pid, e.ts])).toEqual([[0, 1], [1, 100], [2, 252]]);
  });

  it("refuses a swimlane without startUnixUs, naming the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-ranks-"));
    lane(dir, 0, 0, { traceEvents: events(0, 1) });
    expect(() => mergeRankTraces(dir, findRankTraces(dir))).toThrow(/rank_0\/device_0\/swimlane\.json: startUnixUs must be a number \(the launch start on the wall clock\), got undefined/);
  });
});
