// node:path in tspto's browser build (scripts/build-browser.mjs maps the built-in here): POSIX
// paths over the in-memory volume of ./fs.ts, whose working directory is "/".
export const sep = "/";
export const delimiter = ":";

function normalizeParts(parts: string[], absolute: boolean): string {
  const out: string[] = [];
  for (const p of parts) {
    if (!p || p === ".") continue;
    if (p === "..") { if (out.length && out[out.length - 1] !== "..") out.pop(); else if (!absolute) out.push(".."); continue; }
    out.push(p);
  }
  const s = out.join("/");
  return absolute ? `/${s}` : s || ".";
}

export function isAbsolute(p: string): boolean { return p.startsWith("/"); }
export function normalize(p: string): string { return normalizeParts(p.split("/"), isAbsolute(p)); }
export function join(...ps: string[]): string { const s = ps.filter((p) => p !== "").join("/"); return s ? normalize(s) : "."; }
export function resolve(...ps: string[]): string {
  let r = "";
  for (let i = ps.length - 1; i >= 0 && !isAbsolute(r); i--) if (ps[i]) r = r ? `${ps[i]}/${r}` : ps[i];
  return normalizeParts(r.split("/"), true);
}
export function dirname(p: string): string {
  const n = normalize(p);
  const i = n.lastIndexOf("/");
  return i < 0 ? "." : i === 0 ? "/" : n.slice(0, i);
}
export function basename(p: string, ext?: string): string {
  const b = normalize(p).split("/").pop() ?? "";
  return ext && b.endsWith(ext) ? b.slice(0, -ext.length) : b;
}
export function extname(p: string): string { const b = basename(p); const i = b.lastIndexOf("."); return i > 0 ? b.slice(i) : ""; }
export function relative(from: string, to: string): string {
  const a = resolve(from).split("/").filter(Boolean), b = resolve(to).split("/").filter(Boolean);
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return [...a.slice(i).map(() => ".."), ...b.slice(i)].join("/");
}
export const posix = { sep, delimiter, isAbsolute, normalize, join, resolve, dirname, basename, extname, relative };
export default posix;
