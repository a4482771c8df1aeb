// `tspto inspect` (and CompiledProgram.fromDir) on a directory that is hostile or odd: links
// planted to make it write outside the directory, FIFOs and devices that hang or exhaust
// memory, names that leave the directory, malformed metadata, very large legitimate traces,
// and terminal escapes in names. Every case: no write outside the directory, no hang, one
// line naming the file (no stack trace), control characters escaped.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CompiledProgram, ir, pl, randn, zeros } from "tspto";
import { main } from "../../src/tools/cli.js";
import { escapeControls } from "../../src/tools/inspect.js";
import { traceJson, synthesize } from "./synthetic.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "bin", "tspto.mjs");

/** The bin as a user runs it (a hang is a timeout: status null). */
function tspto(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: tmpdir(), encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "", err = "";
  const code = await main(args, { out: (s) => { out += s; }, err: (s) => { err += s; } });
  return { code, out, err };
}

/** A message of one line (plus the usage-free hint lines tspto writes), no stack frames. */
const noStack = (s: string) => expect(s).not.toMatch(/\n\s+at |TypeError|RangeError|bad_alloc/);

const N = 16;
const hostile = pl.jit(function hostileKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.add(pl.load(a, [0, 0], [N, N]), 1), [0, 0], out); });
  return out;
});

let work: string;
let pristine: string;
let n = 0;
/** A fresh copy of a real cpu artifact. */
const copy = () => { const d = join(work, `a${n++}`); cpSync(pristine, d, { recursive: true }); return d; };

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tspto-hostile-"));
  pristine = join(work, "pristine");
  ir.compile(hostile.lower(randn([N, N], { seed: 1 }), zeros([N, N])), { platform: "cpu", outputDir: pristine });
});
afterAll(() => {
  if (work && process.env.TSPTO_KEEP_TEST_DIRS !== "1") rmSync(work, { recursive: true, force: true });
});

describe("tspto inspect never writes through a link planted in the directory", () => {
  const traced = () => {
    const d = copy();
    mkdirSync(join(d, "dfx_outputs"));
    writeFileSync(join(d, "dfx_outputs", "swimlane.json"), JSON.stringify(traceJson(synthesize({ cores: 2, tiles: 3 }), 2)));
    return d;
  };

  it("a link at dfx_outputs/swimlane.html is replaced by the page; the file it pointed to is untouched", async () => {
    const d = traced();
    const victim = join(work, "victim-file.txt");
    writeFileSync(victim, "precious\n");
    symlinkSync(victim, join(d, "dfx_outputs", "swimlane.html"));
    const r = await run("inspect", d, "--trace");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(join(d, "dfx_outputs", "swimlane.html")).isFile()).toBe(true);
    expect(readFileSync(join(d, "dfx_outputs", "swimlane.html"), "utf8")).toContain("<title>Swimlane: hostileKernel</title>");
  });

  it("dfx_outputs/ itself a link to a directory outside: refused, one line, nothing written there", async () => {
    const d = traced();
    const outside = join(work, "outside-dir");
    mkdirSync(outside);
    writeFileSync(join(outside, "swimlane.json"), readFileSync(join(d, "dfx_outputs", "swimlane.json")));
    rmSync(join(d, "dfx_outputs"), { recursive: true });
    symlinkSync(outside, join(d, "dfx_outputs"));
    const r = await run("inspect", d, "--trace");
    expect(r.code).toBe(1);
    expect(r.err).toBe(`tspto inspect: ${join(d, "dfx_outputs", "swimlane.json")}: not read: ${join(d, "dfx_outputs")} is a symbolic link, not a directory inside ${d}\n`);
    expect(existsSync(join(outside, "swimlane.html"))).toBe(false);
    // the summary reports it instead of following it
    const s = await run("inspect", d);
    expect(s.code).toBe(0);
    expect(s.out).toContain("! dfx_outputs is a symbolic link, not a directory; not read");
  });

  it("--graph's page and a distributed run's merged trace are written the same way", async () => {
    const d = copy();
    const lane = join(d, "dfx_outputs", "rank_0", "device_0");
    mkdirSync(lane, { recursive: true });
    writeFileSync(join(lane, "swimlane.json"), JSON.stringify({ ...traceJson(synthesize({ cores: 1, tiles: 2 }), 1), startUnixUs: 1 }));
    const victim = join(work, "victim-merged.txt");
    writeFileSync(victim, "keep\n");
    symlinkSync(victim, join(d, "dfx_outputs", "swimlane_ranks.json"));
    const r = await run("inspect", d, "--trace");
    expect(r.code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("keep\n");
    expect(lstatSync(join(d, "dfx_outputs", "swimlane_ranks.json")).isFile()).toBe(true);
  });
});

describe("tspto inspect reads regular files inside the directory only", () => {
  it("a FIFO as compiled_meta.json: one line naming it, no hang (bin)", () => {
    const d = copy();
    rmSync(join(d, "compiled_meta.json"));
    expect(spawnSync("mkfifo", [join(d, "compiled_meta.json")]).status).toBe(0);
    const r = tspto("inspect", d);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`tspto inspect: ${join(d, "compiled_meta.json")}: is a FIFO (named pipe), not a regular file; not read\n`);
  });

  it("a FIFO among the sources and the library a link to /dev/zero: warnings naming them, no hang, no bad_alloc (bin)", () => {
    const d = copy();
    expect(spawnSync("mkfifo", [join(d, "kernels", "pipe.cpp")]).status).toBe(0);
    rmSync(join(d, "build", "libprogram.so"));
    symlinkSync("/dev/zero", join(d, "build", "libprogram.so"));
    const r = tspto("inspect", d);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("  ! kernels/pipe.cpp is a FIFO (named pipe), not a regular file; not read\n");
    expect(r.stdout).toContain("  ! build/libprogram.so: the library named by compiled_meta.json is a symbolic link; tspto does not follow links in a directory it reads\n");
    expect(r.stdout).toContain("kernels/program.cpp");
  });

  it("CompiledProgram.fromDir + a launch with the library a link to /dev/zero: E_ARTIFACT_FILE at once", () => {
    const d = copy();
    rmSync(join(d, "build", "libprogram.so"));
    symlinkSync("/dev/zero", join(d, "build", "libprogram.so"));
    const c = CompiledProgram.fromDir(d);
    let err: (Error & { code?: string }) | undefined;
    try { c.run(randn([N, N]), zeros([N, N])); } catch (e) { err = e as Error & { code?: string }; }
    expect(err?.code).toBe("E_ARTIFACT_FILE");
    expect(err?.message).toContain(`${join(d, "build", "libprogram.so")}: program library is a symbolic link; tspto does not follow links in a directory it reads`);
  });

  it("a library named ../../etc/passwd is neither read nor hashed", async () => {
    const d = copy();
    const meta = JSON.parse(readFileSync(join(d, "compiled_meta.json"), "utf8"));
    meta.library = "../../etc/passwd";
    writeFileSync(join(d, "compiled_meta.json"), JSON.stringify(meta));
    const r = await run("inspect", d, "--json");
    expect(r.code).toBe(0);
    const rep = JSON.parse(r.out);
    expect(rep.library).toBeNull();
    expect(rep.warnings).toContain(`compiled_meta.json names the library "../../etc/passwd", which leaves the directory ('..'); not read (the runtime refuses it)`);
    expect(rep.warnings.some((w: string) => w.startsWith("compiled_meta.json: ") && w.includes("field 'library' must be a relative path inside the artifact directory"))).toBe(true);
  });
});

describe("tspto inspect prints one line for a malformed file, never a stack trace", () => {
  for (const [what, edit, expected] of [
    ["a parameter that is not an object", (m: Record<string, unknown>) => { m.params = [5]; }, "field 'params[0]' must be an object, got 5"],
    ["a parameter without a name", (m: Record<string, unknown>) => { (m.params as Record<string, unknown>[])[0].name = null; }, "field 'params[0].name' must be a string, got null"],
    ["a kernel that is a string", (m: Record<string, unknown>) => { m.kernels = ["k"]; }, "field 'kernels[0]' must be an object, got \"k\""],
    ["a shape of strings", (m: Record<string, unknown>) => { (m.params as Record<string, unknown>[])[0].shape = ["x"]; }, "field 'params[0].shape[0]' must be a number, got \"x\""],
  ] as const) {
    it(what, async () => {
      const d = copy();
      const m = JSON.parse(readFileSync(join(d, "compiled_meta.json"), "utf8"));
      edit(m);
      writeFileSync(join(d, "compiled_meta.json"), JSON.stringify(m));
      const r = await run("inspect", d);
      expect(r.code).toBe(1);
      expect(r.err).toBe(`tspto inspect: ${join(d, "compiled_meta.json")}: ${expected}\n`);
      noStack(r.err);
    });
  }

  it("a stamp with fields of the wrong type is reported without them", async () => {
    const d = copy();
    writeFileSync(join(d, "build", "stamp.json"), JSON.stringify({ version: 7, flags: "x", compileMs: "fast" }));
    const r = await run("inspect", d);
    expect(r.code).toBe(0);
    expect(r.out).toContain("  built with ?\n");
  });
});

describe("tspto inspect on a legitimate trace of 130 000 tasks", () => {
  it("summarizes and renders it (no stack overflow)", async () => {
    const d = copy();
    mkdirSync(join(d, "dfx_outputs"));
    const n = 130_000;
    const ev: object[] = [{ ph: "M", name: "thread_name", pid: 0, tid: 0, args: { name: "core 0" } }];
    for (let i = 0; i < n; i++) ev.push({ ph: "X", name: i % 2 ? "k_a" : "k_b", pid: 0, tid: i % 4, ts: i, dur: 0.5, args: { task: i } });
    writeFileSync(join(d, "dfx_outputs", "swimlane.json"), JSON.stringify({ traceEvents: ev }));
    const s = await run("inspect", d);
    expect(s.err).toBe("");
    expect(s.code).toBe(0);
    expect(s.out).toMatch(/dfx_outputs\/swimlane\.json +[\d.]+ MiB +130,000 tasks on 4 tracks/);
    const t = await run("inspect", d, "--trace");
    expect(t.err).toBe("");
    expect(t.code).toBe(0);
    expect(readFileSync(join(d, "dfx_outputs", "swimlane.html"), "utf8").match(/<rect class="task"/g)).toHaveLength(n);
  }, 120_000);
});

describe("tspto inspect escapes control characters from the directory", () => {
  it("a program name with terminal escapes prints escaped (text), and stays exact data in --json", async () => {
    const d = copy();
    const m = JSON.parse(readFileSync(join(d, "compiled_meta.json"), "utf8"));
    m.name = "evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eboom";
    writeFileSync(join(d, "compiled_meta.json"), JSON.stringify(m));
    const r = await run("inspect", d);
    expect(r.code).toBe(0);
    expect(r.out).toContain("  program    evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eboom");
    expect(r.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    const j = await run("inspect", d, "--json");
    expect(j.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(j.out).meta.name).toBe(m.name);
  });

  it("a file name with an escape, in the listing and in an error", async () => {
    const d = copy();
    writeFileSync(join(d, "kernels", "x\u001b[31m.cpp"), "int x;\n");
    const r = await run("inspect", d);
    expect(r.out).toContain("kernels/x\\x1b[31m.cpp");
    expect(r.out).not.toContain("\u001b");
    const e = copy();
    rmSync(join(e, "compiled_meta.json"));
    writeFileSync(join(e, "\u001b[2Jnote"), "");
    const x = await run("inspect", e);
    expect(x.code).toBe(1);
    expect(x.err).toContain("(found: \\x1b[2Jnote");
    expect(x.err).not.toContain("\u001b");
  });

  it("escapeControls leaves ordinary text, including non-ASCII letters, as it is", () => {
    expect(escapeControls("matmul_Ω tile 16×16 — ok")).toBe("matmul_Ω tile 16×16 — ok");
    expect(escapeControls("a\tb\nc\u0000")).toBe("a\\x09b\\x0ac\\x00");
  });
});
