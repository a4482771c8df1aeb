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

describe("generated from the registry", () => {
  it("src/dsl/ops.generated.ts is current (else run: npx tsx src/tools/gen_ops.ts)", async () => {
    const { generateLanguageOps, LANGUAGE_OPS_FILE } = await import("../../src/tools/gen_ops.js");
    expect(readFileSync(LANGUAGE_OPS_FILE, "utf8"), "stale src/dsl/ops.generated.ts: run npx tsx src/tools/gen_ops.ts").toBe(generateLanguageOps());
  });
  it("the README op table is current (else run: npx tsx src/tools/gen_ops.ts)", async () => {
    const { readmeWithTable } = await import("../../src/tools/gen_ops.js");
    expect(readme, "stale README op table: run npx tsx src/tools/gen_ops.ts").toBe(readmeWithTable(readme));
  });
  it("each pl spelling has one declaration and one README row; a changed decl changes the generated file", async () => {
    const { generateLanguageOps, generateOpTable, declaringOp } = await import("../../src/tools/gen_ops.js");
    const { opsForPl } = await import("../../src/ir/index.js");
    for (const name of plOpNames()) {
      expect(opsForPl(name).filter((o) => o.decl).length, `pl.${name} declared once`).toBe(1);
      expect(declaringOp(name)).toBeDefined();
    }
    const before = generateLanguageOps();
    const op = declaringOp("add")! as { decl: readonly string[] };
    const saved = op.decl;
    try {
      (op as { decl: readonly string[] }).decl = ["<T extends TileOrTensor>(a: T, b: T): T"];
      expect(generateLanguageOps()).not.toBe(before);
    } finally {
      (op as { decl: readonly string[] }).decl = saved;
    }
    expect(generateOpTable()).toContain("| `transpose(x, axis1, axis2)` | tile, tensor |");
  });
});
