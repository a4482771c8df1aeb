// node:url in tspto's browser build: file: URLs of the in-memory volume's paths.
export function fileURLToPath(u: string | URL): string {
  const s = typeof u === "string" ? new URL(u) : u;
  if (s.protocol !== "file:") throw new TypeError(`The URL must be of scheme file: ${String(u)}`);
  return decodeURIComponent(s.pathname);
}
export function pathToFileURL(p: string): URL { return new URL(`file://${encodeURI(p)}`); }
export default { fileURLToPath, pathToFileURL };
