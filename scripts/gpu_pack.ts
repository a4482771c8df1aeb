// `npm run gpu:pack`: writes gpu-pack/ (git-ignored, < 64 MiB) with everything the GPU check
// needs on a machine with an NVIDIA GPU, no network and maybe no Node:
//   node.xz        this Node binary (process.execPath), xz-compressed
//   app.tar.xz     the TypeScript sources (src, examples, bench, the GPU checks), the runtime
//                  node_modules (tsx, esbuild, typescript, lru-cache), the prebuilt native addon
//                  and the prebuilt cuda artifacts (fatbins for sm_90 + host libraries)
//   run.sh         unpacks both under /tmp/tspto-gpu and runs scripts/gpu_check.ts: the GPU
//                  tests ("N passed, M failed") and the GPU benchmark table
// The tree is staged at /tmp/tspto-gpu/app, where run.sh unpacks it: the generated CUDA names
// kernel source files by absolute path, so the prebuilt artifacts match only there.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BASE = "/tmp/tspto-gpu";
const STAGE = join(BASE, "app");
const OUT = join(ROOT, "gpu-pack");
const LIMIT = 64 * 1024 * 1024;
const log = (s: string) => process.stderr.write(`gpu:pack: ${s}\n`);
const t0 = performance.now();

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): void {
  const r = spawnSync(cmd, args, { stdio: "inherit", ...opts });
  if (r.error || r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

/** A package and the packages it depends on at run time (top-level node_modules). */
function closure(roots: readonly string[]): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    const dir = join(ROOT, "node_modules", name);
    if (!existsSync(dir)) return; // an optional dependency for another platform
    seen.add(name);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    for (const d of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) visit(d);
  };
  roots.forEach(visit);
  return [...seen].sort();
}

const addon = join(ROOT, "native", "build", "Release", "tspto_native.node");
if (!existsSync(addon)) throw new Error(`${addon} is missing: run npm install first`);

log(`staging ${STAGE}`);
rmSync(BASE, { recursive: true, force: true });
mkdirSync(STAGE, { recursive: true });
for (const p of ["package.json", "tsconfig.json", "src", "examples", "bench", "scripts/gpu_check.ts", "scripts/gpu_prebuild.ts", "test/targets/cuda", "test/passes/fixtures", "test/ops/fixtures", "native/include"]) {
  cpSync(join(ROOT, p), join(STAGE, p), { recursive: true });
}
mkdirSync(join(STAGE, "native", "build", "Release"), { recursive: true });
cpSync(addon, join(STAGE, "native", "build", "Release", "tspto_native.node"));
const mods = closure(["tsx", "typescript", "lru-cache"]);
for (const m of mods) cpSync(join(ROOT, "node_modules", m), join(STAGE, "node_modules", m), { recursive: true, dereference: true });
log(`node_modules: ${mods.join(", ")}`);

log("prebuilding the cuda artifacts (nvcc, sm_90)");
run(process.execPath, ["--import", "tsx", "scripts/gpu_prebuild.ts"], {
  cwd: STAGE, env: { ...process.env, TSPTO_CUDA_PREBUILT_OUT: join(STAGE, "prebuilt"), TSPTO_CACHE_DIR: join(BASE, "cache-prebuild"), TSPTO_EXAMPLES_QUIET: "1" },
});
rmSync(join(BASE, "cache-prebuild"), { recursive: true, force: true });

// the compressed Node binary is kept from an earlier pack when it is the same binary
const nodeId = (() => { const st = statSync(process.execPath); return `${process.execPath}:${st.size}:${st.mtimeMs}`; })();
const keepNode = existsSync(join(OUT, "node.xz")) && existsSync(join(OUT, ".node-id")) && readFileSync(join(OUT, ".node-id"), "utf8") === nodeId;
for (const f of ["app.tar.xz", "run.sh", "README.md", ...(keepNode ? [] : ["node.xz", ".node-id"])]) rmSync(join(OUT, f), { force: true });
mkdirSync(OUT, { recursive: true });
log("compressing (xz)");
run("sh", ["-c", `tar -C '${BASE}' -cf - app | xz -T0 -6 > '${join(OUT, "app.tar.xz")}'`]);
if (!keepNode) {
  run("sh", ["-c", `xz -T0 -6 -c '${process.execPath}' > '${join(OUT, "node.xz")}'`]); // ~100 MiB -> ~24 MiB
  writeFileSync(join(OUT, ".node-id"), nodeId);
}
const runSh = `#!/bin/sh
# tspto GPU check: unpacks Node and the app under /tmp/tspto-gpu and runs the GPU tests and
# the GPU benchmark (needs an NVIDIA GPU with its driver; python3 + torch for the peers).
# Prints "N passed, M failed" and the benchmark table; exit status 0 when every check passed.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${BASE}
rm -rf "$BASE/app" "$BASE/cache"
mkdir -p "$BASE"
unxz_to() { # file.xz -> stdout, with xz or python3
  if command -v xz >/dev/null 2>&1; then xz -dc "$1"; else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi
}
unxz_to "$HERE/node.xz" > "$BASE/node"
chmod +x "$BASE/node"
unxz_to "$HERE/app.tar.xz" | tar -C "$BASE" -xf -
cd "$BASE/app"
export TSPTO_CUDA_PREBUILT="$BASE/app/prebuilt" TSPTO_CACHE_DIR="$BASE/cache" TSPTO_EXAMPLES_QUIET=1
exec timeout \${TSPTO_GPU_TIMEOUT:-470} "$BASE/node" --import tsx scripts/gpu_check.ts "$@"
`;
writeFileSync(join(OUT, "run.sh"), runSh);
chmodSync(join(OUT, "run.sh"), 0o755);
writeFileSync(join(OUT, "README.md"), `# tspto GPU check\n\nCopy this folder to the GPU machine and run \`sh run.sh\`. It prints one line per check, \`N passed, M failed\`, then the GPU benchmark table (goals in the last columns).\n\n\`sh run.sh --kernels=v2\` runs the same checks (against interp) and the same table with the opt-in v2 kernels (TSPTO_CUDA_KERNELS=v2: 16-byte elementwise words, split-row reductions, wgmma matmul on sm_90a, grids capped to resident blocks), which have not run on a GPU before (v2 adds the TMA + wgmma GEMM and the decode GEMV). \`sh run.sh --kernels=v2 --graph\` also launches v2 programs through CUDA graphs (TSPTO_CUDA_GRAPH=1).\nBuilt ${new Date().toISOString()} from ${ROOT}.\n`);
let total = 0;
for (const f of ["app.tar.xz", "node.xz", "run.sh", "README.md"]) total += statSync(join(OUT, f)).size;
log(`wrote ${OUT}: ${(total / 2 ** 20).toFixed(1)} MiB in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
if (total >= LIMIT) throw new Error(`the pack is ${(total / 2 ** 20).toFixed(1)} MiB, over the 64 MiB limit`);
// the pack as the GPU machine will use it, minus the GPU: every program must come prebuilt
log("verifying: run.sh --verify-prebuilt (no GPU, no nvcc), v1 and v2 kernels");
run("sh", [join(OUT, "run.sh"), "--verify-prebuilt"]);
run("sh", [join(OUT, "run.sh"), "--verify-prebuilt", "--kernels=v2"]);
void dirname;
