// Test harness for generated program libraries (src/codegen, cpu platform), independent of
// the native runtime: dlopens the library, implements TsptoRuntimeApi by running each
// submitted task immediately on this thread with a 1 MiB, 64-byte aligned scratch arena
// (refilled with 0xff bytes before every task, so reading a tile nobody wrote shows up as
// NaN / -1), and moves tensors between binary files and 64-byte aligned buffers.
//
//   harness <library.so> <spec file>
// spec: one line per entry parameter, in order:
//   T <nbytes> <input file | -> <output file | ->   tensor (- : zero-filled / not written back)
//   I <int64>  |  F <double>  |  B <0|1>             scalar
// stdout: "TASK <name> <scope> <nargs> <param>:<nbytes>:<mode> ..." per submitted task,
//         "FAIL <message>" per rt->fail, and finally "RC <tspto_entry result>".
// With TSPTO_HARNESS_SCRATCH=<file> set, the scratch arena as each task left it is appended to
// <file> (1 MiB per task): a test can see which bytes a kernel wrote (the rest stay 0xff).
#include "tspto_abi.h"
#include <dlfcn.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {
constexpr int64_t kScratch = 1 << 20;

struct Tensor { int64_t nbytes; std::string in, out; uint8_t* data; };
struct Ctx {
  std::vector<Tensor>* tensors;
  uint8_t* scratch;
  int failures = 0;
  TsptoRuntimeApi* api;
};

int param_of(Ctx* c, int64_t addr) {
  for (size_t i = 0; i < c->tensors->size(); ++i)
    if ((int64_t)(intptr_t)(*c->tensors)[i].data == addr) return (int)i;
  return -1;
}

int submit(void* ctx, TsptoKernelFn fn, const char* name, int32_t scope, const int64_t* args, int32_t nargs,
           const TsptoAccess* acc, int32_t nacc) {
  Ctx* c = (Ctx*)ctx;
  std::printf("TASK %s %d %d", name, scope, nargs);
  for (int i = 0; i < nacc; ++i) std::printf(" %d:%lld:%d", param_of(c, acc[i].base), (long long)acc[i].nbytes, acc[i].mode);
  std::printf("\n");
  if (c->failures) return 1;
  std::vector<int64_t> slots(args, args + nargs);
  slots.push_back((int64_t)(intptr_t)c->scratch);
  slots.push_back((int64_t)(intptr_t)c->api);
  std::memset(c->scratch, 0xff, kScratch);
  fn(slots.data());
  if (const char* dump = std::getenv("TSPTO_HARNESS_SCRATCH")) {
    FILE* f = std::fopen(dump, "ab");
    if (f) { std::fwrite(c->scratch, 1, kScratch, f); std::fclose(f); }
  }
  return c->failures ? 1 : 0;
}
int wait_all(void* ctx) { return ((Ctx*)ctx)->failures ? 1 : 0; }
int64_t alloc(void*, int64_t nbytes) {
  void* p = std::aligned_alloc(64, (size_t)((nbytes + 63) / 64 * 64));
  if (p) std::memset(p, 0, (size_t)nbytes);
  return (int64_t)(intptr_t)p;
}
void free_(void*, int64_t addr) { std::free((void*)(intptr_t)addr); }
void fail(void* ctx, const char* msg) {
  ((Ctx*)ctx)->failures++;
  std::printf("FAIL %s\n", msg);
}
int failed(void* ctx) { return ((Ctx*)ctx)->failures != 0; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) { std::fprintf(stderr, "usage: harness <library.so> <spec>\n"); return 2; }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { std::fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  auto version = (int (*)(void))dlsym(lib, "tspto_abi_version");
  auto entry = (int (*)(const TsptoRuntimeApi*, const int64_t*))dlsym(lib, "tspto_entry");
  if (!version || !entry) { std::fprintf(stderr, "missing tspto_abi_version / tspto_entry\n"); return 2; }
  if (version() != TSPTO_ABI_VERSION) { std::fprintf(stderr, "ABI version %d != %d\n", version(), TSPTO_ABI_VERSION); return 2; }

  std::vector<Tensor> tensors;
  std::vector<int64_t> args;
  std::vector<int> tensor_of_arg;
  std::ifstream spec(argv[2]);
  std::string line;
  while (std::getline(spec, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "T") {
      Tensor t;
      ls >> t.nbytes >> t.in >> t.out;
      t.data = (uint8_t*)std::aligned_alloc(64, (size_t)((t.nbytes + 63) / 64 * 64 + 64));
      std::memset(t.data, 0, (size_t)t.nbytes);
      if (t.in != "-") {
        std::ifstream f(t.in, std::ios::binary);
        f.read((char*)t.data, t.nbytes);
        if (f.gcount() != t.nbytes) { std::fprintf(stderr, "short read of %s\n", t.in.c_str()); return 2; }
      }
      tensor_of_arg.push_back((int)tensors.size());
      tensors.push_back(t);
      args.push_back(0);
    } else if (kind == "I" || kind == "B") {
      long long v; ls >> v; args.push_back((int64_t)v); tensor_of_arg.push_back(-1);
    } else if (kind == "F") {
      std::string s; ls >> s; double d = std::strtod(s.c_str(), nullptr);
      int64_t bits; std::memcpy(&bits, &d, 8); args.push_back(bits); tensor_of_arg.push_back(-1);
    } else { std::fprintf(stderr, "bad spec line: %s\n", line.c_str()); return 2; }
  }
  for (size_t i = 0; i < args.size(); ++i)
    if (tensor_of_arg[i] >= 0) args[i] = (int64_t)(intptr_t)tensors[tensor_of_arg[i]].data;

  Ctx ctx;
  ctx.tensors = &tensors;
  ctx.scratch = (uint8_t*)std::aligned_alloc(64, kScratch);
  TsptoRuntimeApi api;
  api.ctx = &ctx;
  api.scratch_bytes = kScratch;
  api.submit = submit;
  api.wait_all = wait_all;
  api.alloc = alloc;
  api.free = free_;
  api.fail = fail;
  api.failed = failed;
  ctx.api = &api;
  int rc = entry(&api, args.empty() ? nullptr : args.data());
  std::printf("RC %d\n", rc);
  for (auto& t : tensors) {
    if (t.out == "-") continue;
    std::ofstream f(t.out, std::ios::binary);
    f.write((const char*)t.data, t.nbytes);
  }
  std::fflush(stdout);
  return 0;
}
