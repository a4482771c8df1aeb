// The disk cache's directory and tspto's log switches: shared by the jit's disk cache
// (src/cache.ts) and the front end's memo of parsed kernel signatures (src/dsl/memo.ts).
// Imports only Node built-ins.
import { chmodSync, mkdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/**
 * Is logging topic `t` on ($TSPTO_LOG: comma-separated topics, or "all")? Topics:
 * `recompiles` (one line per compile naming what changed), `compile` (one line per compile
 * phase with its time, and progress on a TTY while the C++ compiler runs), `phases` (the
 * phases on one line).
 */
export function logOn(t: "recompiles" | "phases" | "compile"): boolean {
  const v = process.env.TSPTO_LOG;
  if (!v) return false;
  return v.split(",").some((x) => { const s = x.trim(); return s === t || s === "all"; });
}
export function log(line: string): void {
  process.stderr.write(`tspto: ${line}\n`);
}

let resolved: { env: string; dir: string | null } | undefined;

/** The cache directory (created, 0700), or null when disabled or unusable. */
export function cacheDir(): string | null {
  const env = `${process.env.TSPTO_CACHE_DIR ?? ""}\0${process.env.XDG_CACHE_HOME ?? ""}`;
  if (resolved && resolved.env === env) return resolved.dir;
  let dir: string | null = null;
  const set = process.env.TSPTO_CACHE_DIR;
  if (set === "off" || set === "0" || set === "false") dir = null;
  else {
    const base = set ? resolve(set) : join(process.env.XDG_CACHE_HOME ? resolve(process.env.XDG_CACHE_HOME) : join(homedir(), ".cache"), "tspto");
    try {
      mkdirSync(base, { recursive: true, mode: 0o700 });
      const st = statSync(base);
      const uid = process.getuid?.();
      if (uid !== undefined && st.uid !== uid) {
        log(`disk cache disabled: ${base} belongs to another user (uid ${st.uid})`);
      } else {
        if ((st.mode & 0o077) !== 0) chmodSync(base, 0o700);
        dir = base;
      }
    } catch (e) {
      log(`disk cache disabled: cannot create ${base} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  resolved = { env, dir };
  return dir;
}
