// The compiler fingerprint (src/version.ts) covers every file of the code directory (src/ when
// running from source): a change to a code generator file, not only to src/ir/package_root.ts,
// gives new cache and artifact keys (a stale library is never reused after an edit).
import { spawnSync } from "node:child_process";
import { statSync, utimesSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const fingerprint = (): string => {
  const r = spawnSync(process.execPath, ["--import", "tsx", "-e", "import('./src/version.ts').then((m) => console.log(m.COMPILER_FINGERPRINT))"], { cwd: ROOT, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim();
};

describe("COMPILER_FINGERPRINT", () => {
  it("changes when a code generator file changes (its mtime)", () => {
    const file = fileURLToPath(new URL("../../src/codegen/cpp/emitters/reduce.ts", import.meta.url));
    const st = statSync(file);
    const before = fingerprint();
    expect(before).toMatch(/^[0-9a-f]{16}$/);
    try {
      utimesSync(file, st.atime, new Date(st.mtimeMs + 1000));
      expect(fingerprint()).not.toBe(before);
    } finally {
      utimesSync(file, st.atimeMs / 1000, st.mtimeMs / 1000);
    }
  }, 60_000);
});
