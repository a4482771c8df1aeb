// The compiler fingerprint is part of every artifact and cache key: changing any file of the
// compiler's code (not only the package version) must change it, or a disk-cache hit would
// reuse an artifact built by the old code.
import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, statSync, symlinkSync, utimesSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const fingerprint = (): string => execFileSync(process.execPath, ["--import", "tsx", "-e",
  `import("./src/version.ts").then((m) => process.stdout.write(m.COMPILER_FINGERPRINT))`], { cwd: root, encoding: "utf8" });

describe("COMPILER_FINGERPRINT", () => {
  it("changes when a file deep in the compiler changes (a pass, not only the module that computes it)", () => {
    const file = join(root, "src", "passes", "tensor_to_tile.ts");
    const st = statSync(file);
    const t0 = new Date(Math.floor(st.mtimeMs)); // whole milliseconds, so that setting it again is exact
    try {
      utimesSync(file, st.atime, t0);
      const before = fingerprint();
      expect(before).toMatch(/^[0-9a-f]{16}$/);
      utimesSync(file, st.atime, new Date(t0.getTime() + 5000));
      expect(fingerprint()).not.toBe(before);
      utimesSync(file, st.atime, t0);
      expect(fingerprint()).toBe(before);
    } finally {
      utimesSync(file, st.atime, st.mtime);
    }
  }, 60_000);

  it("a dangling link (or a file that vanished during the walk) under src/ does not make the import throw ENOENT", () => {
    const probe = join(root, "src", `.fingerprint-probe-${process.pid}`);
    mkdirSync(probe, { recursive: true });
    try {
      symlinkSync(join(probe, "no-such-target"), join(probe, "dangling"));
      const fp = fingerprint();
      expect(fp).toMatch(/^[0-9a-f]{16}$/);
      rmSync(join(probe, "dangling"));
      expect(fingerprint()).not.toBe(fp); // the link was part of it
    } finally {
      rmSync(probe, { recursive: true, force: true });
    }
  }, 60_000);
});
