import { defineConfig } from "vitest/config";

import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

// The webgpu tests on a machine without a GPU driver run on SwiftShader (CPU Vulkan), which
// Debian's chromium-headless-shell ships (.ci/run installs it): Dawn needs that folder's Vulkan
// loader, and LD_LIBRARY_PATH is read when a process starts, so it is set here for the test
// processes vitest forks. A machine with a Vulkan driver of its own (or VK_ICD_FILENAMES set)
// keeps it. Nothing else loads from /usr/lib/chromium.
const SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json";
const systemVulkan = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"].some((d) => existsSync(d) && readdirSync(d).some((f) => f.endsWith(".json")));
if (process.platform === "linux" && !process.env.VK_ICD_FILENAMES && !systemVulkan && existsSync(SWIFTSHADER_ICD)) {
  process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  process.env.LD_LIBRARY_PATH = ["/usr/lib/chromium", process.env.LD_LIBRARY_PATH].filter(Boolean).join(":");
}

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests and examples import the package by name, as users do.
    alias: [
      { find: /^tspto\/language$/, replacement: src("language.ts") },
      { find: /^tspto\/capture$/, replacement: src("capture.ts") },
      { find: /^tspto\/(vite|rollup|esbuild)$/, replacement: src("plugin/$1.ts") },
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
