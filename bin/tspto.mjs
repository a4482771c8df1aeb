#!/usr/bin/env node
// The `tspto` command. The installed package runs its compiled CLI (dist/tools/cli.js); a
// checkout of the repository runs the TypeScript sources through tsx (a development
// dependency), so that the command always matches the sources there.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
let main;
if (existsSync(here("../src/tools/cli.ts")) && existsSync(here("../node_modules/tsx"))) {
  const { register } = await import("tsx/esm/api");
  register({ tsconfig: existsSync(here("../tsconfig.json")) ? here("../tsconfig.json") : false });
  ({ main } = await import(new URL("../src/tools/cli.ts", import.meta.url).href));
} else {
  ({ main } = await import(new URL("../dist/tools/cli.js", import.meta.url).href));
}
process.exitCode = await main(process.argv.slice(2));
