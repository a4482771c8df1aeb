// The one report of a compiler that failed on generated code (src/targets/compiler_failure.ts),
// shared by the cpu and cuda builds: why the process failed, its output cut to 60 lines.
import { describe, expect, it } from "vitest";
import { MAX_LINES, compilerFailure, processFailure } from "../../src/targets/compiler_failure.js";

describe("compiler failures", () => {
  it("say why the process failed: not run (errno or message), killed, or its exit code", () => {
    expect(processFailure("g++", { error: Object.assign(new Error("spawn g++ ENOENT"), { code: "ENOENT" }) })).toBe("could not run 'g++' (ENOENT)");
    expect(processFailure("nvcc", { error: "spawn nvcc EACCES" })).toBe("could not run 'nvcc' (spawn nvcc EACCES)");
    expect(processFailure("g++", { signal: "SIGKILL", status: null })).toBe("'g++' was killed by SIGKILL");
    expect(processFailure("g++", { signal: null, status: 1 })).toBe("'g++' exited with code 1");
  });

  it("show the compiler's first 60 lines indented, then how many more, the source and the command", () => {
    const out = Array.from({ length: MAX_LINES + 5 }, (_, i) => `program.cpp:${i + 1}:1: error: e${i}`).join("\n");
    const m = compilerFailure("C++ compilation of program 'p'", "'g++' exited with code 1", `${out}\n`, "/x/kernels/program.cpp", "g++ -O3 program.cpp");
    const lines = m.split("\n");
    expect(lines[0]).toBe("C++ compilation of program 'p' failed: 'g++' exited with code 1");
    expect(lines[1]).toBe("    program.cpp:1:1: error: e0");
    expect(lines[MAX_LINES]).toBe(`    program.cpp:${MAX_LINES}:1: error: e${MAX_LINES - 1}`);
    expect(lines[MAX_LINES + 1]).toBe("    ... (5 more lines)");
    expect(lines.slice(-2)).toEqual(["  generated source: /x/kernels/program.cpp", "  command: g++ -O3 program.cpp"]);
    expect(compilerFailure("w", "y", "one line", "s", "c").split("\n")).toEqual(["w failed: y", "    one line", "  generated source: s", "  command: c"]);
  });
});
