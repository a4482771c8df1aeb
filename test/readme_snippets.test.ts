// Every ```ts block of README.md runs. The blocks read as one program, the way a reader
// follows them: they are concatenated in order, their `import ... from "tspto"` lines merged
// at the top, and each block after the first in its own `{ }` scope (so a later block may
// reuse a name, and sees the first block's addKernel, A, B, out).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

/** One module from the blocks: merged imports, then the bodies. */
export function programOf(codeBlocks: readonly string[]): string {
  const imports = new Map<string, Set<string>>();
  const bodies = codeBlocks.map((code, i) => {
    const body = code.split("\n").filter((line) => {
      const m = /^import \{([^}]*)\} from "([^"]+)";\s*$/.exec(line);
      if (!m) return true;
      const names = imports.get(m[2]) ?? new Set<string>();
      for (const n of m[1].split(",")) if (n.trim()) names.add(n.trim());
      imports.set(m[2], names);
      return false;
    }).join("\n");
    return i === 0 ? body : `{\n${body}\n}`;
  });
  const head = [...imports].map(([spec, names]) => `import { ${[...names].join(", ")} } from "${spec}";`);
  return [...head, ...bodies].join("\n");
}

describe("README", () => {
  it("has ts code blocks, each importing only from the package", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    for (const b of blocks) {
      for (const m of b.matchAll(/^import .* from "([^"]+)";/gm)) expect(m[1]).toMatch(/^tspto(\/language)?$/);
    }
  });

  it("every ts code block runs (as the reader follows them: one program)", async () => {
    const dir = join(ROOT, ".tspto");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `readme_snippets_${process.pid}.ts`);
    writeFileSync(file, programOf(blocks));
    const logs: unknown[][] = [];
    const log = console.log;
    console.log = (...xs: unknown[]) => { logs.push(xs); };
    try {
      await import(pathToFileURL(file).href);
    } finally {
      console.log = log;
    }
    // the "Seeing inside" block wrote its DFX outputs; "Explicit dispatch" printed the stats
    expect(logs.some((l) => typeof l[0] === "string" && l[0].endsWith("dfx_outputs"))).toBe(true);
    expect(logs.some((l) => typeof l[0] === "object" && l[0] !== null && "launches" in l[0])).toBe(true);
  });

  it("a block that fails makes the program fail (the check can fail)", async () => {
    const dir = join(ROOT, ".tspto");
    const file = join(dir, `readme_snippets_bad_${process.pid}.ts`);
    writeFileSync(file, programOf([...blocks.slice(0, 1), "console.log(compiledNotDefined);"]));
    await expect(import(pathToFileURL(file).href)).rejects.toThrow(/compiledNotDefined is not defined/);
  });
});
