// `process` and `Buffer` in tspto's browser build (injected by scripts/build-browser.mjs where
// tspto reads them): no environment variables, the page's clock, stderr as console.warn.
import { Buffer as B } from "./buffer.js";

const hr = (): bigint => BigInt(Math.round(performance.now() * 1e6));
export const process = {
  env: {} as Record<string, string | undefined>,
  pid: 1,
  platform: "browser",
  arch: "wasm",
  versions: {} as Record<string, string>,
  argv: [] as string[],
  cwd: (): string => "/",
  hrtime: Object.assign((prev?: [number, number]): [number, number] => {
    const ns = hr() - (prev ? BigInt(prev[0]) * 1_000_000_000n + BigInt(prev[1]) : 0n);
    return [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
  }, { bigint: hr }),
  stderr: { isTTY: false, write: (s: string): boolean => { console.warn(s.replace(/\n$/, "")); return true; } },
  stdout: { isTTY: false, write: (s: string): boolean => { console.log(s.replace(/\n$/, "")); return true; } },
  on: (): void => {},
  once: (): void => {},
  off: (): void => {},
  emitWarning: (w: string): void => { console.warn(w); },
  getBuiltinModule: (): undefined => undefined,
  memoryUsage: (): { rss: number; heapUsed: number } => ({ rss: 0, heapUsed: 0 }),
};
export const Buffer = B;
