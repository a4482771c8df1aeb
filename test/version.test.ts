// The compiler fingerprint (part of every artifact and cache key) covers the compiler's code:
// under the tests that is every file of src/, so that an edit of any pass or op never reuses an
// artifact the old code built.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilerCodeDir } from "../src/version.js";
import { packageRoot } from "../src/ir/package_root.js";

describe("compiler fingerprint", () => {
  it("walks the whole code directory (src/), not the directory of the file that finds it", () => {
    expect(compilerCodeDir()).toBe(join(packageRoot(), "src"));
  });
});
