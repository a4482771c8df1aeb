// Finding a program on $PATH without running it (the targets' toolchains: c++, nvcc).
import { existsSync, statSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";

/** The resolved path of a command on $PATH (or a path), or null. */
export function whichSync(cmd: string): string | null {
  if (cmd.includes("/")) return existsSync(cmd) ? resolve(cmd) : null;
  for (const d of (process.env.PATH ?? "").split(delimiter)) {
    if (!d) continue;
    const p = join(d, cmd);
    try { if (statSync(p).isFile()) return p; } catch { /* not here */ }
  }
  return null;
}
