// The README lists every pl op of the registry and every example file.
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { plOpNames } from "../../src/ir/index.js";
import * as pl from "../../src/language.js";

const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
const opsSection = readme.slice(readme.indexOf("## Ops"), readme.indexOf("## Examples"));

describe("README", () => {
  it("lists every registered op in its op table, and pl declares each", () => {
    const table = opsSection.split("\n").filter((l) => l.startsWith("| `")).map((l) => l.split("|")[1]);
    expect(table.length).toBeGreaterThan(10);
    for (const name of plOpNames()) {
      expect(table.some((cell) => new RegExp(`\\b${name}\\b`).test(cell)), `README op table lists ${name}`).toBe(true);
      expect(typeof (pl as Record<string, unknown>)[name], `pl.${name} is declared in language.ts`).toBe("function");
    }
  });
  it("lists every example", () => {
    const dir = fileURLToPath(new URL("../../examples/", import.meta.url));
    for (const f of readdirSync(dir).filter((x) => x.endsWith(".ts") && !x.startsWith("_"))) {
      expect(readme, `README lists examples/${f}`).toContain(`\`examples/${f}\``);
    }
  });
});
