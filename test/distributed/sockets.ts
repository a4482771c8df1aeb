// The listening TCP sockets of this process, from the kernel's own table (/proc/net/tcp of
// this network namespace, joined with this process's file descriptors): what a watch really
// bound, whatever the watch believes. Linux only.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** "address:port" of each IPv4 socket of this process in LISTEN state, sorted; `ports` filters. */
export function listeningSockets(ports?: { min: number; max: number }): string[] {
  const mine = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) mine.add(m[1]);
    } catch {
      // closed meanwhile (the directory's own descriptor)
    }
  }
  const out: string[] = [];
  for (const line of readFileSync("/proc/self/net/tcp", "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[3] !== "0A" || !mine.has(f[9])) continue; // 0A: TCP_LISTEN
    const [hex, portHex] = f[1].split(":");
    const n = parseInt(hex, 16); // the address as the kernel stores it: network order, read little-endian
    const addr = [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join(".");
    const port = parseInt(portHex, 16);
    if (ports && (port < ports.min || port > ports.max)) continue;
    out.push(`${addr}:${port}`);
  }
  return out.sort();
}

/** The range "min-max" of TSPTO_MPI_WATCH_PORTS, or undefined. */
export function watchPorts(env: NodeJS.ProcessEnv = process.env): { min: number; max: number } | undefined {
  const m = /^(\d+)-(\d+)$/.exec(env.TSPTO_MPI_WATCH_PORTS ?? "");
  return m ? { min: Number(m[1]), max: Number(m[2]) } : undefined;
}

/**
 * `n` consecutive ports below the ephemeral range that nothing listens on now, each checked by
 * listening on it as a watch does (the addon's watchTest binding); TSPTO_MPI_WATCH_PORTS is left as it was.
 */
export function freeWatchPorts(n: number, watch: { listen(): { id: number }; close(id: number): void }): number {
  const saved = process.env.TSPTO_MPI_WATCH_PORTS;
  try {
    for (let attempt = 0; attempt < 200; attempt++) {
      const base = 20000 + ((process.pid * 7919 + attempt * 104729) % 1200) * 10;
      let free = true;
      for (let p = base; p < base + n && free; p++) {
        process.env.TSPTO_MPI_WATCH_PORTS = `${p}-${p}`;
        try {
          watch.close(watch.listen().id);
        } catch {
          free = false;
        }
      }
      if (free) return base;
    }
    throw new Error(`no ${n} free consecutive ports found in 20000-32000`);
  } finally {
    if (saved === undefined) delete process.env.TSPTO_MPI_WATCH_PORTS;
    else process.env.TSPTO_MPI_WATCH_PORTS = saved;
  }
}
