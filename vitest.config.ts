import { defineConfig } from "vitest/config";

import { fileURLToPath } from "node:url";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests and examples import the package by name, as users do.
    alias: [
      { find: /^tspto\/language$/, replacement: src("language.ts") },
      { find: /^tspto$/, replacement: src("index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup/checks.ts"],
    // Kernels compile C++ (hundreds of ms each) and the machine has 2 cores.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
