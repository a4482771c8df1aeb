// node:os in tspto's browser build: what the runtime asks of the host (core count, home and
// temporary directories of the in-memory volume).
const cores = (): number => (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
export function availableParallelism(): number { return cores(); }
export function cpus(): { model: string; speed: number }[] { return Array.from({ length: cores() }, () => ({ model: "browser", speed: 0 })); }
export function homedir(): string { return "/home"; }
export function tmpdir(): string { return "/tmp"; }
export function hostname(): string { return "browser"; }
export function arch(): string { return "wasm"; }
export function platform(): string { return "browser"; }
export function loadavg(): number[] { return [0, 0, 0]; }
export default { availableParallelism, cpus, homedir, tmpdir, hostname, arch, platform, loadavg };
