// DFX of a distributed run: every device of every rank writes its own
// dfx_outputs/rank_<r>/device_<d>/swimlane.json (DistributedWorker). This merges them into one
// Chrome trace with a process per (rank, device) and the launches placed on one clock by each
// file's `startUnixUs` (the launch start on the wall clock: ranks on one host share it; across
// hosts it is as good as their clock synchronisation).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { DfxFormatError, SWIMLANE_FILE, readJsonFile, show } from "./dfx.js";

export const MERGED_SWIMLANE_FILE = "swimlane_ranks.json";

export interface RankTraceFile {
  rank: number;
  device: number;
  file: string;
}

/** The per-device swimlanes under a dfx_outputs/ directory, in (rank, device) order. */
export function findRankTraces(dfxDir: string): RankTraceFile[] {
  if (!existsSync(dfxDir) || !statSync(dfxDir).isDirectory()) return [];
  const out: RankTraceFile[] = [];
  for (const r of readdirSync(dfxDir)) {
    const rm = /^rank_(\d+)$/.exec(r);
    if (!rm || !statSync(join(dfxDir, r)).isDirectory()) continue;
    for (const d of readdirSync(join(dfxDir, r))) {
      const dm = /^device_(\d+)$/.exec(d);
      const file = join(dfxDir, r, d, SWIMLANE_FILE);
      if (dm && existsSync(file)) out.push({ rank: Number(rm[1]), device: Number(dm[1]), file });
    }
  }
  return out.sort((a, b) => a.rank - b.rank || a.device - b.device);
}

interface Event { ph?: unknown; pid?: unknown; tid?: unknown; ts?: unknown; name?: unknown; args?: Record<string, unknown> }

/**
 * One Chrome trace of every (rank, device) swimlane: process i is the i-th (rank, device) in
 * order, named "rank <r> / device <d>"; its core rows are named "rank <r> / device <d> / core <c>";
 * times are µs from the earliest launch start among the files.
 */
export function mergeRankTraces(files: readonly RankTraceFile[]): { traceEvents: object[]; displayTimeUnit: string; ranks: number[]; startUnixUs: number } {
  const loaded = files.map((f) => {
    const j = readJsonFile(f.file) as { traceEvents?: unknown; startUnixUs?: unknown };
    if (typeof j !== "object" || j === null || !Array.isArray(j.traceEvents)) throw new DfxFormatError(f.file, "must be an object with a traceEvents array");
    if (typeof j.startUnixUs !== "number" || !Number.isFinite(j.startUnixUs)) {
      throw new DfxFormatError(f.file, `startUnixUs must be a number (the launch start on the wall clock), got ${show(j.startUnixUs)}: record it again with this version of tspto`);
    }
    return { ...f, events: j.traceEvents as Event[], start: j.startUnixUs };
  });
  const base = Math.min(...loaded.map((l) => l.start));
  const traceEvents: object[] = [];
  loaded.forEach((l, pid) => {
    const who = `rank ${l.rank} / device ${l.device}`;
    traceEvents.push({ ph: "M", name: "process_name", pid, args: { name: who } });
    for (const e of l.events) {
      if (typeof e !== "object" || e === null) continue;
      if (e.ph === "M" && e.name === "process_name") continue;
      const copy: Record<string, unknown> = { ...e, pid };
      if (e.ph === "M" && e.name === "thread_name") copy.args = { ...e.args, name: `${who} / ${String(e.args?.name ?? `tid ${String(e.tid)}`)}` };
      if (typeof e.ts === "number") copy.ts = e.ts + (l.start - base);
      traceEvents.push(copy);
    }
  });
  return { traceEvents, displayTimeUnit: "ns", ranks: [...new Set(loaded.map((l) => l.rank))], startUnixUs: base };
}
