// The seed test must stay API.md §1 verbatim: compare its module body with the contract text
// (../shared/API.md beside the repository, as on the developers' machines and in CI).
import { describe, it, expect } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const apiMd = fileURLToPath(new URL("../../../shared/API.md", import.meta.url));
const seedTest = fileURLToPath(new URL("./seed_cpu.test.ts", import.meta.url));
const quickstart = fileURLToPath(new URL("../../examples/quickstart.ts", import.meta.url));

const hasApi = existsSync(apiMd);
const section = () => /## 1\. The seed example[\s\S]*?```ts\n([\s\S]*?)```/.exec(readFileSync(apiMd, "utf8"));

describe.runIf(hasApi)("API.md §1 text", () => {
  it("is found in API.md", () => expect(section()).not.toBeNull());
  it("is contained verbatim in the seed test and the quickstart example", () => {
    const code = section()![1];
    expect(readFileSync(seedTest, "utf8")).toContain(code);
    expect(readFileSync(quickstart, "utf8")).toContain(code);
  });
});
