// DFX of a distributed run: every device of every rank writes its own
// dfx_outputs/rank_<r>/device_<d>/swimlane.json (DistributedWorker). This merges them into one
// Chrome trace with a process per (rank, device) and the launches placed on one clock by each
// file's `startUnixUs` (the launch start on the wall clock: ranks on one host share it; across
// hosts it is as good as their clock synchronisation).
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { DFX_DIR, DfxFormatError, SWIMLANE_FILE, minOf, readJsonFile, show } from "./dfx.js";

export const MERGED_SWIMLANE_FILE = "swimlane_ranks.json";

export interface RankTraceFile {
  rank: number;
  device: number;
  /** Relative to the artifact directory. */
  rel: string;
  file: string;
}

/**
 * The per-device swimlanes under `<dir>/dfx_outputs/`, in (rank, device) order: real
 * directories and regular files only (a link planted there is not followed).
 */
export function findRankTraces(dir: string): RankTraceFile[] {
  const isDir = (p: string) => { try { return lstatSync(p).isDirectory(); } catch { return false; } };
  const dfxDir = join(dir, DFX_DIR);
  if (!isDir(dfxDir)) return [];
  const out: RankTraceFile[] = [];
  for (const r of readdirSync(dfxDir)) {
    const rm = /^rank_(\d+)$/.exec(r);
    if (!rm || !isDir(join(dfxDir, r))) continue;
    for (const d of readdirSync(join(dfxDir, r))) {
      const dm = /^device_(\d+)$/.exec(d);
      const rel = `${DFX_DIR}/${r}/${d}/${SWIMLANE_FILE}`;
      if (dm && isDir(join(dfxDir, r, d)) && existsSync(join(dir, rel))) out.push({ rank: Number(rm[1]), device: Number(dm[1]), rel, file: join(dir, rel) });
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
export function mergeRankTraces(dir: string, files: readonly RankTraceFile[]): { traceEvents: object[]; displayTimeUnit: string; ranks: number[]; startUnixUs: number } {
  const loaded = files.map((f) => {
    const j = readJsonFile(dir, f.rel) as { traceEvents?: unknown; startUnixUs?: unknown };
    if (typeof j !== "object" || j === null || !Array.isArray(j.traceEvents)) throw new DfxFormatError(f.file, "must be an object with a traceEvents array");
    if (typeof j.startUnixUs !== "number" || !Number.isFinite(j.startUnixUs)) {
      throw new DfxFormatError(f.file, `startUnixUs must be a number (the launch start on the wall clock), got ${show(j.startUnixUs)}: record it again with this version of tspto`);
    }
    return { ...f, events: j.traceEvents as Event[], start: j.startUnixUs };
  });
  const base = minOf(loaded, (l) => l.start);
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
