// node:child_process in tspto's browser build: no processes in a page (the cpu and cuda
// toolchains are not part of the browser registry; this only fails clearly if reached).
const none = (what: string) => (): never => { throw new Error(`${what}: tspto's browser build cannot start processes (cpu and cuda run in Node)`); };
export const spawn = none("spawn");
export const spawnSync = none("spawnSync");
export const execFileSync = none("execFileSync");
export default { spawn, spawnSync, execFileSync };
