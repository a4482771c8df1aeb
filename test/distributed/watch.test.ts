// The watch's listening sockets (native/src/mpi_watch.cc, Watch::Listen), without MPI: the
// addon's watchTest binding listens exactly as a rank's init does, and the kernel's own table
// (/proc/net/tcp, sockets.ts) says what is really listening. A port that another rank of this
// host takes between this rank's bind() and listen() is passed over for the next one of
// TSPTO_MPI_WATCH_PORTS (the race that left a rank without a watch); no port at all is one
// error (init's), never a silent run without a watch. With Open MPI's TCP traffic limited
// (OMPI_MCA_btl_tcp_if_include, else OMPI_MCA_oob_tcp_if_include) the watch listens on those
// addresses only, and tells its peers those.
import { describe, it, expect, afterEach } from "vitest";
import { networkInterfaces } from "node:os";
import { nativeMpi } from "../../src/distributed/mpi.js";
import { freeWatchPorts, listeningSockets } from "./sockets.js";

const linux = process.platform === "linux";
const watch = () => nativeMpi().watchTest;

const opened: number[] = [];
const listen = (testTaken = 0) => {
  const w = watch().listen(testTaken);
  opened.push(w.id);
  return w;
};
/** The reason listen() throws (init's), with its code. */
const failure = (testTaken = 0) => {
  try {
    opened.push(watch().listen(testTaken).id);
  } catch (e) {
    return `${(e as { code?: string }).code}: ${(e as Error).message}`;
  }
  return "listened";
};

const INCLUDES = ["OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"];
const saved = { ...process.env };
for (const k of INCLUDES) delete process.env[k];
afterEach(() => {
  for (const id of opened.splice(0)) watch().close(id);
  for (const k of ["TSPTO_MPI_WATCH_PORTS", ...INCLUDES, "OMPI_MCA_btl_tcp_if_exclude"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

const freePorts = (n: number) => freeWatchPorts(n, watch());
const range = (lo: number, hi: number) => (process.env.TSPTO_MPI_WATCH_PORTS = `${lo}-${hi}`);

describe.skipIf(!linux)("the watch's listening socket (TSPTO_MPI_WATCH_PORTS)", () => {
  it("a port another socket takes between this watch's bind() and its listen() (another rank of this host) is passed over: the watch listens on the next one", () => {
    const p = freePorts(3);
    range(p, p + 2);
    const w = listen(1);
    expect(w.port).toBe(p + 1);
    // the kernel's view: one listener on the port taken (the other "rank"'s), one on the next
    expect(listeningSockets({ min: p, max: p + 2 })).toEqual([`0.0.0.0:${p}`, `0.0.0.0:${p + 1}`]);
  });

  it("an ephemeral port taken the same way: the watch listens on another ephemeral port", () => {
    delete process.env.TSPTO_MPI_WATCH_PORTS;
    const w = listen(1);
    expect(w.port).toBeGreaterThan(0);
    expect(listeningSockets({ min: w.port, max: w.port })).toEqual([`0.0.0.0:${w.port}`]);
  });

  it("every ephemeral port taken that way: one error after 8 tries, saying why", () => {
    delete process.env.TSPTO_MPI_WATCH_PORTS;
    expect(failure(8)).toBe("TSPTO_MPI_WATCH: could not listen on an ephemeral port at 0.0.0.0 in 8 tries (listen: Address already in use)");
  });

  it("watches on one range never share a port: each takes the next free one; when none is left it is one error naming each port's failure", () => {
    const p = freePorts(2);
    range(p, p + 1);
    expect(listen().port).toBe(p);
    expect(listen().port).toBe(p + 1);
    expect(failure()).toBe(`TSPTO_MPI_WATCH: none of the 2 ports of TSPTO_MPI_WATCH_PORTS=${p}-${p + 1} could listen at 0.0.0.0 (${p}: bind: Address already in use; ${p + 1}: bind: Address already in use)`);
    expect(listeningSockets({ min: p, max: p + 1 })).toEqual([`0.0.0.0:${p}`, `0.0.0.0:${p + 1}`]);
  });

  it("every port taken between bind() and listen(): the error says listen failed on each (a wide range lists the first three and the last)", () => {
    const p = freePorts(6);
    range(p, p);
    expect(failure(1)).toBe(`TSPTO_MPI_WATCH: none of the 1 port of TSPTO_MPI_WATCH_PORTS=${p}-${p} could listen at 0.0.0.0 (${p}: listen: Address already in use)`);
    range(p, p + 5);
    expect(failure(6)).toBe(`TSPTO_MPI_WATCH: none of the 6 ports of TSPTO_MPI_WATCH_PORTS=${p}-${p + 5} could listen at 0.0.0.0 (${p}: listen: Address already in use; ${p + 1}: listen: Address already in use; ${p + 2}: listen: Address already in use; ...; ${p + 5}: listen: Address already in use)`);
    // nothing is left listening: the failed watch closed its sockets, and the takers with it
    expect(listeningSockets({ min: p, max: p + 5 })).toEqual([]);
  });

  it("a malformed TSPTO_MPI_WATCH_PORTS is init's error, quoting it", () => {
    for (const bad of ["47000", "47000-47010x", "0-10", "47010-47000", "47000-70000"]) {
      process.env.TSPTO_MPI_WATCH_PORTS = bad;
      expect(failure()).toBe(`TSPTO_MPI_WATCH: TSPTO_MPI_WATCH_PORTS must be '<min>-<max>' (ports 1..65535), got '${bad}'`);
    }
  });

  it("watchTest.listen refuses a testTaken that is not a count", () => {
    expect(() => watch().listen(-1)).toThrow("mpi: testTaken must be an integer in [0, 65535]");
  });
});

/** A non-loopback IPv4 interface of this machine, or undefined. */
const other = Object.entries(networkInterfaces()).flatMap(([name, as]) => (as ?? []).filter((a) => a.family === "IPv4" && !a.internal).map((a) => ({ name, address: a.address })))[0];

describe.skipIf(!linux)("where the watch listens (btl_tcp_if_include / oob_tcp_if_include)", () => {
  it("neither set: on every interface (0.0.0.0), telling peers the non-loopback addresses not in btl_tcp_if_exclude", () => {
    const w = listen();
    expect(w.addresses).toEqual([]);
    expect(listeningSockets({ min: w.port, max: w.port })).toEqual([`0.0.0.0:${w.port}`]);
    expect(w.published).not.toContain("127.0.0.1");
    if (other) {
      expect(w.published).toContain(other.address);
      process.env.OMPI_MCA_btl_tcp_if_exclude = other.name;
      expect(listen().published).not.toContain(other.address);
    }
  });

  it("OMPI_MCA_btl_tcp_if_include=lo (as mpirun --mca btl_tcp_if_include lo gives each rank): on 127.0.0.1 only, and that is what peers are told", () => {
    process.env.OMPI_MCA_btl_tcp_if_include = "lo";
    const w = listen();
    expect(listeningSockets({ min: w.port, max: w.port })).toEqual([`127.0.0.1:${w.port}`]);
    expect(w.addresses).toEqual(["127.0.0.1"]);
    expect(w.published).toEqual(["127.0.0.1"]);
  });

  it("oob_tcp_if_include as a CIDR when btl_tcp_if_include is not set; btl_tcp_if_include first when both are", () => {
    process.env.OMPI_MCA_oob_tcp_if_include = "127.0.0.0/8";
    const w = listen();
    expect(listeningSockets({ min: w.port, max: w.port })).toEqual([`127.0.0.1:${w.port}`]);
    if (other) {
      process.env.OMPI_MCA_btl_tcp_if_include = `${other.address}/32`;
      const v = listen();
      expect(listeningSockets({ min: v.port, max: v.port })).toEqual([`${other.address}:${v.port}`]);
      expect(v.published).toEqual([other.address]);
    }
  });

  it.skipIf(!other)("several interfaces: one socket on each, on one port; a port taken on one of them is passed over on all", () => {
    const p = freePorts(2);
    range(p, p + 1);
    // another rank that listens on the other interface only takes p there
    process.env.OMPI_MCA_btl_tcp_if_include = other!.name;
    expect(listen().port).toBe(p);
    process.env.OMPI_MCA_btl_tcp_if_include = `lo, ${other!.name}`;
    const w = listen();
    expect(w.port).toBe(p + 1);
    expect(listeningSockets({ min: p, max: p + 1 })).toEqual([`${other!.address}:${p}`, `127.0.0.1:${p + 1}`, `${other!.address}:${p + 1}`].sort());
    expect(w.addresses).toEqual(["127.0.0.1", other!.address]);
  });

  it("an include that selects no IPv4 address of this host (an unknown name, a malformed CIDR, another network) is init's error, listing the host's interfaces", () => {
    for (const [variable, spec] of [["OMPI_MCA_btl_tcp_if_include", "nosuch0"], ["OMPI_MCA_btl_tcp_if_include", "127.0.0.0/x"], ["OMPI_MCA_oob_tcp_if_include", "198.51.100.0/24"]]) {
      for (const k of INCLUDES) delete process.env[k];
      process.env[variable] = spec;
      const m = new RegExp(`^TSPTO_MPI_WATCH: ${variable}='${spec.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}' selects no IPv4 address of this host \\(its IPv4 interfaces: (.*)\\), and the watch listens only where Open MPI's TCP traffic may go$`).exec(failure());
      expect(m, `${variable}=${spec}`).not.toBeNull();
      expect(m![1].split(", ")).toContain("lo 127.0.0.1");
    }
  });
});
