// `tspto profile <script>`: runs a script (TypeScript through tsx) with the process-wide profile
// on and prints the roofline table of every program it launched (totals per program and kernel);
// --json prints the profile document; a script that fails still gets the launches it made, then
// exit status 1; usage and file errors say what is wrong.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runChild } from "../setup/child.js";
import { main, noTsxMessage, readProfile, tsxLoader } from "../../src/tools/cli.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "bin", "tspto.mjs");
const TSPTO = pathToFileURL(join(ROOT, "src", "index.ts")).href;
const work = mkdtempSync(join(tmpdir(), "tspto-profile-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The CLI in a child process, run with spawn (the script it profiles compiles for seconds: the event loop keeps turning). */
async function tspto(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const r = await runChild(process.execPath, [BIN, ...args], { cwd: work, timeout: 240_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "", err = "";
  const code = await main(args, { out: (s) => { out += s; }, err: (s) => { err += s; } });
  return { code, out, err };
}
function script(name: string, body: string): string {
  const f = join(work, name);
  writeFileSync(f, body);
  return f;
}

const KERNELS = `import { pl, randn, zeros } from ${JSON.stringify(TSPTO)};
const ROWS = 128, COLS = 128;
const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [ROWS, COLS]), pl.load(b, [0, 0], [ROWS, COLS])), [0, 0], out);
  });
  return out;
});
const mm = pl.jit(function mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.matmul(a, b)); });
  return c;
});
const A = randn([ROWS, COLS], { seed: 0 }), B = randn([ROWS, COLS], { seed: 1 }), O = zeros([ROWS, COLS]);
`;

describe("tspto profile <script>", () => {
  it("prints the roofline of every program the script launched: totals per program and kernel", async () => {
    const f = script("two.ts", `${KERNELS}
for (let i = 0; i < 3; i++) addKernel(A, B, O);
const M = randn([256, 256], { seed: 2 }), C = zeros([256, 256]);
for (let i = 0; i < 2; i++) mm(M, M, C);
console.log("script output");
`);
    const r = await tspto("profile", f);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const out = r.stdout;
    expect(out.startsWith("script output\n")).toBe(true);
    expect(out).toContain("roofline of addKernel on cpu, total over 3 launches, sorted by time lost against the roof");
    expect(out).toContain("roofline of mm on cpu, total over 2 launches, sorted by time lost against the roof");
    expect(out).toMatch(/\n {2}limits: read [\d.]+ GB\/s, FMA [\d.]+ GFLOP\/s/);
    // 3 launches of 3·128·128·4 bytes and 128·128 flops; 2 of a 256³ matmul (2·256³ flops each)
    expect(out).toMatch(/\n {2}addKernel_incore_0 +3 +576\.0 KiB +49\.2 K +\d+\.\d\d +[\d.]+ +[\d.]+ +0\.0833 +memory /);
    expect(out).toMatch(/\n {2}mm_incore_0 +\d+ +2\.50 MiB +67\.1 M +\d+\.\d\d /);
  });

  it("launches of the script's child processes are profiled too (each process writes its own document)", async () => {
    const child = script("child.ts", `${KERNELS}\nfor (let i = 0; i < 2; i++) addKernel(A, B, O);\n`);
    const f = script("parent.ts", `import { spawnSync } from "node:child_process";
${KERNELS}
const M = randn([256, 256], { seed: 2 }), C = zeros([256, 256]);
mm(M, M, C);
const r = spawnSync(process.execPath, [...process.execArgv, ${JSON.stringify(child)}], { stdio: "inherit" });
if (r.status !== 0) throw new Error("child failed");
`);
    const r = await tspto("profile", f);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    // the script's own process first, then the child's
    const mmAt = r.stdout.indexOf("roofline of mm on cpu, total over 1 launch,"), addAt = r.stdout.indexOf("roofline of addKernel on cpu, total over 2 launches,");
    expect(mmAt).toBeGreaterThanOrEqual(0);
    expect(addAt).toBeGreaterThan(mmAt);
  });

  it("--json prints the profile document", async () => {
    const f = script("json.ts", `${KERNELS}
for (let i = 0; i < 2; i++) addKernel(A, B, O);
`);
    const r = await tspto("profile", "--json", f);
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.format).toBe("tspto-profile-1");
    expect(doc.processes).toHaveLength(1);
    expect(doc.programs).toHaveLength(1);
    const p = doc.programs[0];
    expect(p).toMatchObject({ program: "addKernel", platform: "cpu", launches: 2, per: "total" });
    expect(p.rows[0]).toMatchObject({ kernel: "addKernel_incore_0", tasks: 2, calls: 2, bytes: 2 * 3 * 128 * 128 * 4, flops: 2 * 128 * 128 });
    expect(p.rows[0].us).toBeGreaterThan(0);
    expect(p.limits.readGBs).toBeGreaterThan(0);
  });

  it("a script that fails before it loads tspto: exit status 1 naming why", async () => {
    const f = script("early.mjs", `process.exit(3);\n`);
    const r = await tspto("profile", f);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe("tspto profile: the script exited with status 3 without writing its profile (it loaded no tspto runtime, or left before exit handlers ran: process.abort, a fatal signal)\n");
  });

  it("a script that fails after launching: the launches it made, then exit status 1 naming why", async () => {
    const f = script("fails.ts", `${KERNELS}
addKernel(A, B, O);
throw new Error("boom");
`);
    const r = await tspto("profile", f);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("roofline of addKernel on cpu, total over 1 launch,");
    expect(r.stderr).toContain("Error: boom");
    expect(r.stderr).toContain("tspto profile: the script exited with status 1 (the profile above covers the launches it made)\n");
  });

  it("a script that loads tspto and launches nothing", async () => {
    const f = script("idle.ts", `${KERNELS}\nconsole.log(O.shape.join("x"));\n`);
    const r = await tspto("profile", f);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("128x128\ntspto profile: idle.ts made no launch: nothing to profile\n");
  });

  it("a script that never loads tspto (plain JavaScript runs without tsx)", async () => {
    const f = script("none.mjs", `console.log("nothing here");\n`);
    const r = await tspto("profile", f, "--flag-for-the-script");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("nothing here\ntspto profile: none.mjs made no launch: nothing to profile (no tspto runtime was loaded, or one older than `tspto profile`)\n");
  });

  it("arguments after the script are the script's", async () => {
    const f = script("args.mjs", `console.log(JSON.stringify(process.argv.slice(2)));\n`);
    const r = await tspto("profile", f, "--json", "x");
    expect(r.status).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe('["--json","x"]');
  });

  it("errors: a missing script, a directory, no script, an unknown option", async () => {
    const missing = join(work, "nope.ts");
    expect(await run("profile", missing)).toEqual({ code: 1, out: "", err: `tspto profile: no such script: ${missing}\n` });
    const d = join(work, "adir");
    mkdirSync(d, { recursive: true });
    expect(await run("profile", d)).toEqual({ code: 1, out: "", err: `tspto profile: ${d} is not a file (give the script to run)\n` });
    const none = await run("profile");
    expect(none.code).toBe(2);
    expect(none.err.startsWith("tspto: profile: missing <script>\n\nUsage: tspto inspect")).toBe(true);
    const opt = await run("profile", "--bogus", "x.ts");
    expect(opt.code).toBe(2);
    expect(opt.err.split("\n")[0]).toBe("tspto: unknown option '--bogus' for profile (options go before the script; what follows the script is its own)");
    const cmd = await run("frobnicate");
    expect(cmd.code).toBe(2);
    expect(cmd.err.split("\n")[0]).toBe("tspto: unknown command 'frobnicate' (the commands are 'inspect', 'profile' and 'precompile')");
  });

  it("--help describes profile", async () => {
    const r = await run("profile", "--help");
    expect(r.code).toBe(0);
    expect(r.out).toContain("tspto profile [--json] <script> [args...]");
    expect(r.out).toContain("sorted by time lost");
  });

  it("a TypeScript script where no tsx resolves: the message says how to get it", () => {
    const lonely = mkdtempSync(join(tmpdir(), "tspto-no-tsx-"));
    try {
      expect(tsxLoader(join(lonely, "s.ts"), [lonely])).toBeNull();
      expect(tsxLoader(join(lonely, "s.ts"))).toMatch(/^file:.*tsx/); // tspto's own, here
    } finally { rmSync(lonely, { recursive: true, force: true }); }
    expect(noTsxMessage("/x/s.ts")).toBe("running s.ts (TypeScript) needs tsx, which neither its directory, the working directory nor tspto resolves: npm install --save-dev tsx, or give a .js / .mjs script");
  });

  it("a profile document that is not one names the file", () => {
    const bad = (text: string) => { const f = join(work, "bad-profile.json"); writeFileSync(f, text); try { readProfile(f); } catch (e) { return (e as Error).message; } throw new Error("read"); };
    const f = join(work, "bad-profile.json");
    expect(bad("{")).toMatch(new RegExp(`^${f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not a profile \\(`));
    expect(bad(`{"format":"x"}`)).toBe(`${f}: not a "tspto-profile-1" document`);
    expect(bad(`{"format":"tspto-profile-1","programs":[{"program":"p","platform":"cpu","launches":1,"per":"total","rows":[{"kernel":"k","us":"slow"}]}]}`))
      .toBe(`${f} (programs[0]): rows[0].us must be a number or null, got "slow"`);
  });
});
