// The user's private directories (the disk cache, default artifacts, the precompiled header,
// the compiler-version memo): created 0700; one another user made, or can write, or a link
// planted in its place, is refused with E_UNSAFE_PATH naming it and saying what to do.
import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TsptoArtifactError, defaultArtifactRoot, privateDir } from "../../src/artifact/index.js";
import { cacheDir } from "../../src/cache.js";
import { pl, randn, zeros } from "tspto";
import { cleanup, tmpDir } from "../codegen/helpers.js";

afterAll(cleanup);
const saved = { cache: process.env.TSPTO_CACHE_DIR, tmp: process.env.TMPDIR };
afterEach(() => {
  if (saved.cache === undefined) delete process.env.TSPTO_CACHE_DIR; else process.env.TSPTO_CACHE_DIR = saved.cache;
  if (saved.tmp === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = saved.tmp;
});

const refused = (f: () => unknown): TsptoArtifactError => {
  try { f(); } catch (e) { expect(e).toBeInstanceOf(TsptoArtifactError); return e as TsptoArtifactError; }
  throw new Error("expected a refusal");
};
const isRoot = process.getuid?.() === 0;
const uid = process.getuid?.() ?? "user";

describe("private directories", () => {
  it("are created 0700 under the cache root", () => {
    const root = join(tmpDir("priv"), "cache");
    process.env.TSPTO_CACHE_DIR = root;
    const d = privateDir("pch", "k");
    expect(d).toBe(join(root, "pch", "k"));
    for (const p of [root, join(root, "pch"), d]) expect(statSync(p).mode & 0o777).toBe(0o700);
    expect(defaultArtifactRoot()).toBe(join(root, "artifacts"));
  });

  it("a cache root writable by others is refused, by the disk cache and for artifacts (any user)", () => {
    const root = join(tmpDir("open"), "cache");
    mkdirSync(root);
    chmodSync(root, 0o777);
    process.env.TSPTO_CACHE_DIR = root;
    const e = refused(() => cacheDir());
    expect(e.code).toBe("E_UNSAFE_PATH");
    expect(e.detail).toBe(`refused: the disk cache ${root}: ${root} can be written by other users (mode 777); tspto never loads, includes or compiles what another user can write`);
    expect(e.hint).toBe("remove it (it is not tspto's) or make it yours and private (chmod 700), or set TSPTO_CACHE_DIR to a directory of your own (TSPTO_CACHE_DIR=off disables the cache)");
    expect(refused(() => defaultArtifactRoot()).code).toBe("E_UNSAFE_PATH");
    // a jit call says so too (it does not silently run without the cache)
    const k = pl.jit(function privK(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.add(pl.load(a, [0, 0], [8, 8]), 1), [0, 0], out); });
      return out;
    });
    let err: unknown;
    try { k(randn([8, 8]), zeros([8, 8])); } catch (x) { err = x; }
    expect((err as TsptoArtifactError).code).toBe("E_UNSAFE_PATH");
  });

  it("a link planted at the temp directory's place (cache off) is refused", () => {
    const base = tmpDir("link");
    process.env.TSPTO_CACHE_DIR = "off";
    process.env.TMPDIR = join(base, "tmp");
    mkdirSync(join(base, "tmp"));
    mkdirSync(join(base, "elsewhere"), { mode: 0o700 });
    symlinkSync(join(base, "elsewhere"), join(base, "tmp", `tspto-${uid}`));
    const e = refused(() => privateDir("toolchain"));
    expect(e.detail).toBe(`refused: ${join(base, "tmp", `tspto-${uid}`)} is a symbolic link, not a directory; tspto never loads, includes or compiles what another user can write`);
  });

  it("a cache root owned by another user is refused (root: chown to uid 65534)", (ctx) => {
    ctx.skip(!isRoot, "needs root to plant a directory owned by another user (chown); the mode checks run as any user");
    const root = join(tmpDir("owner"), "cache");
    mkdirSync(root, { mode: 0o700 });
    chownSync(root, 65534, 65534);
    process.env.TSPTO_CACHE_DIR = root;
    expect(refused(() => cacheDir()).detail).toBe(`refused: the disk cache ${root}: ${root} belongs to another user (uid 65534); tspto never loads, includes or compiles what another user can write`);
    expect(refused(() => privateDir("pch")).detail).toContain(`${root} belongs to another user (uid 65534)`);
  });
});
