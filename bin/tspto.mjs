#!/usr/bin/env node
// The `tspto` command. The package ships TypeScript sources, so this loads them through tsx,
// resolved from this package's own dependencies (not from the caller's working directory).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

const tsconfig = fileURLToPath(new URL("../tsconfig.json", import.meta.url));
register({ tsconfig: existsSync(tsconfig) ? tsconfig : false });
const { main } = await import(new URL("../src/tools/cli.ts", import.meta.url).href);
process.exitCode = await main(process.argv.slice(2));
