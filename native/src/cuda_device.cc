// The cuda device (see cuda_device.h). The CUDA driver API is declared here (the few types
// and entry points used) and resolved with dlopen/dlsym at run time.
#include "cuda_device.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cuda_host.h"
#include "errors.h"

namespace tspto {

// ------------------------------------------------------------------ driver API
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;
constexpr int kCuFuncAttrMaxDynamicShared = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr unsigned kCuMemHostAllocDeviceMap = 0x02;
constexpr unsigned kCuStreamNonBlocking = 0x1;
constexpr int kCuDevAttrMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

struct CudaApi {
  void* lib = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr*, void*, unsigned);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  // v2 kernels (optional: null on a driver without them; the v2 grid sizing is then off)
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) = nullptr;
  // TMA tensor maps (CUDA 12+; optional: a module with tensor maps fails to load without it).
  // (CUtensorMap*, CUtensorMapDataType, rank, globalAddress, globalDim, globalStrides, boxDim,
  //  elementStrides, interleave, swizzle, l2Promotion, oobFill)
  CUresult (*cuTensorMapEncodeTiled)(void*, int, uint32_t, void*, const uint64_t*, const uint64_t*, const uint32_t*, const uint32_t*, int, int, int, int) = nullptr;
  // CUDA graphs (optional: TSPTO_CUDA_GRAPH=1 needs them)
  CUresult (*cuGraphCreate)(void**, unsigned) = nullptr;
  CUresult (*cuGraphAddKernelNode)(void**, void*, void* const*, size_t, const void*) = nullptr;  // _v2 params
  CUresult (*cuGraphInstantiateWithFlags)(void**, void*, unsigned long long) = nullptr;
  CUresult (*cuGraphExecKernelNodeSetParams)(void*, void*, const void*) = nullptr;  // _v2 params
  CUresult (*cuGraphLaunch)(void*, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(void*) = nullptr;
  CUresult (*cuGraphDestroy)(void*) = nullptr;

  ~CudaApi() { if (lib) dlclose(lib); }
};

namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string CuMessage(const CudaApi* api, CUresult rc) {
  const char* s = nullptr;
  if (api && api->cuGetErrorString && api->cuGetErrorString(rc, &s) == 0 && s) return std::string(s) + " (CUresult " + std::to_string(rc) + ")";
  return "CUresult " + std::to_string(rc);
}

// Loads libcuda.so.1 and every entry point, or throws the "no CUDA driver" error.
std::shared_ptr<CudaApi> LoadDriver() {
  auto api = std::make_shared<CudaApi>();
  const char* name = "libcuda.so.1";
  api->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    const char* why = dlerror();
    throw DeviceError(std::string("no CUDA driver found (libcuda.so.1): ") + (why ? why : "dlopen failed") +
                      "; the cuda platform needs an NVIDIA GPU and its driver", kCodeNoGpu);
  }
  auto sym = [&](const char* n, const char* alt = nullptr) -> void* {
    void* p = dlsym(api->lib, n);
    if (!p && alt) p = dlsym(api->lib, alt);
    if (!p) throw DeviceError(std::string("the CUDA driver (libcuda.so.1) lacks ") + n + "; it is too old for tspto", kCodeNoGpu);
    return p;
  };
#define TSPTO_CU(field, ...) api->field = reinterpret_cast<decltype(api->field)>(sym(__VA_ARGS__))
  TSPTO_CU(cuInit, "cuInit");
  TSPTO_CU(cuDeviceGetCount, "cuDeviceGetCount");
  TSPTO_CU(cuDeviceGet, "cuDeviceGet");
  TSPTO_CU(cuDeviceGetName, "cuDeviceGetName");
  TSPTO_CU(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  TSPTO_CU(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  TSPTO_CU(cuCtxSetCurrent, "cuCtxSetCurrent");
  TSPTO_CU(cuMemGetInfo, "cuMemGetInfo_v2");
  TSPTO_CU(cuMemAlloc, "cuMemAlloc_v2");
  TSPTO_CU(cuMemFree, "cuMemFree_v2");
  TSPTO_CU(cuMemHostAlloc, "cuMemHostAlloc");
  TSPTO_CU(cuMemFreeHost, "cuMemFreeHost");
  TSPTO_CU(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
  TSPTO_CU(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  TSPTO_CU(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  TSPTO_CU(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  TSPTO_CU(cuMemsetD8Async, "cuMemsetD8Async");
  TSPTO_CU(cuModuleLoadData, "cuModuleLoadData");
  TSPTO_CU(cuModuleUnload, "cuModuleUnload");
  TSPTO_CU(cuModuleGetFunction, "cuModuleGetFunction");
  TSPTO_CU(cuFuncSetAttribute, "cuFuncSetAttribute");
  TSPTO_CU(cuLaunchKernel, "cuLaunchKernel");
  TSPTO_CU(cuStreamCreate, "cuStreamCreate");
  TSPTO_CU(cuStreamDestroy, "cuStreamDestroy_v2");
  TSPTO_CU(cuStreamSynchronize, "cuStreamSynchronize");
  TSPTO_CU(cuEventCreate, "cuEventCreate");
  TSPTO_CU(cuEventDestroy, "cuEventDestroy_v2");
  TSPTO_CU(cuEventRecord, "cuEventRecord");
  TSPTO_CU(cuEventSynchronize, "cuEventSynchronize");
  TSPTO_CU(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  TSPTO_CU(cuGetErrorString, "cuGetErrorString");
#undef TSPTO_CU
  api->cuDeviceGetAttribute = reinterpret_cast<decltype(api->cuDeviceGetAttribute)>(dlsym(api->lib, "cuDeviceGetAttribute"));
  api->cuOccupancyMaxActiveBlocksPerMultiprocessor =
      reinterpret_cast<decltype(api->cuOccupancyMaxActiveBlocksPerMultiprocessor)>(dlsym(api->lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  api->cuTensorMapEncodeTiled = reinterpret_cast<decltype(api->cuTensorMapEncodeTiled)>(dlsym(api->lib, "cuTensorMapEncodeTiled"));
#define TSPTO_CU_OPT(field, name) api->field = reinterpret_cast<decltype(api->field)>(dlsym(api->lib, name))
  TSPTO_CU_OPT(cuGraphCreate, "cuGraphCreate");
  TSPTO_CU_OPT(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2");
  TSPTO_CU_OPT(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  TSPTO_CU_OPT(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
  TSPTO_CU_OPT(cuGraphLaunch, "cuGraphLaunch");
  TSPTO_CU_OPT(cuGraphExecDestroy, "cuGraphExecDestroy");
  TSPTO_CU_OPT(cuGraphDestroy, "cuGraphDestroy");
#undef TSPTO_CU_OPT
  return api;
}

constexpr int kDescriptorSlots = 6;  // lo_slot, hi_slot, start, step, trips, grid (src/codegen/cuda)
constexpr int kMaxSlots = 48;        // CUDA_MAX_SLOTS
constexpr int kErrWords = 16;        // CUDA_ERR_WORDS
constexpr uint64_t kStagingChunk = 64ull << 20;
constexpr int kTmapWords = 9;  // a row of tspto_cuda_tmaps (src/codegen/cuda/tma_gemm.ts, tmapTable)
constexpr size_t kMaxTmaps = 4;  // tensor maps one kernel takes after its argument block

// One tensor map of a kernel: the table row (TensorMapSpec, cuda_device.h) and its encoding for
// the address it was last encoded with (a CUtensorMap is 128 bytes, 128-byte aligned).
struct TensorMapSlot {
  TensorMapSpec spec;
  int64_t addr = -1;
  alignas(128) unsigned char map[128] = {};
};

// CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h).
struct KernelNodeParams {
  CUfunction func;
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared;
  void** params;
  void** extra;
  void* kern;
  CUcontext ctx;
};

// One segment's graph: the instantiated executable and its nodes, in launch order.
struct SegmentGraph {
  void* graph = nullptr;  // CUgraph
  void* exec = nullptr;   // CUgraphExec
  std::vector<void*> nodes;
};

// The kernel parameter block (TsptoCudaArgs in src/codegen/cuda/prelude.ts).
struct KernelArgs {
  int64_t v[kMaxSlots];
  int64_t lo_slot, hi_slot, start, step, trips;
  int64_t gscratch;
  int64_t err;      // device memory: the failure record
  int64_t errflag;  // host-mapped: set after a failure was recorded
};
static_assert(sizeof(KernelArgs) == kGraphArgsBytes, "GraphNodeDesc holds a KernelArgs");
static_assert(kMaxTmaps == kGraphMaps, "GraphNodeDesc holds a kernel's tensor maps");


}  // namespace

// The device's CUDA context. Modules hold it so that one a launch still holds after
// UnloadModule (or Close) is unloaded by the last holder -- and not at all once the context
// is released (destroying the primary context unloaded it).
struct CudaDeviceCore::Context {
  std::mutex mu;
  bool released = false;
  std::shared_ptr<CudaApi> api;
  CUcontext ctx = nullptr;
};

struct CudaDeviceCore::Module {
  std::shared_ptr<Context> context;
  void* handle = nullptr;
  CUmodule cumod = nullptr;
  int (*entry)(const TsptoRuntimeApi*, const int64_t*) = nullptr;
  void (*report)(const TsptoRuntimeApi*, const int64_t*) = nullptr;
  std::vector<CUfunction> fns;
  std::vector<std::string> names;
  std::vector<int64_t> shared, gscratch;
  // v2 kernels (tspto_cuda_kernels_version >= 2): the most blocks of each kernel the GPU holds
  // at once (SMs x resident blocks per SM); an SPMD launch's grid is capped to it (each block
  // then runs a band of iterations). 0: uncapped (v1).
  std::vector<int64_t> grid_cap;
  // TMA tensor maps per kernel (v2 TMA GEMM), each encoded once per tensor address and passed
  // as a `const __grid_constant__ CUtensorMap` parameter after the argument block.
  std::vector<std::vector<TensorMapSlot>> tmaps;
  // CUDA graphs (TSPTO_CUDA_GRAPH=1): one per segment of the orchestration, and their book
  std::vector<SegmentGraph> graphs;
  GraphBook book;
  int kernels_version = 1;
  int block_threads = 256;
  std::string path;
  // Bytes of each launch slot's tensor (ArgLayout), given at load.
  ArgLayout arg_bytes;
  ~Module() {
    if (cumod != nullptr && context) {
      std::lock_guard<std::mutex> l(context->mu);
      if (!context->released) {
        context->api->cuCtxSetCurrent(context->ctx);
        for (SegmentGraph& g : graphs) {
          if (g.exec && context->api->cuGraphExecDestroy) context->api->cuGraphExecDestroy(g.exec);
          if (g.graph && context->api->cuGraphDestroy) context->api->cuGraphDestroy(g.graph);
        }
        context->api->cuModuleUnload(cumod);
      }
    }
    if (handle != nullptr) dlclose(handle);
  }
};

void CudaDeviceCore::Check(int rc, const char* what) {
  if (rc == 0) return;
  if (rc == 2) throw DeviceError(std::string(what) + ": out of GPU memory (" + CuMessage(api_.get(), rc) + "), " +
                                 std::to_string(bytes_in_use_) + " bytes in use by this device", kCodeOutOfMemory);
  throw DeviceError(std::string(what) + " failed: " + CuMessage(api_.get(), rc), kCodeCuda);
}

CudaDeviceCore::CudaDeviceCore(const DeviceOptions& options) : options_(options) {
  api_ = LoadDriver();
  // CUDA graphs for v2 modules: opt-in, and only with every graph entry point in the driver
  if (const char* g = std::getenv("TSPTO_CUDA_GRAPH"); g != nullptr && std::strcmp(g, "1") == 0) {
    graphs_ = api_->cuGraphCreate && api_->cuGraphAddKernelNode && api_->cuGraphInstantiateWithFlags && api_->cuGraphExecKernelNodeSetParams &&
              api_->cuGraphLaunch && api_->cuGraphExecDestroy && api_->cuGraphDestroy;
  }
  CUresult rc = api_->cuInit(0);
  if (rc != 0) throw DeviceError("no GPU: the CUDA driver failed to initialize (" + CuMessage(api_.get(), rc) + ")", kCodeNoGpu);
  int count = 0;
  rc = api_->cuDeviceGetCount(&count);
  if (rc != 0 || count == 0) throw DeviceError("no GPU: the CUDA driver sees no device", kCodeNoGpu);
  if (static_cast<int>(options.device_id) >= count) {
    throw DeviceError("no GPU with deviceId " + std::to_string(options.device_id) + " (this machine has " + std::to_string(count) + ")", kCodeNoGpu);
  }
  Check(api_->cuDeviceGet(&device_, static_cast<int>(options.device_id)), "cuDeviceGet");
  Check(api_->cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  context_ = std::make_shared<Context>();
  context_->api = api_;
  context_->ctx = ctx_;
  Check(api_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  Check(api_->cuStreamCreate(&stream_, kCuStreamNonBlocking), "cuStreamCreate");
  Check(api_->cuEventCreate(&ev_start_, 0), "cuEventCreate");
  Check(api_->cuEventCreate(&ev_end_, 0), "cuEventCreate");
  size_t free_b = 0, total_b = 0;
  Check(api_->cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo");
  capacity_ = total_b;
  // the kernels' failure record lives in device memory (atomics there are safe); a host-mapped
  // flag word tells the host, without a copy, that there is one to read
  void* flag = nullptr;
  Check(api_->cuMemHostAlloc(&flag, 64, kCuMemHostAllocDeviceMap), "cuMemHostAlloc");
  err_host_ = static_cast<int64_t*>(flag);
  std::memset(err_host_, 0, 64);
  CUdeviceptr fd = 0;
  Check(api_->cuMemHostGetDevicePointer(&fd, flag, 0), "cuMemHostGetDevicePointer");
  err_flag_dev_ = fd;
  CUdeviceptr ed = 0;
  Check(api_->cuMemAlloc(&ed, kErrWords * sizeof(int64_t)), "cuMemAlloc");
  Check(api_->cuMemsetD8Async(ed, 0, kErrWords * sizeof(int64_t), stream_), "cuMemsetD8Async");
  Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  err_dev_ = ed;
  rt_.ctx = this;
  rt_.scratch_bytes = static_cast<int64_t>(options.scratch_bytes);
  rt_.submit = &ApiSubmit;
  rt_.wait_all = &ApiWaitAll;
  rt_.alloc = &ApiAlloc;
  rt_.free = &ApiFree;
  rt_.fail = &ApiFail;
  rt_.failed = &ApiFailed;
  rt_.core_count = 1;
}

CudaDeviceCore::~CudaDeviceCore() { Close(); }

void CudaDeviceCore::CheckOpen() const {
  if (closed()) throw DeviceError("device is closed", kCodeClosed);
}

void CudaDeviceCore::Close() {
  std::lock_guard<std::mutex> c(close_mu_);
  if (closed()) return;
  std::lock_guard<std::mutex> l(launch_mu_);
  closed_.store(true, std::memory_order_release);
  api_->cuCtxSetCurrent(ctx_);
  if (stream_) api_->cuStreamSynchronize(stream_);
  {
    // Modules that queued launches still hold are unloaded when those let go (or went with
    // the context, released below).
    modules_.Clear();
  }
  std::lock_guard<std::mutex> m(mem_mu_);
  for (auto& kv : allocs_) api_->cuMemFree(kv.first);
  allocs_.clear();
  for (auto& kv : deferred_) api_->cuMemFree(kv.first);
  deferred_.clear();
  spare_.clear();
  bytes_in_use_ = 0;
  if (staging_) api_->cuMemFreeHost(staging_);
  staging_ = nullptr;
  if (err_host_) api_->cuMemFreeHost(err_host_);
  err_host_ = nullptr;
  if (err_dev_) api_->cuMemFree(err_dev_);
  err_dev_ = 0;
  if (ev_start_) api_->cuEventDestroy(ev_start_);
  if (ev_end_) api_->cuEventDestroy(ev_end_);
  for (void* ev : rec_events_) api_->cuEventDestroy(ev);
  rec_events_.clear();
  if (stream_) api_->cuStreamDestroy(stream_);
  stream_ = ev_start_ = ev_end_ = nullptr;
  {
    std::lock_guard<std::mutex> cl(context_->mu);
    context_->released = true;
    api_->cuDevicePrimaryCtxRelease(device_);
  }
}

// ------------------------------------------------------------------ memory
uint64_t CudaDeviceCore::AllocLocked(uint64_t nbytes) {
  const uint64_t size = nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
  CUdeviceptr p = 0;
  CUresult rc = api_->cuMemAlloc(&p, size);
  if (rc == 2 && !spare_.empty()) {  // out of memory: give back the kept staging buffers, retry
    std::multimap<uint64_t, uint64_t> spare;
    spare.swap(spare_);
    for (auto& kv : spare) FreeLocked(kv.second);
    rc = api_->cuMemAlloc(&p, size);
  }
  if (rc == 2) {
    throw DeviceError("device out of memory: requested " + std::to_string(nbytes) + " bytes, " + std::to_string(bytes_in_use_) +
                      " in use, capacity " + std::to_string(capacity_), kCodeOutOfMemory);
  }
  Check(rc, "cuMemAlloc");
  Check(api_->cuMemsetD8Async(p, 0, size, stream_), "cuMemsetD8Async");
  Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  allocs_[p] = Alloc_{size, ++generation_};
  bytes_in_use_ += size;
  return p;
}

bool CudaDeviceCore::FreeLocked(uint64_t addr, const char* op) {
  auto it = allocs_.find(addr);
  if (it == allocs_.end()) throw DeviceError(std::string(op) + ": " + DescribeNonLiveLocked(addr), kCodeBadAddress);
  if (it->second.pins > 0) {
    // Launches in flight use it: the address dies now, the memory at the last unpin.
    deferred_.emplace(addr, it->second);
    allocs_.erase(it);
    return true;
  }
  bytes_in_use_ -= it->second.size;
  api_->cuMemFree(addr);
  allocs_.erase(it);
  return false;
}

std::string CudaDeviceCore::DescribeNonLiveLocked(uint64_t addr) const {
  auto d = deferred_.find(addr);
  if (d != deferred_.end()) {
    return Hex(addr) + " is not a live allocation (freed; its memory is released when the " +
           std::to_string(d->second.pins) + " launch(es) in flight that use it finish)";
  }
  auto it = allocs_.upper_bound(addr);
  if (it != allocs_.begin()) {
    --it;
    if (addr == it->first) return "";
    if (addr < it->first + it->second.size) {
      return Hex(addr) + " is an interior pointer (offset " + std::to_string(addr - it->first) +
             " into the allocation at " + Hex(it->first) + " of " + std::to_string(it->second.size) +
             " bytes), not the start of an allocation";
    }
  }
  return Hex(addr) + " is not a live allocation of this device (already freed, never allocated, or a foreign pointer)";
}

uint64_t CudaDeviceCore::PinLocked(uint64_t addr, std::string* why) {
  auto it = allocs_.find(addr);
  if (it == allocs_.end()) {
    *why = DescribeNonLiveLocked(addr);
    return 0;
  }
  ++it->second.pins;
  return it->second.generation;
}

uint64_t CudaDeviceCore::PinRangeLocked(uint64_t addr, uint64_t nbytes, uint64_t* base, std::string* why) {
  auto it = allocs_.upper_bound(addr);
  if (it != allocs_.begin()) {
    --it;
    if (addr == it->first || addr < it->first + it->second.size) {
      const uint64_t room = it->first + it->second.size - addr;
      if (nbytes > room) {
        *why = "the range [" + Hex(addr) + ", " + Hex(addr) + " + " + std::to_string(nbytes) +
               ") the program uses leaves the allocation at " + Hex(it->first) + " of " +
               std::to_string(it->second.size) + " bytes (" + std::to_string(room) + " bytes from " +
               Hex(addr) + ")";
        return 0;
      }
      ++it->second.pins;
      *base = it->first;
      return it->second.generation;
    }
  }
  *why = DescribeNonLiveLocked(addr);
  if (why->empty()) *why = Hex(addr) + " is not inside a live allocation";
  return 0;
}

void CudaDeviceCore::UnpinLocked(uint64_t addr, uint64_t generation) {
  auto it = allocs_.find(addr);
  if (it != allocs_.end() && it->second.generation == generation) {
    if (it->second.pins > 0) --it->second.pins;
    return;
  }
  auto d = deferred_.find(addr);
  if (d == deferred_.end() || d->second.generation != generation) return;
  if (--d->second.pins > 0) return;
  bytes_in_use_ -= d->second.size;  // the deferred free happens now
  api_->cuMemFree(addr);
  deferred_.erase(d);
}

uint64_t CudaDeviceCore::Alloc(uint64_t nbytes) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  return AllocLocked(nbytes);
}

bool CudaDeviceCore::Free(uint64_t addr) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  api_->cuStreamSynchronize(stream_);
  return FreeLocked(addr);
}

bool CudaDeviceCore::IsLive(uint64_t addr) {
  std::lock_guard<std::mutex> l(mem_mu_);
  return allocs_.count(addr) != 0;
}

void CudaDeviceCore::CheckRange(uint64_t addr, uint64_t nbytes, const char* what) {
  auto it = allocs_.upper_bound(addr);
  if (it != allocs_.begin()) {
    --it;
    if (addr >= it->first && addr + nbytes <= it->first + it->second.size && addr + nbytes >= addr) return;
  }
  throw DeviceError(std::string(what) + ": [" + Hex(addr) + ", +" + std::to_string(nbytes) + ") is not inside one live allocation", kCodeBadAddress);
}

void CudaDeviceCore::Stage(uint64_t bytes) {
  const uint64_t want = bytes < kStagingChunk ? bytes : kStagingChunk;
  if (staging_bytes_ >= want && staging_) return;
  if (staging_) api_->cuMemFreeHost(staging_);
  staging_ = nullptr;
  staging_bytes_ = 0;
  void* p = nullptr;
  const uint64_t size = want < (1u << 20) ? (1u << 20) : want;
  Check(api_->cuMemHostAlloc(&p, size, 0), "cuMemHostAlloc (pinned staging)");
  staging_ = static_cast<uint8_t*>(p);
  staging_bytes_ = size;
}

void CudaDeviceCore::H2D(uint64_t addr, const void* src, uint64_t nbytes, bool counted) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  CheckRange(addr, nbytes, "h2d");
  CopyInLocked(addr, src, nbytes);
  if (counted) h2d_bytes_ += nbytes;
}

void CudaDeviceCore::CopyInLocked(uint64_t dst, const void* src, uint64_t nbytes) {
  if (nbytes == 0) return;
  Stage(nbytes);
  for (uint64_t off = 0; off < nbytes; off += staging_bytes_) {
    const uint64_t n = nbytes - off < staging_bytes_ ? nbytes - off : staging_bytes_;
    std::memcpy(staging_, static_cast<const uint8_t*>(src) + off, n);
    Check(api_->cuMemcpyHtoDAsync(dst + off, staging_, n, stream_), "cuMemcpyHtoDAsync");
    Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }
}

void CudaDeviceCore::CopyOutLocked(void* dst, uint64_t src, uint64_t nbytes) {
  if (nbytes == 0) return;
  Stage(nbytes);
  for (uint64_t off = 0; off < nbytes; off += staging_bytes_) {
    const uint64_t n = nbytes - off < staging_bytes_ ? nbytes - off : staging_bytes_;
    Check(api_->cuMemcpyDtoHAsync(staging_, src + off, n, stream_), "cuMemcpyDtoHAsync");
    Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
    std::memcpy(static_cast<uint8_t*>(dst) + off, staging_, n);
  }
}

void CudaDeviceCore::D2H(void* dst, uint64_t addr, uint64_t nbytes, bool counted) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  CheckRange(addr, nbytes, "d2h");
  CopyOutLocked(dst, addr, nbytes);
  if (counted) d2h_bytes_ += nbytes;
}

void CudaDeviceCore::D2D(uint64_t dst, uint64_t src, uint64_t nbytes) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  CheckRange(dst, nbytes, "d2d");
  CheckRange(src, nbytes, "d2d");
  Check(api_->cuMemcpyDtoDAsync(dst, src, nbytes, stream_), "cuMemcpyDtoDAsync");
  Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

// ------------------------------------------------------------------ modules
uint32_t CudaDeviceCore::LoadModule(const std::string& path, ArgLayout arg_bytes) {
  CheckOpen();
  auto m = std::make_shared<Module>();
  m->context = context_;
  m->path = path;
  m->arg_bytes = std::move(arg_bytes);
  const size_t slash = path.rfind('/');
  const std::string fatbin_path = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "program.fatbin";
  std::ifstream in(fatbin_path, std::ios::binary);
  if (!in) throw DeviceError("loadModule: cannot read " + fatbin_path, kCodeModule);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  m->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle) {
    const char* why = dlerror();
    throw DeviceError("loadModule: cannot load " + path + ": " + (why ? why : "dlopen failed"), kCodeModule);
  }
  // The Module's destructor unloads what was loaded (library, CUDA module).
  auto fail = [&](const std::string& msg) { throw DeviceError("loadModule: " + path + ": " + msg, kCodeModule); };
  auto abi = reinterpret_cast<int (*)()>(dlsym(m->handle, "tspto_abi_version"));
  m->entry = reinterpret_cast<int (*)(const TsptoRuntimeApi*, const int64_t*)>(dlsym(m->handle, "tspto_entry"));
  m->report = reinterpret_cast<void (*)(const TsptoRuntimeApi*, const int64_t*)>(dlsym(m->handle, "tspto_cuda_report"));
  auto count = static_cast<const int*>(dlsym(m->handle, "tspto_cuda_kernel_count"));
  auto threads = static_cast<const int*>(dlsym(m->handle, "tspto_cuda_block_threads"));
  auto names = static_cast<const char* const*>(dlsym(m->handle, "tspto_cuda_kernel_names"));
  auto shared = static_cast<const int64_t*>(dlsym(m->handle, "tspto_cuda_kernel_shared"));
  auto gscratch = static_cast<const int64_t*>(dlsym(m->handle, "tspto_cuda_kernel_gscratch"));
  if (!abi || abi() != TSPTO_ABI_VERSION) fail("not a tspto program library of ABI version " + std::to_string(TSPTO_ABI_VERSION));
  if (!m->entry || !m->report || !count || !threads || !names || !shared || !gscratch) fail("not a cuda program library (kernel table missing)");
  m->block_threads = *threads;
  auto version = static_cast<const int*>(dlsym(m->handle, "tspto_cuda_kernels_version"));  // absent: v1 (older artifacts)
  m->kernels_version = version ? *version : 1;
  auto tmap_count = static_cast<const int*>(dlsym(m->handle, "tspto_cuda_tmap_count"));  // absent: no tensor maps
  auto tmap_rows = static_cast<const int64_t*>(dlsym(m->handle, "tspto_cuda_tmaps"));
  m->tmaps.resize(static_cast<size_t>(*count));
  if (tmap_count && *tmap_count > 0) {
    if (!tmap_rows) fail("the kernel table lists tensor maps but not their rows");
    if (!api_->cuTensorMapEncodeTiled) fail("its kernels use TMA tensor maps and this CUDA driver lacks cuTensorMapEncodeTiled (CUDA 12 or later is needed)");
    for (int r = 0; r < *tmap_count; ++r) {
      TensorMapSpec sp;
      std::string why;
      if (!ParseTensorMapRow(tmap_rows + static_cast<ptrdiff_t>(r) * kTmapWords, *count, kMaxSlots, &sp, &why)) fail("tensor map " + std::to_string(r) + ": " + why);
      auto& v = m->tmaps[static_cast<size_t>(sp.kernel)];
      if (v.size() >= kMaxTmaps) fail("kernel " + std::string(names[sp.kernel]) + " takes more than " + std::to_string(kMaxTmaps) + " tensor maps");
      v.emplace_back();
      v.back().spec = sp;
    }
  }
  std::unique_lock<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  CUresult rc = api_->cuModuleLoadData(&m->cumod, image.data());
  if (rc != 0) fail("cuModuleLoadData of " + fatbin_path + " failed: " + CuMessage(api_.get(), rc) +
                    " (built for another GPU architecture? set TSPTO_CUDA_ARCH to this GPU's, e.g. sm_80, and rebuild)");
  for (int i = 0; i < *count; ++i) {
    CUfunction f = nullptr;
    rc = api_->cuModuleGetFunction(&f, m->cumod, names[i]);
    if (rc != 0) fail(std::string("kernel ") + names[i] + " not found in " + fatbin_path);
    if (shared[i] > 48 * 1024) {
      rc = api_->cuFuncSetAttribute(f, kCuFuncAttrMaxDynamicShared, static_cast<int>(shared[i]));
      if (rc != 0) fail(std::string("kernel ") + names[i] + " needs " + std::to_string(shared[i]) + " bytes of shared memory: " + CuMessage(api_.get(), rc));
    }
    m->fns.push_back(f);
    m->names.push_back(names[i]);
    m->shared.push_back(shared[i]);
    m->gscratch.push_back(gscratch[i]);
    int64_t cap = 0;
    if (m->kernels_version >= 2 && api_->cuDeviceGetAttribute && api_->cuOccupancyMaxActiveBlocksPerMultiprocessor) {
      int sms = 0, per_sm = 0;
      if (api_->cuDeviceGetAttribute(&sms, kCuDevAttrMultiprocessorCount, device_) == 0 &&
          api_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, m->block_threads, static_cast<size_t>(shared[i])) == 0 &&
          sms > 0 && per_sm > 0) {
        cap = static_cast<int64_t>(sms) * per_sm;
      }
    }
    m->grid_cap.push_back(cap);
  }
  l.unlock();
  return modules_.Add(std::move(m));
}

void CudaDeviceCore::UnloadModule(uint32_t id) {
  CheckOpen();
  modules_.Remove(id);  // unloaded (if this was the last holder) outside the table's lock
}

DeviceStats CudaDeviceCore::Stats() {
  DeviceStats s{};
  s.launches = launches_;
  s.h2d_bytes = h2d_bytes_;
  s.d2h_bytes = d2h_bytes_;
  {
    std::lock_guard<std::mutex> l(mem_mu_);
    // kept launch staging buffers are device memory this device holds, but not live allocations
    // (and the device scratch of kernels whose tiles live in device memory)
    uint64_t spare = 0, n = spare_.size();
    for (auto& kv : spare_) spare += kv.first;
    if (gscratch_addr_ && allocs_.count(gscratch_addr_)) { spare += allocs_[gscratch_addr_].size; n++; }
    s.bytes_in_use = bytes_in_use_ - spare;
    s.live_allocations = allocs_.size() - n;
    s.pending_frees = deferred_.size();
    s.capacity = capacity_;
  }
  s.modules_loaded = modules_.Loaded();
  s.module_loads = modules_.Loads();
  s.tasks_run = tasks_run_;
  s.enqueue_ns = enqueue_ns_;
  s.sync_ns = sync_ns_;
  return s;
}

// ------------------------------------------------------------------ launch
// The LaunchPlan protocol of the cpu core (device.cc), with the same shared checks.

void CudaDeviceCore::Plan::Release() {
  if (!held || device == nullptr) return;
  held = false;
  device->ReleasePlan(this);
}

void CudaDeviceCore::ReleasePlan(Plan* plan) {
  std::lock_guard<std::mutex> l(mem_mu_);
  if (closed()) {  // Close freed every allocation (staging and deferred frees included)
    for (LaunchArg& a : plan->args) a.staged = a.generation = 0;
    return;
  }
  api_->cuCtxSetCurrent(ctx_);
  api_->cuStreamSynchronize(stream_);  // nothing on the stream still uses them
  for (LaunchArg& a : plan->args) {
    if (a.staged != 0) {
      auto it = allocs_.find(a.staged);
      if (it != allocs_.end()) spare_.emplace(it->second.size, a.staged);  // kept for the next launch
      a.staged = 0;
    }
    if (a.generation != 0) {
      UnpinLocked(a.pin_base, a.generation);
      a.generation = 0;
    }
  }
}

uint64_t CudaDeviceCore::TakeStagingLocked(uint64_t nbytes, bool zero) {
  const uint64_t size = nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
  auto it = spare_.find(size);
  if (it == spare_.end()) return AllocLocked(nbytes);  // zero-filled
  const uint64_t p = it->second;
  spare_.erase(it);
  if (zero) Check(api_->cuMemsetD8Async(p, 0, size, stream_), "cuMemsetD8Async");
  return p;
}

void CudaDeviceCore::StageArgsLocked(Plan* plan) {
  for (LaunchArg& a : plan->args) {
    if (a.kind == kArgHostIn || a.kind == kArgHostInOut) {
      a.staged = TakeStagingLocked(a.stage_bytes, false);
      CopyInLocked(a.staged, a.host, a.stage_bytes);
      h2d_bytes_ += a.stage_bytes;
    } else if (a.kind == kArgHostOut) {
      a.staged = TakeStagingLocked(a.stage_bytes, true);
    }
  }
}

void CudaDeviceCore::Prepare(Plan* plan, const char* method, bool stage_now) {
  CheckOpen();
  plan->device = this;
  plan->module = modules_.Get(plan->module_id, method);
  const ArgLayout& expect = plan->module->arg_bytes;
  CheckArgCount(plan->args, expect, method);
  plan->held = true;  // from here on, a throw releases what was pinned/staged so far
  try {
    std::lock_guard<std::mutex> l(mem_mu_);
    for (size_t i = 0; i < plan->args.size(); ++i) {
      LaunchArg& a = plan->args[i];
      if (a.kind <= kArgHostInOut) {
        CheckHostArg(&a, i, expect, plan->args, method);
      } else if (a.kind == kArgDevice) {
        // the allocation holding the bytes the program uses from this address (a view's
        // address may lie inside it): pinned by its start and generation
        std::string why;
        const int64_t need = expect.Need(i, plan->args, method);
        a.generation = PinRangeLocked(static_cast<uint64_t>(a.value), need > 0 ? static_cast<uint64_t>(need) : 0, &a.pin_base, &why);
        if (a.generation == 0) {
          throw DeviceError(std::string(method) + ": argument " + std::to_string(i) + " (device tensor): " + why,
                            kCodeBadAddress, static_cast<int64_t>(i));
        }
      }
    }
    if (stage_now) {
      api_->cuCtxSetCurrent(ctx_);
      StageArgsLocked(plan);
      for (LaunchArg& a : plan->args) {
        if (a.kind <= kArgHostInOut) a.host = nullptr;  // never touched off the JS thread
      }
      plan->prestaged = true;
    }
  } catch (...) {
    plan->Release();
    throw;
  }
}

void CudaDeviceCore::CopyResults(const Plan& plan, const char* method,
                                 const std::vector<std::pair<uint8_t*, uint64_t>>& hosts) {
  CheckOpen();  // the staging buffers are gone with a closed device
  CheckResultViews(plan.args, hosts, method);  // nothing is written unless all fit
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const LaunchArg& a = plan.args[i];
    if (a.kind != kArgHostOut && a.kind != kArgHostInOut) continue;
    CopyOutLocked(hosts[i].first, a.staged, a.stage_bytes);
    d2h_bytes_ += a.stage_bytes;
  }
}

uint64_t CudaDeviceCore::Launch(Plan* plan) {
  std::lock_guard<std::mutex> l(launch_mu_);
  CheckOpen();  // under the lock: Close() may have run while this launch waited
  return LaunchLocked(plan);
}

uint64_t CudaDeviceCore::LaunchLocked(Plan* plan) {
  Module* mod = plan->module.get();
  std::vector<LaunchArg>& args = plan->args;
  api_->cuCtxSetCurrent(ctx_);
  launches_++;
  cur_ = mod;
  started_ = false;
  failed_ = false;
  fail_message_.clear();
  orch_buffers_.clear();
  pending_count_ = 0;
  segment_ = 0;
  // Orchestration buffers are released when this scope ends, on success and on every
  // failure path, once the stream is idle (staging buffers belong to the plan).
  struct LaunchBuffers {
    CudaDeviceCore* d;
    ~LaunchBuffers() {
      std::lock_guard<std::mutex> m(d->mem_mu_);
      d->api_->cuStreamSynchronize(d->stream_);
      for (uint64_t b : d->orch_buffers_) { try { d->FreeLocked(b); } catch (...) {} }
      d->orch_buffers_.clear();
      d->cur_ = nullptr;
    }
  } buffers{this};
  if (!plan->prestaged) {
    std::lock_guard<std::mutex> m(mem_mu_);
    StageArgsLocked(plan);
  }
  // (the slot buffer is the device's, reused under launch_mu_: no allocation per launch)
  launch_slots_.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const LaunchArg& a = args[i];
    // host kinds: the staging buffer; a device tensor: pinned by Prepare (live when queued)
    launch_slots_[i] = a.kind <= kArgHostInOut ? static_cast<int64_t>(a.staged) : a.value;
  }
  mark_ns_ = SteadyNs();
  recording_ = (rec_mask_.load() & kTraceTasks) != 0;
  rec_kernels_.clear();
  const int64_t launch_start_ns = mark_ns_;
  const int rc = mod->entry(&rt_, launch_slots_.data());
  const int64_t entry_end_ns = SteadyNs();
  if (rc != 0 || failed_) {
    ApiWaitAll(this);
    const std::string msg = fail_message_.empty() ? "the orchestration returned " + std::to_string(rc) : fail_message_;
    throw DeviceError("kernel failure: " + msg, kCodeKernelFailure);
  }
  uint64_t ns = 0;
  if (started_) {
    float ms = 0;
    Check(api_->cuEventElapsedTime(&ms, ev_start_, ev_end_), "cuEventElapsedTime");
    ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  }
  if (recording_) FinishTraceLocked(launch_start_ns, entry_end_ns);
  // Results of host Out / InOut arguments, only for successful launches. A synchronous
  // launch runs on the JS thread, so its views are as Prepare validated them; a prestaged
  // (async) launch is copied back by CopyResults on the JS thread.
  if (!plan->prestaged) {
    std::lock_guard<std::mutex> m(mem_mu_);
    for (const LaunchArg& a : args) {
      if (a.kind != kArgHostOut && a.kind != kArgHostInOut) continue;
      CopyOutLocked(a.host, a.staged, a.stage_bytes);
      d2h_bytes_ += a.stage_bytes;
    }
  }
  return ns;
}

int CudaDeviceCore::ApiSubmit(void* ctx, TsptoKernelFn fn, const char* name, int32_t scope_id, const int64_t* args,
                              int32_t nargs, const TsptoAccess* accesses, int32_t naccesses) {
  (void)scope_id; (void)accesses; (void)naccesses;
  auto* self = static_cast<CudaDeviceCore*>(ctx);
  if (self->failed_) return 1;
  Module* m = self->cur_;
  const intptr_t index = reinterpret_cast<intptr_t>(fn) - 1;
  const int nslots = nargs - kDescriptorSlots;
  if (!m || index < 0 || index >= static_cast<intptr_t>(m->fns.size()) || nslots < 0 || nslots > kMaxSlots) {
    ApiFail(ctx, (std::string("bad submit of kernel '") + (name ? name : "?") + "'").c_str());
    return 1;
  }
  KernelArgs ka{};
  for (int i = 0; i < nslots; ++i) ka.v[i] = args[i];
  const int64_t* d = args + nslots;
  ka.lo_slot = d[0];
  ka.hi_slot = d[1];
  ka.start = d[2];
  ka.step = d[3];
  ka.trips = d[4];
  int64_t grid = d[5] < 1 ? 1 : d[5];
  // v2: at most the blocks the GPU holds at once (the kernel's bands cover every iteration)
  if (m->grid_cap[index] > 0 && grid > m->grid_cap[index]) grid = m->grid_cap[index];
  ka.err = static_cast<int64_t>(self->err_dev_);
  ka.errflag = static_cast<int64_t>(self->err_flag_dev_);
  try {
    const int64_t gs = m->gscratch[index];
    if (gs > 0) {
      const uint64_t need = static_cast<uint64_t>(gs) * static_cast<uint64_t>(grid);
      std::lock_guard<std::mutex> l(self->mem_mu_);
      if (self->gscratch_bytes_ < need) {
        // (recorded graph launches use the old scratch: they run first)
        if (self->pending_count_) self->FlushGraphLocked();
        if (self->gscratch_addr_) {
          self->api_->cuStreamSynchronize(self->stream_);
          self->FreeLocked(self->gscratch_addr_);
          self->gscratch_addr_ = 0;
          self->gscratch_bytes_ = 0;
        }
        self->gscratch_addr_ = self->AllocLocked(need);
        self->gscratch_bytes_ = need;
      }
      ka.gscratch = static_cast<int64_t>(self->gscratch_addr_);
    }
    if (!self->started_) {
      self->Check(self->api_->cuEventRecord(self->ev_start_, self->stream_), "cuEventRecord");
      self->started_ = true;
    }
    void* params[1 + kMaxTmaps] = {&ka};
    // TMA tensor maps: encoded when the tensor's address changed since the last launch
    // (under launch_mu_; cuLaunchKernel copies the parameters, so a later re-encode is safe)
    std::vector<TensorMapSlot>& maps = m->tmaps[index];
    for (size_t t = 0; t < maps.size(); ++t) {
      TensorMapSlot& ms = maps[t];
      const int64_t addr = ka.v[ms.spec.slot];
      if (addr != ms.addr) {
        TensorMapArgs ta = TensorMapEncodeArgs(ms.spec);
        const CUresult trc = self->api_->cuTensorMapEncodeTiled(ms.map, ta.dtype, ta.rank, reinterpret_cast<void*>(static_cast<intptr_t>(addr)), ta.dims, ta.strides,
                                                                ta.box, ta.element_strides, ta.interleave, ta.swizzle, ta.l2_promotion, ta.oob_fill);
        if (trc != 0) self->Check(trc, (std::string("cuTensorMapEncodeTiled for '") + m->names[index] + "'").c_str());
        ms.addr = addr;
      }
      params[1 + t] = ms.map;
    }
    if (self->recording_) {
      // DFX: an event pair around the launch (the pool grows to the launch's kernel count once)
      const size_t k = self->rec_kernels_.size();
      while (self->rec_events_.size() < 2 * (k + 1)) {
        CUevent ev = nullptr;
        self->Check(self->api_->cuEventCreate(&ev, 0), "cuEventCreate");
        self->rec_events_.push_back(ev);
      }
      self->rec_kernels_.push_back({m->names[index], SteadyNs()});
      self->Check(self->api_->cuEventRecord(self->rec_events_[2 * k], self->stream_), "cuEventRecord");
      const CUresult r = self->api_->cuLaunchKernel(m->fns[index], static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(m->block_threads), 1, 1,
                                                    static_cast<unsigned>(m->shared[index]), self->stream_, params, nullptr);
      if (r != 0) self->Check(r, (std::string("cuLaunchKernel of '") + m->names[index] + "'").c_str());
      self->Check(self->api_->cuEventRecord(self->rec_events_[2 * k + 1], self->stream_), "cuEventRecord");
      self->tasks_run_++;
      return 0;
    }
    if (self->graphs_ && m->kernels_version >= 2) {
      // recorded: the segment's graph launches it at the next flush (wait, free, scratch growth)
      if (self->pending_.size() <= self->pending_count_) self->pending_.emplace_back();
      GraphNodeDesc& nd = self->pending_[self->pending_count_++];
      nd.kernel = static_cast<int>(index);
      nd.grid = static_cast<uint32_t>(grid);
      nd.block = static_cast<uint32_t>(m->block_threads);
      nd.shared = static_cast<uint32_t>(m->shared[index]);
      nd.nmaps = static_cast<uint32_t>(maps.size());
      std::memcpy(nd.args(), &ka, sizeof ka);
      for (size_t t = 0; t < maps.size(); ++t) std::memcpy(nd.map(t), maps[t].map, kGraphMapBytes);
      return 0;
    }
    const CUresult lrc = self->api_->cuLaunchKernel(m->fns[index], static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(m->block_threads), 1, 1,
                                                    static_cast<unsigned>(m->shared[index]), self->stream_, params, nullptr);
    // (the message is built only on failure: no string per launch)
    if (lrc != 0) self->Check(lrc, (std::string("cuLaunchKernel of '") + m->names[index] + "'").c_str());
    self->tasks_run_++;
  } catch (const DeviceError& e) {
    ApiFail(ctx, e.what());
    return 1;
  }
  return 0;
}

// The recorded launch's trace (after its wait): one task per kernel on core 0 (the stream),
// its start / end the events' offsets from the first kernel's start event, anchored at that
// kernel's submit time on the host clock.
void CudaDeviceCore::FinishTraceLocked(int64_t start_ns, int64_t entry_end_ns) {
  trace_tasks_.clear();
  trace_names_.clear();
  const size_t n = rec_kernels_.size();
  const int64_t anchor = n ? rec_kernels_[0].submit_ns : start_ns;
  int64_t last_end = anchor;
  for (size_t i = 0; i < n; ++i) {
    float s_ms = 0, e_ms = 0;
    if (api_->cuEventElapsedTime(&s_ms, rec_events_[0], rec_events_[2 * i]) != 0) s_ms = 0;
    if (api_->cuEventElapsedTime(&e_ms, rec_events_[0], rec_events_[2 * i + 1]) != 0) e_ms = s_ms;
    trace_names_.push_back(rec_kernels_[i].name);
    TraceTask t;
    t.id = static_cast<uint32_t>(i);
    t.name = trace_names_.back().c_str();
    t.core = 0;
    t.dispatch_ns = rec_kernels_[i].submit_ns;
    t.start_ns = anchor + static_cast<int64_t>(static_cast<double>(s_ms) * 1e6);
    t.end_ns = anchor + static_cast<int64_t>(static_cast<double>(e_ms) * 1e6);
    if (t.end_ns > last_end) last_end = t.end_ns;
    trace_tasks_.push_back(std::move(t));
  }
  trace_.valid = true;
  trace_.mask = kTraceTasks;
  trace_.start_ns = start_ns;
  trace_.entry_end_ns = entry_end_ns;
  trace_.end_ns = std::max(last_end, SteadyNs());
  trace_.slots = launch_slots_;
  trace_.orch_buffers.clear();
  recording_ = false;
}

void CudaDeviceCore::FlushGraphLocked() {
  if (pending_count_ == 0 || cur_ == nullptr) { pending_count_ = 0; return; }
  Module* m = cur_;
  const size_t seg = segment_++;
  const size_t n = pending_count_;
  pending_count_ = 0;
  try {
    m->book.Decide(seg, pending_, n, &decision_);
    if (m->graphs.size() <= seg) m->graphs.resize(seg + 1);
    SegmentGraph& g = m->graphs[seg];
    void* ptrs[1 + kGraphMaps];
    KernelNodeParams kp{};
    auto params_of = [&](size_t i) {
      GraphNodeDesc& nd = pending_[i];
      ptrs[0] = nd.args();
      for (uint32_t t = 0; t < nd.nmaps; ++t) ptrs[1 + t] = nd.map(t);
      kp = KernelNodeParams{m->fns[static_cast<size_t>(nd.kernel)], nd.grid, 1, 1, nd.block, 1, 1, nd.shared, ptrs, nullptr, nullptr, nullptr};
    };
    if (decision_.rebuild || g.exec == nullptr) {
      if (g.exec) { api_->cuGraphExecDestroy(g.exec); g.exec = nullptr; }
      if (g.graph) { api_->cuGraphDestroy(g.graph); g.graph = nullptr; }
      Check(api_->cuGraphCreate(&g.graph, 0), "cuGraphCreate");
      g.nodes.assign(n, nullptr);
      for (size_t i = 0; i < n; ++i) {
        params_of(i);
        void* dep = i ? g.nodes[i - 1] : nullptr;  // a chain: the stream's order
        Check(api_->cuGraphAddKernelNode(&g.nodes[i], g.graph, i ? &dep : nullptr, i ? 1 : 0, &kp), "cuGraphAddKernelNode");
      }
      Check(api_->cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), "cuGraphInstantiateWithFlags");
    } else {
      for (size_t i : decision_.patch) {
        params_of(i);
        Check(api_->cuGraphExecKernelNodeSetParams(g.exec, g.nodes[i], &kp), "cuGraphExecKernelNodeSetParams");
      }
    }
    if (!started_) {
      Check(api_->cuEventRecord(ev_start_, stream_), "cuEventRecord");
      started_ = true;
    }
    Check(api_->cuGraphLaunch(g.exec, stream_), "cuGraphLaunch");
    tasks_run_ += n;
  } catch (const DeviceError& e) {
    m->book.Forget(seg);  // rebuilt next time
    ApiFail(this, e.what());
  }
}

int CudaDeviceCore::ApiWaitAll(void* ctx) {
  auto* self = static_cast<CudaDeviceCore*>(ctx);
  if (self->pending_count_) self->FlushGraphLocked();
  if (self->started_) self->api_->cuEventRecord(self->ev_end_, self->stream_);
  const int64_t queued = SteadyNs();
  self->enqueue_ns_ += static_cast<uint64_t>(queued - self->mark_ns_);
  const CUresult rc = self->api_->cuStreamSynchronize(self->stream_);
  self->mark_ns_ = SteadyNs();
  self->sync_ns_ += static_cast<uint64_t>(self->mark_ns_ - queued);
  if (rc != 0) {
    ApiFail(ctx, ("a kernel failed on the GPU: " + CuMessage(self->api_.get(), rc)).c_str());
    return 1;
  }
  if (self->err_host_ && reinterpret_cast<volatile int64_t*>(self->err_host_)[0] != 0) {
    int64_t rec[kErrWords] = {};
    const CUresult r1 = self->api_->cuMemcpyDtoHAsync(rec, self->err_dev_, sizeof rec, self->stream_);
    const CUresult r2 = self->api_->cuMemsetD8Async(self->err_dev_, 0, sizeof rec, self->stream_);
    self->api_->cuStreamSynchronize(self->stream_);
    self->err_host_[0] = 0;
    if (r1 == 0 && r2 == 0 && self->cur_ && self->cur_->report) self->cur_->report(&self->rt_, rec);
    else ApiFail(ctx, "a cuda kernel recorded a failure");
    return 1;
  }
  return self->failed_ ? 1 : 0;
}

int64_t CudaDeviceCore::ApiAlloc(void* ctx, int64_t nbytes) {
  auto* self = static_cast<CudaDeviceCore*>(ctx);
  try {
    std::lock_guard<std::mutex> l(self->mem_mu_);
    const uint64_t p = self->AllocLocked(static_cast<uint64_t>(nbytes < 0 ? 0 : nbytes));
    self->orch_buffers_.push_back(p);
    return static_cast<int64_t>(p);
  } catch (const DeviceError& e) {
    ApiFail(ctx, e.what());
    return 0;
  }
}

void CudaDeviceCore::ApiFree(void* ctx, int64_t addr) {
  auto* self = static_cast<CudaDeviceCore*>(ctx);
  if (self->pending_count_) self->FlushGraphLocked();  // recorded launches may use the buffer
  std::lock_guard<std::mutex> l(self->mem_mu_);
  for (auto it = self->orch_buffers_.begin(); it != self->orch_buffers_.end(); ++it) {
    if (*it == static_cast<uint64_t>(addr)) {
      self->api_->cuStreamSynchronize(self->stream_);
      try { self->FreeLocked(*it); } catch (...) {}
      self->orch_buffers_.erase(it);
      return;
    }
  }
}

void CudaDeviceCore::ApiFail(void* ctx, const char* message) {
  auto* self = static_cast<CudaDeviceCore*>(ctx);
  if (!self->failed_.exchange(true)) self->fail_message_ = message ? message : "unknown failure";
}

int CudaDeviceCore::ApiFailed(void* ctx) { return static_cast<CudaDeviceCore*>(ctx)->failed_ ? 1 : 0; }

}  // namespace tspto
