// Finding a program on $PATH without running it (the targets' toolchains: c++, nvcc).
import { existsSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";

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

/**
 * The words of a command setting such as $CXX ("ccache g++", "./tools/cxx"): a relative path
 * in the first word is resolved against the current directory now, so that running it in
 * another working directory (an artifact's build directory) runs the same program.
 */
export function commandWords(command: string): string[] {
  const argv = command.trim().split(/\s+/);
  if (argv[0].includes("/") && !isAbsolute(argv[0])) argv[0] = resolve(argv[0]);
  return argv;
}
