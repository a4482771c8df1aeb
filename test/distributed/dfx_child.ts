// Run by test/distributed/mpi.test.ts under mpirun: every rank launches one program with the
// swimlane on; rank 0 builds it into argv[2] (an artifact directory the ranks share), the
// others load it from there. Each device writes dfx_outputs/rank_<r>/device_<d>/.
import { pl, ir, CompiledProgram, DistributedWorker, RunConfig, randn, zeros } from "tspto";

const R = 16, C = 32;
const scale = pl.jit(function scale(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 3), [0, 0], y);
  });
  return y;
});

const dir = process.argv[2];
const cfg = new RunConfig({ enableChipSwimlane: 1 });
const dw = new DistributedWorker({ config: cfg, mpi: "required" });
if (dw.rank === 0) ir.compile(scale.lower(zeros([R, C]), zeros([R, C])), { platform: "cpu", outputDir: dir });
dw.barrier();
const compiled = CompiledProgram.fromDir(dir);
const n = dw.worldDevices;
const x = dw.allocSharded([R * n, C], "float32", { init: randn([R * n, C], { seed: 3 }) });
const y = dw.allocSharded([R * n, C], "float32");
dw.run(compiled, x, y);
dw.barrier();
console.log(`rank ${dw.rank}: launched with the swimlane on`);
const b = dw.benchmark(compiled, [x, y], { rounds: 5, warmup: 1 });
if (dw.rank === 0) console.log(`benchmark:\n${b}`);
console.log(`rank ${dw.rank}: benchmark rows ${b.rows.map((r) => `${r.rank}/${r.device}:${r.deviceUsMedian > 0 && r.hostUsMedian >= r.deviceUsMedian ? "ok" : "bad"}`).join(" ")}`);
dw.close();
