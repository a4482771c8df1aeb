// Files tspto reads from a directory it does not trust (an artifact directory handed to
// `CompiledProgram.fromDir` or `tspto inspect`), and the owner/mode rule for files it does
// trust (code it loads, includes or compiles: libraries, precompiled headers, memos).
//
// Reading inside a directory: the name is checked (relative, no `..`, no empty or control
// characters), every directory on the way is a real directory (no symbolic links), the file
// is opened without following a link and without blocking (a FIFO never hangs the open),
// must be a regular file (no FIFO, device, socket or directory) no larger than the caller's
// limit, and (Linux) the opened file is checked to be the one inside the directory. Every
// refusal is a TsptoArtifactError E_ARTIFACT_FILE naming the file and why. The open and the
// regular-file check alone (links followed, for files a user names: a checkpoint, its config)
// are `openRegularFile`, which says why without throwing, for the caller's own error.
//
// Writing: `writeFileNoFollow` creates a temporary file exclusively (O_EXCL, no link
// followed) next to the target and renames it over the target, so a link planted at the
// target is replaced, never written through.
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, readlinkSync, realpathSync, renameSync, rmSync, writeSync } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { dirname, join, resolve, sep } from "node:path";
import { TsptoArtifactError } from "./meta.js";

const MiB = 1 << 20;

/** The parts of a file's status tspto looks at (a `node:fs` Stats has them). Declared here so
 *  that the published declarations need no `@types/node`. */
export interface FileStat {
  readonly uid: number;
  readonly mode: number;
  readonly size: number;
  readonly dev: number;
  readonly ino: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSocket(): boolean;
}

/** Size limits of the files tspto reads back from a directory (bytes). */
export const FILE_LIMITS = {
  /** compiled_meta.json, build/stamp.json, the artifact marker. */
  meta: 16 * MiB,
  /** program.json (the lowered program; large unrolled programs are tens of MiB). */
  program: 512 * MiB,
  /** A program library or fatbin (Node reads one file into one buffer: at most 2 GiB here). */
  library: 2048 * MiB,
  /** A text file whose lines `tspto inspect` counts, a pass dump. */
  text: 64 * MiB,
  /** A DFX recording (swimlane.json, deps.json) that `tspto inspect` parses. */
  dfx: 512 * MiB,
} as const;

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

const fileError = (path: string, why: string, hint?: string): TsptoArtifactError =>
  new TsptoArtifactError(`${path}: ${why}`, hint ?? "an artifact directory holds regular files written by tspto; compile the program again into a directory of your own", "E_ARTIFACT_FILE");

/** What kind of file a stat describes, for messages. */
export function fileKind(st: FileStat): string {
  if (st.isFile()) return "a regular file";
  if (st.isDirectory()) return "a directory";
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isFIFO()) return "a FIFO (named pipe)";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isSocket()) return "a socket";
  return "not a regular file";
}

/**
 * Why `rel` is not a name of a file inside a directory (absolute, `..`, empty parts, `.`,
 * control characters, a backslash), or null.
 */
export function badRelativeName(rel: string): string | null {
  if (typeof rel !== "string" || rel.length === 0) return "is empty";
  if (rel.length > 4096) return "is longer than 4096 characters";
  if (rel.startsWith("/")) return "is an absolute path";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(rel)) return "holds a control character or a backslash";
  const parts = rel.split("/");
  if (parts.some((p) => p === "..")) return "leaves the directory ('..')";
  if (parts.some((p) => p === "" || p === ".")) return "has an empty or '.' part";
  return null;
}

/** Throws E_ARTIFACT_FILE unless every directory between `root` and `root/rel` is a real directory (no link). */
function checkParents(root: string, rel: string): void {
  const parts = rel.split("/");
  let d = root;
  for (let i = 0; i < parts.length - 1; i++) {
    d = join(d, parts[i]);
    let st: FileStat;
    try { st = lstatSync(d); } catch (e) { throw fileError(join(root, rel), `cannot read it: ${d} ${errText(e)}`); }
    if (!st.isDirectory()) throw fileError(join(root, rel), `not read: ${d} is ${fileKind(st)}, not a directory inside ${root}`);
  }
}

const errText = (e: unknown): string => {
  const code = (e as NodeJS.ErrnoException).code;
  return code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? (e as Error).message})`;
};

export interface OpenedFile { readonly fd: number; readonly stat: FileStat; readonly path: string }

/**
 * Opens the regular file `root/rel` for reading (see the header); the caller closes `fd`.
 * `what` names the file in messages ("compiled_meta.json", "the program library").
 */
export function openInside(root: string, rel: string, opts: { maxBytes: number; what?: string }): OpenedFile {
  const path = join(root, rel);
  const what = opts.what ? `${opts.what} ` : "";
  const bad = badRelativeName(rel);
  if (bad) throw fileError(path, `the name ${JSON.stringify(rel)} ${bad}; not read`);
  checkParents(root, rel);
  const opened = openRegularFile(path, { follow: false });
  if (!opened.ok) {
    if (opened.code === "ELOOP" || opened.code === "EMLINK") throw fileError(path, `${what}is a symbolic link; tspto does not follow links in a directory it reads`);
    if (opened.code === "ENOENT") throw fileError(path, `${what}is missing`, "compile the program again (ir.compile or a jit call)");
    throw fileError(path, `${what}${opened.why}${opened.stat ? "; not read" : ""}`);
  }
  const { fd, stat } = opened;
  try {
    if (stat.size > opts.maxBytes) throw fileError(path, `${what}is ${stat.size} bytes, more than the ${opts.maxBytes} bytes tspto reads from such a file; not read`);
    checkOpenedInside(fd, root, rel, path);
    return { fd, stat, path };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** A file `openRegularFile` opened, or why it did not. */
export type RegularFileOpen =
  | { readonly ok: true; readonly fd: number; readonly stat: FileStat }
  | { readonly ok: false; readonly code: string | undefined; readonly why: string; /** set when the file opened but is not a regular file */ readonly stat?: FileStat };

/**
 * Opens `path` for reading without blocking and keeps it only if it is a regular file: the
 * open has O_NONBLOCK (opening a FIFO returns at once instead of waiting for a writer; reads
 * of a regular file ignore the flag) and the kind is taken from fstat of the opened file, so
 * no FIFO, device, socket or directory is read and nothing can be swapped in between a check
 * and the open. `follow: false` adds O_NOFOLLOW (a link at `path` is refused with ELOOP).
 * On success the caller closes `fd`; a refusal has closed it and says why in a phrase that
 * does not repeat the path ("does not exist", "is a FIFO (named pipe), not a regular file").
 */
export function openRegularFile(path: string, opts: { follow?: boolean } = {}): RegularFileOpen {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | O_NONBLOCK | (opts.follow === false ? O_NOFOLLOW : 0));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "does not exist"
      : code === "ELOOP" && opts.follow !== false ? "cannot be opened: its symbolic links lead in a loop (ELOOP)"
      : `cannot be opened (${code ?? (e as Error).message})`;
    return { ok: false, code, why };
  }
  let stat: FileStat;
  try {
    stat = fstatSync(fd);
  } catch (e) {
    closeSync(fd);
    const code = (e as NodeJS.ErrnoException).code;
    return { ok: false, code, why: `cannot be read (${code ?? (e as Error).message})` };
  }
  if (!stat.isFile()) {
    closeSync(fd);
    return { ok: false, code: undefined, why: `is ${fileKind(stat)}, not a regular file`, stat };
  }
  return { ok: true, fd, stat };
}

/** Linux: the opened file really is `root/rel` (no directory on the way was swapped for a link meanwhile). */
function checkOpenedInside(fd: number, root: string, rel: string, path: string): void {
  if (process.platform !== "linux") return;
  let actual: string;
  try { actual = readlinkSync(`/proc/self/fd/${fd}`); } catch { return; /* no /proc: the checks before the open stand */ }
  let want: string;
  try { want = join(realpathSync(root), rel); } catch { return; }
  if (actual !== want) throw fileError(path, `opened ${actual}, which is not inside ${root}; not read`);
}

/** The whole regular file `root/rel` (see openInside). */
export function readInside(root: string, rel: string, opts: { maxBytes: number; what?: string }): Uint8Array {
  const f = openInside(root, rel, opts);
  try {
    return readOpened(f);
  } finally {
    closeSync(f.fd);
  }
}

/** Reads an opened file: its size at the open, no more (a file growing meanwhile is not read further). */
export function readOpened(f: OpenedFile): Uint8Array {
  const buf = Buffer.alloc(f.stat.size);
  let off = 0;
  while (off < buf.length) {
    const n = readSync(f.fd, buf, off, buf.length - off, off);
    if (n === 0) break;
    off += n;
  }
  return off === buf.length ? buf : buf.subarray(0, off);
}

/** sha256 of an opened file, read in chunks (bounded memory whatever its size). */
export function hashOpened(f: OpenedFile): { sha256: string; bytes: number } {
  const h = createHash("sha256");
  const chunk = Buffer.alloc(4 * MiB);
  let off = 0;
  while (off < f.stat.size) {
    const n = readSync(f.fd, chunk, 0, Math.min(chunk.length, f.stat.size - off), off);
    if (n === 0) break;
    h.update(n === chunk.length ? chunk : chunk.subarray(0, n));
    off += n;
  }
  return { sha256: h.digest("hex"), bytes: off };
}

/** `readInside` as UTF-8 text. */
export function readTextInside(root: string, rel: string, opts: { maxBytes: number; what?: string }): string {
  const b = readInside(root, rel, opts);
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8");
}

/**
 * Writes `file` without following a link planted there: the data goes to a temporary file
 * created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW) in the same directory, which is renamed
 * over `file` (a link at `file` is replaced, its target untouched).
 */
export function writeFileNoFollow(file: string, data: string | Uint8Array, mode = 0o644): void {
  const tmp = join(dirname(file), `.${file.slice(dirname(file).length + 1)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, mode);
  try {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/**
 * Throws E_ARTIFACT_FILE unless `root/rel` (a directory path inside `root`) is made of real
 * directories (no links), so that writing under it stays inside `root`; missing ones are fine.
 */
export function checkDirInside(root: string, rel: string): void {
  if (rel === "") return;
  const bad = badRelativeName(rel);
  if (bad) throw fileError(join(root, rel), `the name ${JSON.stringify(rel)} ${bad}`);
  let d = root;
  for (const part of rel.split("/")) {
    d = join(d, part);
    let st: FileStat;
    try { st = lstatSync(d); } catch { return; }
    if (!st.isDirectory()) throw fileError(d, `is ${fileKind(st)}, not a directory inside ${root}; tspto does not write through it`);
  }
}

// ------------------------------------------------------------------ trusted files (owner, mode)

/** The uid of this process (undefined where the platform has none: Windows). */
export const myUid = (): number | undefined => process.getuid?.();

/**
 * Why a file or directory tspto loads code from (or includes, or compiles) is not to be
 * trusted: owned by a user other than this one, root or `alsoOwner`; or writable by group
 * or others (a directory with the sticky bit, such as /tmp, may be writable by others: they
 * cannot rename what is not theirs in it). null when it is fine.
 */
export function untrustedReason(path: string, st: FileStat, alsoOwner?: number): string | null {
  const uid = myUid();
  if (uid === undefined) return null;
  if (st.uid !== uid && st.uid !== 0 && st.uid !== alsoOwner) return `${path} belongs to another user (uid ${st.uid})`;
  const sticky = st.isDirectory() && (st.mode & 0o1000) !== 0;
  if ((st.mode & 0o022) !== 0 && !sticky) return `${path} can be written by other users (mode ${(st.mode & 0o777).toString(8)})`;
  return null;
}

/**
 * Why the directories above `dir` (to /) let another user replace it: one owned by another
 * user (not root), or writable by everyone without the sticky bit. Group-writable parents are
 * accepted (a project directory under umask 002); the directories tspto writes itself are
 * checked strictly by `untrustedReason`.
 */
export function ancestorsReason(dir: string, alsoOwner?: number): string | null {
  const uid = myUid();
  if (uid === undefined) return null;
  for (let d = dirname(resolve(dir)); ; d = dirname(d)) {
    let st: FileStat;
    try { st = lstatSync(d); } catch (e) { return `cannot check ${d} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`; }
    if (st.isSymbolicLink()) {
      // a link on the way (e.g. /tmp -> /private/tmp): check where it leads as well
      let real: string;
      try { real = realpathSync(d); } catch { return `${d} is a link that cannot be resolved`; }
      const why = ancestorsReason(join(real, "x"), alsoOwner);
      if (why) return why;
    } else {
      if (st.uid !== uid && st.uid !== 0 && st.uid !== alsoOwner) return `${d} belongs to another user (uid ${st.uid}), who can replace what is in it`;
      if ((st.mode & 0o002) !== 0 && (st.mode & 0o1000) === 0) return `${d} can be written by every user (mode ${(st.mode & 0o777).toString(8)}) and has no sticky bit`;
    }
    if (dirname(d) === d) return null;
  }
}

/** True when `child` is `parent` or inside it. */
export const isInside = (child: string, parent: string): boolean => child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
