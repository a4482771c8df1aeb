// How a target reports a compiler that failed on its generated code (the C++ compiler of the cpu
// target, nvcc and the host compiler of cuda): one message with what failed and why, the
// compiler's own output (at most MAX_LINES, indented), where the generated source was left, and
// the command line.

/** Lines of the compiler's output a message shows (the first ones: the first error is what matters). */
export const MAX_LINES = 60;

/** Why the process `command` failed: it could not run, was killed by a signal, or exited non-zero. */
export function processFailure(command: string, r: { error?: unknown; signal?: string | null; status?: number | null }): string {
  if (r.error) return `could not run '${command}' (${(r.error as NodeJS.ErrnoException).code ?? (r.error as Error).message ?? String(r.error)})`;
  return r.signal ? `'${command}' was killed by ${r.signal}` : `'${command}' exited with code ${r.status}`;
}

/** "<what> failed: <why>", the output, the generated source and the command. */
export function compilerFailure(what: string, why: string, output: string, source: string, command: string): string {
  const lines = output.trim().split(/\r?\n/);
  const shown = lines.length > MAX_LINES ? [...lines.slice(0, MAX_LINES), `... (${lines.length - MAX_LINES} more lines)`] : lines;
  return `${what} failed: ${why}\n${shown.map((l) => `    ${l}`).join("\n")}\n  generated source: ${source}\n  command: ${command}`;
}
