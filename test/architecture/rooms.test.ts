// Rooms import one way (ARCHITECTURE.md): dsl/passes/artifact -> codegen -> targets -> runtime
// -> jit/index, with ir below all; no import cycles between files.
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { checkRooms, readTree } from "./rooms.js";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

describe("rooms import one way", () => {
  it("src/ has no backward import, no file outside the rooms and no import cycle", () => {
    const v = checkRooms(readTree(SRC));
    expect(v.map((x) => x.message)).toEqual([]);
  });

  it("the runtime core imports no dsl, passes or codegen", () => {
    const tree = readTree(SRC);
    const bad = checkRooms(new Map([...tree].map(([f, t]) => [f, t]))).filter((x) => /\(room runtime\) imports .*\(room (dsl|passes|codegen)\)/.test(x.message));
    expect(bad).toEqual([]);
  });

  it("fails on a planted backward import", () => {
    const tree = new Map(readTree(SRC));
    tree.set("ir/planted.ts", `import { ChipWorker } from "../runtime/worker.js";\nexport const w = ChipWorker;\n`);
    tree.set("runtime/planted.ts", `import type { Pass } from "../passes/index.js";\nexport type P = Pass;\n`);
    const msgs = checkRooms(tree).map((x) => x.message);
    expect(msgs).toContain("src/ir/planted.ts (room ir) imports src/runtime/worker.ts (room runtime); ir may import only nothing");
    expect(msgs).toContain("src/runtime/planted.ts (room runtime) imports src/passes/index.ts (room passes); runtime may import only ir, artifact, targets");
  });

  it("fails on a planted cycle and on a file outside the rooms", () => {
    const tree = new Map(readTree(SRC));
    tree.set("passes/a_planted.ts", `export { b } from "./b_planted.js";\nexport const a = 1;\n`);
    tree.set("passes/b_planted.ts", `import { a } from "./a_planted.js";\nexport const b = a;\n`);
    tree.set("misc/x.ts", `export const x = 1;\n`);
    const msgs = checkRooms(tree).map((x) => x.message);
    expect(msgs).toContain("import cycle: src/passes/a_planted.ts -> src/passes/b_planted.ts -> src/passes/a_planted.ts");
    expect(msgs).toContain("src/misc/x.ts: room 'misc' is not in the room table (test/architecture/rooms.ts)");
  });
});
