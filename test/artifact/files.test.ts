// Reading a directory tspto does not trust (regular files inside it only, within a size
// limit, no link followed, no FIFO hang), writing without following a planted link, and the
// owner/mode rules for what tspto trusts.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, renameSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { closeSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import {
  TsptoArtifactError, ancestorsReason, badRelativeName, openRegularFile, readInside, untrustedReason, writeFileNoFollow,
} from "../../src/artifact/index.js";
import { cleanup, tmpDir } from "../codegen/helpers.js";

afterAll(cleanup);

const refused = (f: () => unknown): TsptoArtifactError => {
  try { f(); } catch (e) { expect(e).toBeInstanceOf(TsptoArtifactError); return e as TsptoArtifactError; }
  throw new Error("expected a refusal");
};
const isRoot = process.getuid?.() === 0;

/** Runs a child without blocking this worker's event loop, killed after `ms` (a blocking open is a test failure, not a hung suite). */
const child = (args: string[], ms: number): Promise<{ status: number | null; signal: string | null; out: string }> => new Promise((resolve, reject) => {
  const p = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (b: Buffer) => { out += b.toString(); });
  p.stderr.on("data", (b: Buffer) => { out += b.toString(); });
  const timer = setTimeout(() => p.kill("SIGKILL"), ms);
  p.on("error", reject);
  p.on("close", (status, signal) => { clearTimeout(timer); resolve({ status, signal, out }); });
});

describe("readInside", () => {
  it("reads a regular file inside the directory", () => {
    const d = tmpDir("ri");
    mkdirSync(join(d, "a", "b"), { recursive: true });
    writeFileSync(join(d, "a", "b", "f.txt"), "hello");
    expect(readInside(d, "a/b/f.txt", { maxBytes: 100 }).toString()).toBe("hello");
  });

  it("refuses names that leave the directory, absolute names, empty parts and control characters", () => {
    const d = tmpDir("names");
    for (const [rel, why] of [["../../etc/passwd", "leaves the directory ('..')"], ["/etc/passwd", "is an absolute path"], ["a//b", "has an empty or '.' part"],
      ["./a", "has an empty or '.' part"], ["a\u0000b", "holds a control character or a backslash"], ["", "is empty"]] as const) {
      expect(badRelativeName(rel)).toBe(why);
      const e = refused(() => readInside(d, rel, { maxBytes: 100 }));
      expect(e.code).toBe("E_ARTIFACT_FILE");
      expect(e.detail).toBe(`${join(d, rel)}: the name ${JSON.stringify(rel)} ${why}; not read`);
    }
  });

  it("a FIFO is refused at once (the open does not block)", () => {
    const d = tmpDir("fifo");
    expect(spawnSync("mkfifo", [join(d, "p")]).status).toBe(0);
    const e = refused(() => readInside(d, "p", { maxBytes: 100 }));
    expect(e.detail).toBe(`${join(d, "p")}: is a FIFO (named pipe), not a regular file; not read`);
  });

  it("a link (to /dev/zero, to a file outside) is never followed; nor a linked directory on the way", () => {
    const d = tmpDir("links");
    symlinkSync("/dev/zero", join(d, "zero"));
    expect(refused(() => readInside(d, "zero", { maxBytes: 100, what: "the library" })).detail)
      .toBe(`${join(d, "zero")}: the library is a symbolic link; tspto does not follow links in a directory it reads`);
    const outside = tmpDir("outside");
    writeFileSync(join(outside, "secret"), "s");
    symlinkSync(outside, join(d, "sub"));
    expect(refused(() => readInside(d, "sub/secret", { maxBytes: 100 })).detail)
      .toBe(`${join(d, "sub", "secret")}: not read: ${join(d, "sub")} is a symbolic link, not a directory inside ${d}`);
  });

  it("a device is refused by kind (root: a character device made with mknod)", (ctx) => {
    ctx.skip(!isRoot, "needs root (mknod); the FIFO and link cases cover the rule as any user");
    const d = tmpDir("dev");
    const r = spawnSync("mknod", [join(d, "zero"), "c", "1", "5"]);
    ctx.skip(r.status !== 0, `mknod failed: ${r.stderr}`);
    expect(refused(() => readInside(d, "zero", { maxBytes: 100 })).detail).toBe(`${join(d, "zero")}: is a character device, not a regular file; not read`);
  });

  it("a file over the limit is refused before anything is read (a sparse 1 TiB file)", () => {
    const d = tmpDir("big");
    writeFileSync(join(d, "huge"), "");
    truncateSync(join(d, "huge"), 2 ** 40);
    expect(refused(() => readInside(d, "huge", { maxBytes: 1 << 20 })).detail)
      .toBe(`${join(d, "huge")}: is 1099511627776 bytes, more than the 1048576 bytes tspto reads from such a file; not read`);
  });

  it("a missing file says so", () => {
    const d = tmpDir("missing");
    expect(refused(() => readInside(d, "nope", { maxBytes: 1, what: "compiled_meta.json" })).detail).toBe(`${join(d, "nope")}: compiled_meta.json is missing`);
  });
});

describe("openRegularFile (a file a user names: links followed, regular files only, never blocking)", () => {
  it("opens a regular file directly and through a link; refuses a directory, a device, a missing file and a link loop, saying why", () => {
    const d = tmpDir("orf");
    writeFileSync(join(d, "f"), "hello");
    symlinkSync(join(d, "f"), join(d, "to-f"));
    for (const p of ["f", "to-f"]) {
      const r = openRegularFile(join(d, p));
      expect(r.ok, p).toBe(true);
      if (r.ok) { expect(r.stat.size).toBe(5); closeSync(r.fd); }
    }
    // with follow: false a link is refused by the open (ELOOP), as openInside needs
    expect(openRegularFile(join(d, "to-f"), { follow: false })).toMatchObject({ ok: false, code: "ELOOP" });
    mkdirSync(join(d, "dir"));
    symlinkSync("/dev/null", join(d, "null"));
    symlinkSync(join(d, "loop"), join(d, "loop"));
    const cases: [string, string][] = [
      ["dir", "is a directory, not a regular file"],
      ["null", "is a character device, not a regular file"],
      ["none", "does not exist"],
      ["loop", "cannot be opened: its symbolic links lead in a loop (ELOOP)"],
    ];
    for (const [p, why] of cases) expect(openRegularFile(join(d, p)), p).toMatchObject({ ok: false, why });
    expect(openRegularFile(join(d, "dir"))).toHaveProperty("stat");
  });

  it("a FIFO, directly or through a link, is refused at once (checked in a child that is killed if the open blocks)", async (ctx) => {
    const d = tmpDir("orf-fifo");
    const mk = spawnSync("mkfifo", [join(d, "p")], { encoding: "utf8" });
    ctx.skip(!!mk.error || mk.status !== 0, `no mkfifo here (${mk.error?.message ?? mk.stderr}); the directory and device cases cover the kind check`);
    symlinkSync(join(d, "p"), join(d, "to-p"));
    const files = fileURLToPath(new URL("../../src/artifact/files.ts", import.meta.url));
    const code = `const { openRegularFile } = await import(${JSON.stringify(files)}); for (const p of process.argv.slice(1)) console.log(JSON.stringify(openRegularFile(p)));`;
    const r = await child(["--import", "tsx", "--input-type=module", "-e", code, join(d, "p"), join(d, "to-p")], 30_000);
    expect(r.signal, "the open blocked on the FIFO (the child was killed at the timeout)").toBeNull();
    expect(r.status, r.out).toBe(0);
    const lines = r.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l).toMatchObject({ ok: false, why: "is a FIFO (named pipe), not a regular file" });
  }, 60_000);
});

describe("writeFileNoFollow", () => {
  it("replaces a link planted at the target; the file it pointed to is untouched", () => {
    const d = tmpDir("nofollow");
    writeFileSync(join(d, "victim"), "precious");
    mkdirSync(join(d, "out"));
    symlinkSync(join(d, "victim"), join(d, "out", "page.html"));
    writeFileNoFollow(join(d, "out", "page.html"), "<html>");
    expect(readFileSync(join(d, "victim"), "utf8")).toBe("precious");
    expect(lstatSync(join(d, "out", "page.html")).isFile()).toBe(true);
    expect(readFileSync(join(d, "out", "page.html"), "utf8")).toBe("<html>");
    expect(lstatSync(join(d, "out", "page.html")).mode & 0o777).toBe(0o644 & ~process.umask());
  });
});

describe("trust: owner and mode", () => {
  it("a directory or file writable by group or others is not trusted; a sticky world-writable directory is", () => {
    const d = tmpDir("modes");
    mkdirSync(join(d, "open"));
    chmodSync(join(d, "open"), 0o777);
    expect(untrustedReason(join(d, "open"), lstatSync(join(d, "open")))).toBe(`${join(d, "open")} can be written by other users (mode 777)`);
    chmodSync(join(d, "open"), 0o1777);
    expect(untrustedReason(join(d, "open"), lstatSync(join(d, "open")))).toBeNull();
    writeFileSync(join(d, "f"), "x");
    chmodSync(join(d, "f"), 0o664);
    expect(untrustedReason(join(d, "f"), lstatSync(join(d, "f")))).toBe(`${join(d, "f")} can be written by other users (mode 664)`);
  });

  it("a parent writable by everyone without the sticky bit lets others swap what is below it", () => {
    const d = tmpDir("anc");
    mkdirSync(join(d, "shared", "mine"), { recursive: true });
    chmodSync(join(d, "shared"), 0o777);
    expect(ancestorsReason(join(d, "shared", "mine"))).toBe(`${join(d, "shared")} can be written by every user (mode 777) and has no sticky bit`);
    chmodSync(join(d, "shared"), 0o775); // group-writable parents are accepted (a project directory under umask 002)
    expect(ancestorsReason(join(d, "shared", "mine"))).toBeNull();
  });

  it("a directory or file owned by another user is not trusted (root: chown to uid 65534)", (ctx) => {
    ctx.skip(!isRoot, "needs root to plant a directory owned by another user (chown); the mode checks run as any user");
    const d = tmpDir("owner");
    mkdirSync(join(d, "theirs"));
    chownSync(join(d, "theirs"), 65534, 65534);
    expect(untrustedReason(join(d, "theirs"), lstatSync(join(d, "theirs")))).toBe(`${join(d, "theirs")} belongs to another user (uid 65534)`);
    mkdirSync(join(d, "theirs", "below"));
    expect(ancestorsReason(join(d, "theirs", "below"))).toBe(`${join(d, "theirs")} belongs to another user (uid 65534), who can replace what is in it`);
    renameSync(join(d, "theirs", "below"), join(d, "below"));
  });
});
