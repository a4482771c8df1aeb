// Replacing an artifact directory deletes only what tspto wrote there (the files its marker
// lists); everything else a user put there is moved into the new artifact, a name the new
// artifact needs that holds a user's file is an error before anything changes, and a
// directory whose marker tspto cannot read (an empty .artifact_key, a stray
// compiled_meta.json) is not replaced at all.
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TsptoArtifactError, listTree, readMarker, recordFiles, removeArtifact } from "../../src/artifact/index.js";
import { CompiledProgram, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { cleanup, compileArtifact, seedProgram, tmpDir } from "../codegen/helpers.js";

afterAll(cleanup);

const interp = (name: string, outputDir: string, dumps?: { name: string; text: string }[]) =>
  compileArtifact(seedProgram(name, 16), { platform: "interp", packageVersion: "test", outputDir, ...(dumps ? { dumps } : {}) });

const caught = (f: () => unknown): TsptoArtifactError => {
  try { f(); } catch (e) { return e as TsptoArtifactError; }
  throw new Error("expected an error");
};

/** The files the marker of `dir` lists. */
const markedFiles = (dir: string): string[] => {
  const m = readMarker(dir);
  if (!m || m === "invalid" || !m.files) throw new Error(`${dir}: no marker listing files`);
  return [...m.files].sort();
};

/** Every file under dir with its content (a snapshot to compare before / after). */
const snapshot = (dir: string) => Object.fromEntries(listTree(dir).files.map((f) => [f, readFileSync(join(dir, f), "utf8")]));

describe("the artifact marker", () => {
  it("lists every file tspto wrote, and the files written later (pass dumps of a reuse) are appended", () => {
    const dir = join(tmpDir("marker"), "out");
    interp("marker_a", dir);
    const m = readMarker(dir);
    if (!m || m === "invalid") throw new Error("no marker");
    expect(m.key).toMatch(/^[0-9a-f]{64}$/);
    expect(markedFiles(dir)).toEqual(["compiled_meta.json", "orchestration/README.md", "program.json"]);
    interp("marker_a", dir, [{ name: "Input", text: "// in\n" }]); // reused: the dumps are added
    expect(markedFiles(dir)).toEqual(["compiled_meta.json", "orchestration/README.md", "passes_dump/00_after_Input.ts", "program.json"]);
    recordFiles(dir, ["dfx_outputs/x.json", "../escape", "a b"]); // (names that leave the directory or hold spaces are never recorded)
    expect(markedFiles(dir)).toContain("dfx_outputs/x.json");
    expect(readFileSync(join(dir, ".artifact_key"), "utf8")).not.toContain("escape");
  });
});

describe("replacing an outputDir", () => {
  it("keeps a README, a src/ directory and a note inside build/ the user put in an artifact directory", () => {
    const dir = join(tmpDir("keep"), "out");
    const first = compileArtifact(seedProgram("keep_first", 16), { platform: "cpu", packageVersion: "test", outputDir: dir,
      dumps: [{ name: "Input", text: "// first\n" }] });
    expect(existsSync(join(dir, "build", "libprogram.so"))).toBe(true);
    writeFileSync(join(dir, "README.md"), "my notes\n");
    mkdirSync(join(dir, "src", "deep"), { recursive: true });
    writeFileSync(join(dir, "src", "deep", "kernel.ts"), "// mine\n");
    mkdirSync(join(dir, "empty-dir-of-mine"));
    writeFileSync(join(dir, "build", "notes.txt"), "build notes\n");
    // another program into the same directory (interp: no library, no kernels/)
    const second = interp("keep_second", dir);
    expect(second.meta.name).toBe("keep_second");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("my notes\n");
    expect(readFileSync(join(dir, "src", "deep", "kernel.ts"), "utf8")).toBe("// mine\n");
    expect(statSync(join(dir, "empty-dir-of-mine")).isDirectory()).toBe(true);
    expect(readFileSync(join(dir, "build", "notes.txt"), "utf8")).toBe("build notes\n");
    // what the first build wrote is gone; the user's files are not listed as tspto's
    expect(existsSync(join(dir, "build", "libprogram.so"))).toBe(false);
    expect(existsSync(join(dir, "kernels"))).toBe(false);
    expect(readdirSync(join(dir, "orchestration"))).toEqual(["README.md"]);
    expect(existsSync(join(dir, "passes_dump"))).toBe(false);
    expect(markedFiles(dir)).toEqual(["compiled_meta.json", "orchestration/README.md", "program.json"]);
    // and nothing is left next to it
    expect(readdirSync(join(dir, "..")).filter((n) => n !== "out")).toEqual([]);
    void first;
  });

  it("an empty .artifact_key is not a marker: the directory is refused and nothing in it changes", () => {
    const dir = tmpDir("empty-key");
    writeFileSync(join(dir, ".artifact_key"), "");
    writeFileSync(join(dir, "README.md"), "mine\n");
    mkdirSync(join(dir, "src"));
    writeFileSync(join(dir, "src", "a.ts"), "// a\n");
    const before = snapshot(dir);
    const e = caught(() => interp("empty_key", dir));
    expect(e).toBeInstanceOf(TsptoArtifactError);
    expect(e.code).toBe("E_ARTIFACT");
    expect(e.detail).toBe(`outputDir ${dir} holds a .artifact_key that is not a tspto artifact marker, so tspto cannot tell which of its files (.artifact_key, README.md, src) it wrote; it changes nothing there`);
    expect(snapshot(dir)).toEqual(before);
  });

  it("a compiled_meta.json alone does not make a directory tspto's", () => {
    const dir = tmpDir("meta-only");
    writeFileSync(join(dir, "compiled_meta.json"), "{}");
    writeFileSync(join(dir, "README.md"), "mine\n");
    const before = snapshot(dir);
    const e = caught(() => interp("meta_only", dir));
    expect(e.detail).toBe(`outputDir ${dir} holds files tspto did not write (README.md, compiled_meta.json); tspto never deletes them`);
    expect(snapshot(dir)).toEqual(before);
  });

  it("a user's file at a name the new artifact needs is an error, before anything changes", () => {
    const dir = join(tmpDir("clash"), "out");
    interp("clash_a", dir);
    // program.json rewritten by hand is still tspto's (it is in the marker); a dump the user put there is not
    mkdirSync(join(dir, "passes_dump"));
    writeFileSync(join(dir, "passes_dump", "00_after_Input.ts"), "// the user's\n");
    const before = snapshot(dir);
    const e = caught(() => interp("clash_b", dir, [{ name: "Input", text: "// tspto's\n" }]));
    expect(e.detail).toBe(`outputDir ${dir}: passes_dump/00_after_Input.ts was not written by tspto (not in its .artifact_key) and the new artifact needs that name; tspto never overwrites them, and changed nothing`);
    expect(snapshot(dir)).toEqual(before);
  });

  it("a directory of tspto up to 0.1 (a marker holding only the key): its layout's files are replaced, the rest kept", () => {
    const dir = join(tmpDir("legacy"), "out");
    mkdirSync(join(dir, "kernels"), { recursive: true });
    mkdirSync(join(dir, "build"));
    writeFileSync(join(dir, ".artifact_key"), `${"ab".repeat(32)}\n`);
    for (const f of ["compiled_meta.json", "program.json", "kernels/program.cpp", "build/libprogram.so", "build/stamp.json"]) writeFileSync(join(dir, f), "old\n");
    writeFileSync(join(dir, "kernels", "my_reference.cpp"), "// mine\n");
    writeFileSync(join(dir, "README.md"), "mine\n");
    interp("legacy_new", dir);
    expect(readFileSync(join(dir, "kernels", "my_reference.cpp"), "utf8")).toBe("// mine\n");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("mine\n");
    for (const f of ["kernels/program.cpp", "build/libprogram.so", "build/stamp.json"]) expect(existsSync(join(dir, f)), f).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, "compiled_meta.json"), "utf8")).name).toBe("legacy_new");
  });

  it("an outputDir that is a symbolic link is refused (tspto does not replace a link)", async () => {
    const { symlinkSync } = await import("node:fs");
    const base = tmpDir("link");
    mkdirSync(join(base, "real"));
    symlinkSync(join(base, "real"), join(base, "link"));
    const e = caught(() => interp("link_out", join(base, "link")));
    expect(e.detail).toBe(`outputDir ${join(base, "link")} is a symbolic link; tspto does not replace a link`);
  });

  it("DFX recordings of a launch are recorded as tspto's and go with the artifact; a user's file in dfx_outputs/ stays", () => {
    const dir = join(tmpDir("dfx"), "out");
    const c = compileArtifact(seedProgram("dfx_rec", 16), { platform: "cpu", packageVersion: "test", outputDir: dir });
    const w = new ChipWorker(new RunConfig({ platform: "cpu", enableChipSwimlane: 1, enableDepGen: true }));
    try {
      w.run(CompiledProgram.fromDir(c.outputDir), randn([16, 16]), randn([16, 16]), zeros([16, 16]));
    } finally { w.close(); }
    expect(markedFiles(dir)).toEqual(expect.arrayContaining(["dfx_outputs/swimlane.json", "dfx_outputs/deps.json"]));
    writeFileSync(join(dir, "dfx_outputs", "my-analysis.md"), "mine\n");
    interp("dfx_next", dir);
    expect(existsSync(join(dir, "dfx_outputs", "swimlane.json"))).toBe(false);
    expect(readFileSync(join(dir, "dfx_outputs", "my-analysis.md"), "utf8")).toBe("mine\n");
  });

  it("removeArtifact (a corrupt cache entry) deletes what the marker lists, nothing else", () => {
    const dir = join(tmpDir("remove"), "entry");
    interp("remove_me", dir);
    writeFileSync(join(dir, "stray.txt"), "not tspto's\n");
    expect(removeArtifact(dir)).toEqual(["stray.txt"]);
    expect(readdirSync(dir).sort()).toEqual([".artifact_key", "stray.txt"]);
    const none = tmpDir("remove-none");
    writeFileSync(join(none, "a"), "x");
    expect(removeArtifact(none)).toEqual(["(not a tspto artifact: nothing deleted)"]);
    expect(readdirSync(none)).toEqual(["a"]);
  });
});

describe("modes of what tspto writes", () => {
  it("under umask 002 the artifact is not group-writable, and loads", () => {
    const old = process.umask(0o002);
    let dir: string;
    try {
      dir = join(tmpDir("umask"), "out");
      compileArtifact(seedProgram("umask_002", 16), { platform: "cpu", packageVersion: "test", outputDir: dir });
    } finally {
      process.umask(old);
    }
    for (const r of ["", "build", "build/libprogram.so", "kernels", "compiled_meta.json"]) {
      expect(statSync(join(dir, r)).mode & 0o022, r || ".").toBe(0);
    }
    const a = randn([16, 16], { seed: 1 }), b = randn([16, 16], { seed: 2 }), out = zeros([16, 16]);
    CompiledProgram.fromDir(dir).run(a, b, out);
    expect(Array.from(out.data as Float32Array)).toEqual(Array.from(a.add(b).data as Float32Array));
  });
});
