// node:fs in tspto's browser build: one in-memory volume for the page. What tspto writes to
// files in Node (artifact directories, the jit's cache, DFX traces, kernel source registered by
// the build plugin) lives here, so the same runtime code runs; nothing persists past the page.
// Only the calls tspto makes are implemented, synchronously, with Node's error codes. Each
// directory indexes its entries, so every call costs what its own directory or subtree holds,
// never what the whole volume holds.
import { Buffer } from "./buffer.js";
import { dirname, resolve } from "./path.js";

interface FileNode { kind: "file"; data: Uint8Array; mtimeMs: number; mode: number; ino: number }
interface DirNode { kind: "dir"; mtimeMs: number; mode: number; ino: number; children: Set<string> }
type FsNode = FileNode | DirNode;

const nodes = new Map<string, FsNode>([["/", { kind: "dir", mtimeMs: Date.now(), mode: 0o700, ino: 1, children: new Set() }]]);

/** This node:fs is the page's in-memory volume (src/artifact reads this to know nothing persists). */
export const IN_MEMORY_VOLUME = true;

const baseName = (p: string): string => p.slice(p.lastIndexOf("/") + 1);
/** Put `n` at `a` (its parent directory exists), indexing it in the parent. */
function place(a: string, n: FsNode): void {
  nodes.set(a, n);
  if (a !== "/") (nodes.get(dirname(a)) as DirNode).children.add(baseName(a));
}
/** Remove `a` and everything under it, and its parent's index entry. */
function remove(a: string): void {
  for (const k of under(a)) nodes.delete(k);
  if (a !== "/") (nodes.get(dirname(a)) as DirNode | undefined)?.children.delete(baseName(a));
}

/** What the volume holds now (tests, and a page that wants to watch its memory). */
export function volumeStats(): { files: number; dirs: number; bytes: number } {
  let files = 0, dirs = 0, bytes = 0;
  for (const n of nodes.values()) {
    if (n.kind === "file") { files++; bytes += n.data.length; } else dirs++;
  }
  return { files, dirs, bytes };
}
let nextIno = 2;
const fds = new Map<number, { path: string; append: boolean }>();
let nextFd = 3;

export const constants = { O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 0o100, O_EXCL: 0o200, O_TRUNC: 0o1000, O_APPEND: 0o2000, O_NONBLOCK: 0o4000, O_NOFOLLOW: 0o400000, S_IFMT: 0o170000, S_IFREG: 0o100000, S_IFDIR: 0o40000 };

function fail(code: string, syscall: string, path: string): never {
  const e = new Error(`${code}: ${syscall} '${path}'`) as Error & { code: string; syscall: string; path: string };
  e.code = code; e.syscall = syscall; e.path = path;
  throw e;
}
const abs = (p: string | URL): string => resolve(typeof p === "string" ? p : decodeURIComponent(p.pathname));
const enc = new TextEncoder();
const bytesOf = (d: string | ArrayBufferView): Uint8Array => (typeof d === "string" ? enc.encode(d) : new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice());

function parentDir(p: string, syscall: string): void {
  const d = nodes.get(dirname(p));
  if (!d) fail("ENOENT", syscall, p);
  if (d.kind !== "dir") fail("ENOTDIR", syscall, p);
}

export class Stats {
  constructor(readonly n: FsNode) {}
  get size(): number { return this.n.kind === "file" ? this.n.data.length : 0; }
  get mtimeMs(): number { return this.n.mtimeMs; }
  get mtime(): Date { return new Date(this.n.mtimeMs); }
  get mode(): number { return (this.n.kind === "dir" ? constants.S_IFDIR : constants.S_IFREG) | this.n.mode; }
  get ino(): number { return this.n.ino; }
  readonly dev = 1;
  readonly nlink = 1;
  readonly uid = 0;
  readonly gid = 0;
  isFile(): boolean { return this.n.kind === "file"; }
  isDirectory(): boolean { return this.n.kind === "dir"; }
  isSymbolicLink(): boolean { return false; }
  isFIFO(): boolean { return false; }
}
export class Dirent {
  constructor(readonly name: string, readonly parentPath: string, private readonly n: FsNode) {}
  isFile(): boolean { return this.n.kind === "file"; }
  isDirectory(): boolean { return this.n.kind === "dir"; }
  isSymbolicLink(): boolean { return false; }
}

export function existsSync(p: string): boolean { return nodes.has(abs(p)); }
export function statSync(p: string, o?: { throwIfNoEntry?: boolean }): Stats {
  const n = nodes.get(abs(p));
  if (!n) { if (o?.throwIfNoEntry === false) return undefined as unknown as Stats; fail("ENOENT", "stat", p); }
  return new Stats(n);
}
export const lstatSync = statSync;
export function fstatSync(fd: number): Stats { const f = fds.get(fd); if (!f) fail("EBADF", "fstat", String(fd)); return statSync(f.path); }
export function realpathSync(p: string): string { const a = abs(p); if (!nodes.has(a)) fail("ENOENT", "realpath", p); return a; }
export function readlinkSync(p: string): never { fail("EINVAL", "readlink", p); }
export function chmodSync(p: string, mode: number): void { const n = nodes.get(abs(p)); if (!n) fail("ENOENT", "chmod", p); n.mode = mode & 0o777; }

export function mkdirSync(p: string, o?: { recursive?: boolean; mode?: number } | number): string | undefined {
  const a = abs(p);
  const recursive = typeof o === "object" && !!o.recursive;
  const mode = (typeof o === "object" ? o.mode : o) ?? 0o777;
  const hit = nodes.get(a);
  if (hit) { if (recursive && hit.kind === "dir") return undefined; fail("EEXIST", "mkdir", p); }
  if (recursive) { if (dirname(a) !== a) mkdirSync(dirname(a), { recursive: true, mode }); } else parentDir(a, "mkdir");
  place(a, { kind: "dir", mtimeMs: Date.now(), mode: mode & 0o777, ino: nextIno++, children: new Set() });
  return a;
}

export function writeFileSync(p: string, data: string | ArrayBufferView, o?: { mode?: number; flag?: string } | string): void {
  const a = abs(p);
  parentDir(a, "open");
  const hit = nodes.get(a);
  if (hit?.kind === "dir") fail("EISDIR", "open", p);
  if (hit && typeof o === "object" && o.flag?.includes("x")) fail("EEXIST", "open", p);
  place(a, { kind: "file", data: bytesOf(data), mtimeMs: Date.now(), mode: (typeof o === "object" ? o.mode : undefined) ?? 0o644, ino: hit?.ino ?? nextIno++ });
}
export function appendFileSync(p: string, data: string | ArrayBufferView): void {
  const a = abs(p);
  const hit = nodes.get(a);
  if (hit?.kind !== "file") { writeFileSync(p, data); return; }
  const add = bytesOf(data), all = new Uint8Array(hit.data.length + add.length);
  all.set(hit.data); all.set(add, hit.data.length);
  hit.data = all; hit.mtimeMs = Date.now();
}

export function readFileSync(p: string | number, o?: string | { encoding?: string | null }): string | Buffer {
  const a = typeof p === "number" ? fds.get(p)?.path ?? fail("EBADF", "read", String(p)) : abs(p);
  const n = nodes.get(a);
  if (!n) fail("ENOENT", "open", String(p));
  if (n.kind === "dir") fail("EISDIR", "read", String(p));
  const encoding = typeof o === "string" ? o : o?.encoding;
  const b = Buffer.from(n.data);
  return encoding ? (b as unknown as { toString(e: string): string }).toString(encoding) : b;
}

export function readdirSync(p: string, o?: { withFileTypes?: boolean }): (string | Dirent)[] {
  const a = abs(p);
  const n = nodes.get(a);
  if (!n) fail("ENOENT", "scandir", p);
  if (n.kind !== "dir") fail("ENOTDIR", "scandir", p);
  const prefix = a === "/" ? "/" : `${a}/`;
  const out: (string | Dirent)[] = [];
  for (const name of n.children) out.push(o?.withFileTypes ? new Dirent(name, a, nodes.get(prefix + name)!) : name);
  return out.sort((x, y) => (String(typeof x === "string" ? x : x.name) < String(typeof y === "string" ? y : y.name) ? -1 : 1));
}

/** `a` and every path under it (depth first, from the directories' indexes). */
function under(a: string): string[] {
  const out: string[] = [];
  const stack = [a];
  while (stack.length) {
    const p = stack.pop()!;
    const n = nodes.get(p);
    if (!n) continue;
    out.push(p);
    if (n.kind === "dir") for (const c of n.children) stack.push(p === "/" ? `/${c}` : `${p}/${c}`);
  }
  return out;
}

export function renameSync(from: string, to: string): void {
  const a = abs(from), b = abs(to);
  const n = nodes.get(a);
  if (!n) fail("ENOENT", "rename", from);
  parentDir(b, "rename");
  const t = nodes.get(b);
  if (t?.kind === "dir" && (n.kind !== "dir" || t.children.size > 0)) fail(n.kind === "dir" ? "ENOTEMPTY" : "EISDIR", "rename", to);
  if (b === a || b.startsWith(`${a}/`)) { if (b === a) return; fail("EINVAL", "rename", to); }
  const moved = under(a).map((k) => [k, nodes.get(k)!] as const);
  if (t) remove(b);
  remove(a);
  for (const [k, v] of moved) nodes.set(b + k.slice(a.length), v);
  (nodes.get(dirname(b)) as DirNode).children.add(baseName(b));
}

export function rmSync(p: string, o?: { recursive?: boolean; force?: boolean }): void {
  const a = abs(p);
  const n = nodes.get(a);
  if (!n) { if (o?.force) return; fail("ENOENT", "rm", p); }
  if (n.kind === "dir" && !o?.recursive) fail("EISDIR", "rm", p);
  remove(a);
}
export function unlinkSync(p: string): void { const n = nodes.get(abs(p)); if (!n) fail("ENOENT", "unlink", p); if (n.kind === "dir") fail("EISDIR", "unlink", p); remove(abs(p)); }
export function rmdirSync(p: string): void {
  const a = abs(p);
  const n = nodes.get(a);
  if (!n) fail("ENOENT", "rmdir", p);
  if (n.kind !== "dir") fail("ENOTDIR", "rmdir", p);
  if (n.children.size) fail("ENOTEMPTY", "rmdir", p);
  remove(a);
}

export function openSync(p: string, flags: number | string = "r", mode = 0o666): number {
  const a = abs(p);
  const f = typeof flags === "number" ? flags : flags.startsWith("w") ? constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC : flags.startsWith("a") ? constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND : 0;
  const n = nodes.get(a);
  if (n && (f & constants.O_CREAT) && (f & constants.O_EXCL)) fail("EEXIST", "open", p);
  if (!n) {
    if (!(f & constants.O_CREAT)) fail("ENOENT", "open", p);
    parentDir(a, "open");
    place(a, { kind: "file", data: new Uint8Array(0), mtimeMs: Date.now(), mode: mode & 0o777, ino: nextIno++ });
  } else if (n.kind === "file" && (f & constants.O_TRUNC)) n.data = new Uint8Array(0);
  const fd = nextFd++;
  fds.set(fd, { path: a, append: !!(f & constants.O_APPEND) });
  return fd;
}
export function closeSync(fd: number): void { if (!fds.delete(fd)) fail("EBADF", "close", String(fd)); }
export function writeSync(fd: number, data: string | ArrayBufferView, off?: number, len?: number): number {
  const f = fds.get(fd);
  if (!f) fail("EBADF", "write", String(fd));
  let b = bytesOf(data);
  if (typeof data !== "string" && off !== undefined) b = b.subarray(off, len === undefined ? undefined : off + len);
  appendFileSync(f.path, b);
  return b.length;
}
export function readSync(fd: number, buf: ArrayBufferView, off = 0, len?: number, pos: number | null = 0): number {
  const f = fds.get(fd);
  if (!f) fail("EBADF", "read", String(fd));
  const n = nodes.get(f.path);
  if (n?.kind !== "file") fail("EISDIR", "read", f.path);
  const dst = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  const start = pos ?? 0, count = Math.max(0, Math.min(len ?? dst.length - off, n.data.length - start));
  dst.set(n.data.subarray(start, start + count), off);
  return count;
}
export default { IN_MEMORY_VOLUME, volumeStats, constants, Stats, Dirent, existsSync, statSync, lstatSync, fstatSync, realpathSync, readlinkSync, chmodSync, mkdirSync, writeFileSync, appendFileSync, readFileSync, readdirSync, renameSync, rmSync, unlinkSync, rmdirSync, openSync, closeSync, writeSync, readSync };
