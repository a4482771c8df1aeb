// What the build plugin ships of a user's modules (src/plugin/redact.ts, src/capture.ts): only
// the text the kernels need — never another file's text (a server-only secret, an image), the
// module's other code and comments, or an absolute path — and captured texts are found by
// content, so two versions of one path (a hot reload, two bundles) never mix.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TsptoSyntaxError, randn, zeros, type HostTensor } from "tspto";
import tsptoEsbuild from "tspto/esbuild";
import { keptText } from "../../src/plugin/redact.js";
import { transformKernels } from "../../src/plugin/core.js";

const SECRET = "sk_live_9f3Kq2SECRETvalue";
const PNG = "\x89PNG\r\n\x1a\nIHDR_logo_bytes";

/** An app whose kernel module also holds server code, imports a secret and an image. */
function app(dir: string, factor: number): string {
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "src", "secrets.ts"), `// server only: never in a page\nexport const STRIPE_SECRET_KEY = "${SECRET}";\nexport const N = 64;\n`);
  writeFileSync(join(dir, "src", "logo.png"), PNG, "latin1");
  writeFileSync(join(dir, "src", "kern.ts"), [
    "// internal notes: the admin password is hunter2 </script>",
    'import { pl } from "tspto";',
    'import { STRIPE_SECRET_KEY, N } from "./secrets";',
    'import logo from "./logo.png";',
    "",
    'export function charge(): Promise<unknown> { return fetch("https://api.example/charge", { headers: { k: STRIPE_SECRET_KEY } }); }',
    "export const LOGO = logo;",
    "",
    "export const scale = pl.jit(function scale(x: pl.Tensor, out: pl.Out<pl.Tensor>) {",
    `  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, ${factor} * N / 64)); }); // ×${factor}`,
    "});",
    "",
  ].join("\n"));
  writeFileSync(join(dir, "src", "main.ts"), 'import { scale } from "./kern";\nexport { scale };\n');
  return join(dir, "src", "main.ts");
}

async function bundle(entry: string, out: string, plugin: boolean): Promise<string> {
  const { build } = await import("esbuild");
  await build({
    entryPoints: [entry], bundle: true, format: "esm", platform: "node", outfile: out, minify: true, external: ["tspto", "tspto/*"],
    plugins: plugin ? [tsptoEsbuild()] : [], loader: { ".png": "binary" }, target: "es2022", logLevel: "error", absWorkingDir: join(entry, "..", ".."),
  });
  return readFileSync(out, "utf8");
}

const scaled = (x: HostTensor, k: number) => Array.from(x.data as Float32Array, (v) => Math.fround(v * k));

describe("what the build plugin ships", () => {
  it("a bundle holds the kernel's text and the constants it folds, never a secret, another file, a comment or an absolute path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-capture-"));
    const entry = app(dir, 2);
    const cwd = process.cwd();
    process.chdir(dir); // the build root
    let withPlugin: string, without: string;
    try {
      without = await bundle(entry, join(dir, "plain.mjs"), false);
      withPlugin = await bundle(entry, join(dir, "plugin.mjs"), true);
    } finally {
      process.chdir(cwd);
    }
    // the app itself ships none of these (tree-shaking drops charge() and LOGO) ...
    for (const leak of [SECRET, "STRIPE_SECRET_KEY", "hunter2", "IHDR_logo_bytes", dir, "</script>"]) expect(without, leak).not.toContain(leak);
    // ... and neither does the plugin
    for (const leak of [SECRET, "STRIPE_SECRET_KEY", "hunter2", "IHDR_logo_bytes", "internal notes", "charge", dir, tmpdir(), "</script>"]) {
      expect(withPlugin, leak).not.toContain(leak);
    }
    expect(withPlugin).toContain("src/kern.ts\\0");
    expect(withPlugin).toContain("export const N = 64;");
    expect(withPlugin.length).toBeLessThan(without.length + 3000);
    // and the kernel still builds from what shipped
    const m = (await import(/* @vite-ignore */ join(dir, "plugin.mjs"))) as { scale: (x: HostTensor, o: HostTensor) => void };
    const x = randn([4, 8], { seed: 3 }), o = zeros([4, 8]);
    m.scale(x, o);
    expect(Array.from(o.data as Float32Array)).toEqual(scaled(x, 2));
  }, 120_000);

  it("two versions of one module path (a hot reload, two bundles) each keep their own kernel", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-capture-"));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const entry = app(dir, 2);
      await bundle(entry, join(dir, "v1.mjs"), true);
      app(dir, 3); // the kernel edited from ×2 to ×3 at the same path
      await bundle(entry, join(dir, "v2.mjs"), true);
    } finally {
      process.chdir(cwd);
    }
    type M = { scale: (x: HostTensor, o: HostTensor) => void };
    const v1 = (await import(/* @vite-ignore */ join(dir, "v1.mjs"))) as M;
    const v2 = (await import(/* @vite-ignore */ join(dir, "v2.mjs"))) as M;
    const x = randn([4, 8], { seed: 4 });
    const o2 = zeros([4, 8]), o1 = zeros([4, 8]);
    v2.scale(x, o2); // the newer version first: the older must not read its text
    v1.scale(x, o1);
    expect(Array.from(o1.data as Float32Array)).toEqual(scaled(x, 2));
    expect(Array.from(o2.data as Float32Array)).toEqual(scaled(x, 3));
  }, 120_000);

  it("a kernel calling a kernel of another module builds from what shipped, precompiled or parsed in place", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-capture-"));
    mkdirSync(join(dir, "src"));
    writeFileSync(join(dir, "src", "helpers.ts"), 'import { pl } from "tspto";\n// notes that stay home\nexport const SHIFT = 3;\n' +
      "export const addShift = pl.jit.inline(function addShift(t: pl.Tile) {\n  return pl.add(t, SHIFT);\n});\nexport const unrelated = () => \"unrelated_helper_value\";\n");
    const body = "  pl.at(pl.Level.CORE_GROUP, () => {\n    const t = pl.load(x, [0, 0], [8, 8]);\n    pl.store(addShift(t), [0, 0], out);\n  });\n});\n";
    writeFileSync(join(dir, "src", "kern.ts"), 'import { pl } from "tspto";\nimport { addShift } from "./helpers";\n' +
      `export const fixed = pl.jit(function fixed(x: pl.Tensor<[8, 8], pl.FP32>, out: pl.Out<pl.Tensor<[8, 8], pl.FP32>>) {\n${body}` +
      `export const free = pl.jit(function free(x: pl.Tensor, out: pl.Out<pl.Tensor>) {\n${body}`);
    const cwd = process.cwd();
    process.chdir(dir);
    let text: string;
    try { text = await bundle(join(dir, "src", "kern.ts"), join(dir, "xm.mjs"), true); } finally { process.chdir(cwd); }
    expect(text).not.toContain("notes that stay home");
    expect(text).not.toContain("unrelated_helper_value");
    const m = (await import(/* @vite-ignore */ join(dir, "xm.mjs"))) as Record<"fixed" | "free", (x: HostTensor, o: HostTensor) => void>;
    const x = randn([8, 8], { seed: 5 });
    for (const k of ["fixed", "free"] as const) {
      const o = zeros([8, 8]);
      m[k](x, o);
      expect(Array.from(o.data as Float32Array), k).toEqual(Array.from(x.data as Float32Array, (v) => Math.fround(v + 3)));
    }
  }, 120_000);

  it("keeps only the needed names of an import and the lines and columns of every kept token", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-capture-"));
    const entry = app(dir, 2);
    const kern = join(entry, "..", "kern.ts");
    const code = readFileSync(kern, "utf8");
    const r = transformKernels(code, kern, { root: dir })!;
    const texts = [...r.code.matchAll(/__tspto_source\("([^"]+)", ("(?:[^"\\]|\\.)*")/g)].map((m) => [m[1], JSON.parse(m[2]) as string]);
    expect(texts.map(([k]) => k.replace(/\\u0000[0-9a-f]{16}$/, ""))).toEqual(["src/kern.ts", "src/secrets.ts"]);
    const [kernText, secretsText] = texts.map(([, t]) => t);
    expect(kernText).toMatch(/^\nimport \{ pl \} from "tspto";\nimport \{ +N \} from "\.\/secrets";\n/);
    expect(secretsText).toBe("\n\nexport const N = 64;");
    // every kept line sits where it was
    const lines = code.split("\n");
    kernText.split("\n").forEach((l, i) => { for (let c = 0; c < l.length; c++) if (l[c] !== " ") expect(lines[i][c], `${i + 1}:${c + 1}`).toBe(l[c]); });
    expect(keptText("ab\ncd\nef", [[7, 8]])).toBe("\n\n f");
  });
});

describe("the build plugin at scale", () => {
  it("precompiles a module of many kernels walking its text once, not once per kernel", async () => {
    const { sourceWalks } = await import("../../src/dsl/source.js");
    const dir = mkdtempSync(join(tmpdir(), "tspto-many-"));
    const lines = ['import { pl } from "tspto";'];
    for (let i = 0; i < 120; i++) {
      lines.push(`export const k${i} = pl.jit(function k${i}(x: pl.Tensor<[8, 8], pl.FP32>, out: pl.Out<pl.Tensor<[8, 8], pl.FP32>>) {`,
        `  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(x, ${i})); });`, "});");
    }
    lines.push("export class C {", ...Array.from({ length: 30 }, (_, i) => `  @pl.jit static m${i}(x: pl.Tensor<[8, 8], pl.FP32>, out: pl.Out<pl.Tensor<[8, 8], pl.FP32>>) { pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, ${i})); }); }`), "}");
    const f = join(dir, "many.ts");
    const code = lines.join("\n");
    writeFileSync(f, code);
    const before = sourceWalks();
    const r = transformKernels(code, f, { root: dir })!;
    expect(r.kernels).toBe(150);
    expect(r.precompiled).toBe(150);
    expect(sourceWalks() - before).toBeLessThanOrEqual(4);
  });

  it("a module nested deeper than the parser holds is one E_NESTING error at its deepest point, not a crash", () => {
    const code = `import { pl } from "tspto";\nexport const v = ${"(".repeat(20000)}1${")".repeat(20000)};\n` +
      "export const k = pl.jit(function k(x: pl.Tensor, out: pl.Out<pl.Tensor>) {\n  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(x, 1)); });\n});\n";
    let err: unknown;
    try { transformKernels(code, "/app/src/deep.ts", { root: "/app" }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoSyntaxError);
    const e = err as TsptoSyntaxError;
    expect(e.code).toBe("E_NESTING");
    expect(e.message).toContain("nests brackets 20000 levels deep");
    expect(e.span).toMatchObject({ file: "/app/src/deep.ts", line: 2, col: 20017 });
    expect(e.hint).toMatch(/module of its own/);
  });
});
