// The package version (part of every cache key and artifact).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(fileURLToPath(new URL("../package.json", import.meta.url)), "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
})();
