// docs/errors.md lists every error code: each "E_..." code thrown in src/ and each native code
// of native/src/errors.h (which src/targets/native_errors.ts maps).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { NATIVE_ERROR_CODES } from "../../src/targets/native_errors.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const doc = readFileSync(join(root, "docs/errors.md"), "utf8");

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : p.endsWith(".ts") ? [p] : [];
  });
}

describe("docs/errors.md", () => {
  it("documents every code thrown in src/", () => {
    const codes = new Set<string>();
    for (const f of filesUnder(join(root, "src"))) {
      for (const m of readFileSync(f, "utf8").matchAll(/"(E_[A-Z0-9_]+)"/g)) codes.add(m[1]);
    }
    expect(codes.size).toBeGreaterThan(40);
    const missing = [...codes].filter((c) => !doc.includes(`\`${c}\``));
    expect(missing).toEqual([]);
  });

  it("documents every native code, and native_errors.ts maps exactly those", () => {
    const header = readFileSync(join(root, "native/src/errors.h"), "utf8");
    const native = [...header.matchAll(/"(TSPTO_[A-Z_]+)"/g)].map((m) => m[1]).sort();
    expect(native.length).toBeGreaterThanOrEqual(7);
    expect(Object.keys(NATIVE_ERROR_CODES).sort()).toEqual(native);
    for (const c of native) expect(doc).toContain(`\`${c}\``);
    for (const e of Object.values(NATIVE_ERROR_CODES)) expect(doc).toContain(`\`${(e as { code: string }).code}\``);
  });
});
