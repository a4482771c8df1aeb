# PyTorch peers of the GPU benchmark (bench/gpu.ts): prints one JSON object of median
# milliseconds measured with CUDA events. Usage: python3 bench/gpu_peers.py ROUNDS
import json, sys
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
try:
    import torch
except Exception as e:  # no torch: the rows say so
    print(json.dumps({"error": f"torch not importable: {e}"}))
    sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "torch sees no CUDA device"}))
    sys.exit(0)
dev = torch.device("cuda")

def timed(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(rounds):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]

out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
a = torch.randn(16384, 16384, device=dev); b = torch.randn(16384, 16384, device=dev); c = torch.empty_like(a)
out["add_ms"] = timed(lambda: torch.add(a, b, out=c))
out["copy_ms"] = timed(lambda: c.copy_(a))
del a, b, c
x = torch.randn(16384, 4096, device=dev); y = torch.empty_like(x)
out["softmax_ms"] = timed(lambda: torch.softmax(x, dim=-1, out=y) if False else y.copy_(torch.softmax(x, dim=-1)))
out["softmax_only_ms"] = timed(lambda: torch.softmax(x, dim=-1))
del x, y
m = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16); n = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
out["matmul_ms"] = timed(lambda: torch.matmul(m, n))
del m, n
# decode GEMV (bench/gpu_kernels.ts, gpuGemv): x [1, 8192] @ W [8192, 8192] bf16 -> fp32
gx = torch.randn(1, 8192, device=dev, dtype=torch.bfloat16); gw = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
out["gemv_ms"] = timed(lambda: torch.matmul(gx, gw).float())
out["gemv_bf16_ms"] = timed(lambda: torch.matmul(gx, gw))
print(json.dumps(out))
