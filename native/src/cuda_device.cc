// The cuda device (see cuda_device.h). The CUDA driver API is declared here (the few types
// and entry points used) and resolved with dlopen/dlsym at run time.
#include "cuda_device.h"

#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

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

  ~CudaApi() { if (lib) dlclose(lib); }
};

namespace {

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
  return api;
}

constexpr int kDescriptorSlots = 6;  // lo_slot, hi_slot, start, step, trips, grid (src/codegen/cuda)
constexpr int kMaxSlots = 48;        // CUDA_MAX_SLOTS
constexpr int kErrWords = 16;        // CUDA_ERR_WORDS
constexpr uint64_t kStagingChunk = 64ull << 20;

// The kernel parameter block (TsptoCudaArgs in src/codegen/cuda/prelude.ts).
struct KernelArgs {
  int64_t v[kMaxSlots];
  int64_t lo_slot, hi_slot, start, step, trips;
  int64_t gscratch;
  int64_t err;      // device memory: the failure record
  int64_t errflag;  // host-mapped: set after a failure was recorded
};


}  // namespace

struct CudaDeviceCore::Module {
  void* handle = nullptr;
  CUmodule cumod = nullptr;
  int (*entry)(const TsptoRuntimeApi*, const int64_t*) = nullptr;
  void (*report)(const TsptoRuntimeApi*, const int64_t*) = nullptr;
  std::vector<CUfunction> fns;
  std::vector<std::string> names;
  std::vector<int64_t> shared, gscratch;
  int block_threads = 256;
  std::string path;
};

void CudaDeviceCore::Check(int rc, const char* what) {
  if (rc == 0) return;
  if (rc == 2) throw DeviceError(std::string(what) + ": out of GPU memory (" + CuMessage(api_.get(), rc) + "), " +
                                 std::to_string(bytes_in_use_) + " bytes in use by this device", kCodeOutOfMemory);
  throw DeviceError(std::string(what) + " failed: " + CuMessage(api_.get(), rc), kCodeCuda);
}

CudaDeviceCore::CudaDeviceCore(const DeviceOptions& options) : options_(options) {
  api_ = LoadDriver();
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
    std::lock_guard<std::mutex> m(modules_mu_);
    for (auto& kv : modules_) {
      if (kv.second->cumod) api_->cuModuleUnload(kv.second->cumod);
      if (kv.second->handle) dlclose(kv.second->handle);
    }
    modules_.clear();
  }
  std::lock_guard<std::mutex> m(mem_mu_);
  for (auto& kv : allocs_) api_->cuMemFree(kv.first);
  allocs_.clear();
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
  if (stream_) api_->cuStreamDestroy(stream_);
  stream_ = ev_start_ = ev_end_ = nullptr;
  api_->cuDevicePrimaryCtxRelease(device_);
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

void CudaDeviceCore::FreeLocked(uint64_t addr) {
  auto it = allocs_.find(addr);
  if (it == allocs_.end()) throw DeviceError("free: " + Hex(addr) + " is not the start of a live allocation");
  bytes_in_use_ -= it->second.size;
  api_->cuMemFree(addr);
  allocs_.erase(it);
}

uint64_t CudaDeviceCore::Alloc(uint64_t nbytes) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  return AllocLocked(nbytes);
}

void CudaDeviceCore::Free(uint64_t addr) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  api_->cuStreamSynchronize(stream_);
  FreeLocked(addr);
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
  throw DeviceError(std::string(what) + ": [" + Hex(addr) + ", +" + std::to_string(nbytes) + ") is not inside one live allocation");
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
  Stage(nbytes);
  for (uint64_t off = 0; off < nbytes; off += staging_bytes_) {
    const uint64_t n = nbytes - off < staging_bytes_ ? nbytes - off : staging_bytes_;
    std::memcpy(staging_, static_cast<const uint8_t*>(src) + off, n);
    Check(api_->cuMemcpyHtoDAsync(addr + off, staging_, n, stream_), "cuMemcpyHtoDAsync");
    Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }
  if (counted) h2d_bytes_ += nbytes;
}

void CudaDeviceCore::D2H(void* dst, uint64_t addr, uint64_t nbytes, bool counted) {
  CheckOpen();
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  CheckRange(addr, nbytes, "d2h");
  Stage(nbytes);
  for (uint64_t off = 0; off < nbytes; off += staging_bytes_) {
    const uint64_t n = nbytes - off < staging_bytes_ ? nbytes - off : staging_bytes_;
    Check(api_->cuMemcpyDtoHAsync(staging_, addr + off, n, stream_), "cuMemcpyDtoHAsync");
    Check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
    std::memcpy(static_cast<uint8_t*>(dst) + off, staging_, n);
  }
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
uint32_t CudaDeviceCore::LoadModule(const std::string& path) {
  CheckOpen();
  auto m = std::make_shared<Module>();
  m->path = path;
  const size_t slash = path.rfind('/');
  const std::string fatbin_path = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "program.fatbin";
  std::ifstream in(fatbin_path, std::ios::binary);
  if (!in) throw DeviceError("loadModule: cannot read " + fatbin_path);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  m->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle) {
    const char* why = dlerror();
    throw DeviceError("loadModule: cannot load " + path + ": " + (why ? why : "dlopen failed"));
  }
  auto fail = [&](const std::string& msg) {
    dlclose(m->handle);
    m->handle = nullptr;
    throw DeviceError("loadModule: " + path + ": " + msg);
  };
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
  std::lock_guard<std::mutex> l(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  CUresult rc = api_->cuModuleLoadData(&m->cumod, image.data());
  if (rc != 0) fail("cuModuleLoadData of " + fatbin_path + " failed: " + CuMessage(api_.get(), rc) +
                    " (built for another GPU architecture? set TSPTO_CUDA_ARCH to this GPU's, e.g. sm_80, and rebuild)");
  for (int i = 0; i < *count; ++i) {
    CUfunction f = nullptr;
    rc = api_->cuModuleGetFunction(&f, m->cumod, names[i]);
    if (rc != 0) { api_->cuModuleUnload(m->cumod); fail(std::string("kernel ") + names[i] + " not found in " + fatbin_path); }
    if (shared[i] > 48 * 1024) {
      rc = api_->cuFuncSetAttribute(f, kCuFuncAttrMaxDynamicShared, static_cast<int>(shared[i]));
      if (rc != 0) { api_->cuModuleUnload(m->cumod); fail(std::string("kernel ") + names[i] + " needs " + std::to_string(shared[i]) + " bytes of shared memory: " + CuMessage(api_.get(), rc)); }
    }
    m->fns.push_back(f);
    m->names.push_back(names[i]);
    m->shared.push_back(shared[i]);
    m->gscratch.push_back(gscratch[i]);
  }
  std::lock_guard<std::mutex> ml(modules_mu_);
  const uint32_t id = next_module_id_++;
  modules_[id] = m;
  module_loads_++;
  return id;
}

void CudaDeviceCore::UnloadModule(uint32_t id) {
  CheckOpen();
  std::lock_guard<std::mutex> l(launch_mu_);
  std::shared_ptr<Module> m;
  {
    std::lock_guard<std::mutex> ml(modules_mu_);
    auto it = modules_.find(id);
    if (it == modules_.end()) throw DeviceError("unloadModule: no module " + std::to_string(id));
    m = it->second;
    modules_.erase(it);
  }
  std::lock_guard<std::mutex> ml(mem_mu_);
  api_->cuCtxSetCurrent(ctx_);
  api_->cuStreamSynchronize(stream_);
  if (m->cumod) api_->cuModuleUnload(m->cumod);
  if (m->handle) dlclose(m->handle);
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
    s.capacity = capacity_;
  }
  {
    std::lock_guard<std::mutex> l(modules_mu_);
    s.modules_loaded = modules_.size();
  }
  s.module_loads = module_loads_;
  s.tasks_run = tasks_run_;
  return s;
}

// ------------------------------------------------------------------ launch
uint64_t CudaDeviceCore::Launch(uint32_t module_id, const std::vector<LaunchArg>& args) {
  CheckOpen();
  std::lock_guard<std::mutex> l(launch_mu_);
  CheckOpen();
  return LaunchLocked(module_id, args);
}

uint64_t CudaDeviceCore::LaunchLocked(uint32_t module_id, const std::vector<LaunchArg>& args) {
  std::shared_ptr<Module> mod;
  {
    std::lock_guard<std::mutex> ml(modules_mu_);
    auto it = modules_.find(module_id);
    if (it == modules_.end()) throw DeviceError("launch: no module " + std::to_string(module_id) + " (unloaded?)");
    mod = it->second;
  }
  api_->cuCtxSetCurrent(ctx_);
  launches_++;
  cur_ = mod.get();
  started_ = false;
  failed_ = false;
  fail_message_.clear();
  orch_buffers_.clear();
  std::vector<int64_t> slots(args.size());
  std::vector<uint64_t> staged(args.size(), 0);  // launch staging buffers (device addresses)
  auto release = [&]() {
    std::lock_guard<std::mutex> m(mem_mu_);
    api_->cuStreamSynchronize(stream_);
    for (size_t i = 0; i < args.size(); ++i) {
      if (!staged[i]) continue;
      spare_.emplace(allocs_[staged[i]].size, staged[i]);  // kept for the next launch of this size
    }
    for (uint64_t b : orch_buffers_) { try { FreeLocked(b); } catch (...) {} }
    orch_buffers_.clear();
  };
  try {
    {
      std::lock_guard<std::mutex> m(mem_mu_);
      for (size_t i = 0; i < args.size(); ++i) {
        const LaunchArg& a = args[i];
        if (a.kind <= kArgHostInOut) {
          const uint64_t size = a.host_bytes == 0 ? 64 : (a.host_bytes + 63) / 64 * 64;
          auto it = spare_.find(size);
          if (it != spare_.end()) { staged[i] = it->second; spare_.erase(it); } else { staged[i] = AllocLocked(a.host_bytes); }
          slots[i] = static_cast<int64_t>(staged[i]);
        } else if (a.kind == kArgDevice) {
          if (!allocs_.count(static_cast<uint64_t>(a.value))) {
            throw DeviceError("launch: argument " + std::to_string(i) + " (" + Hex(static_cast<uint64_t>(a.value)) + ") is not a live allocation of this device");
          }
          slots[i] = a.value;
        } else {
          slots[i] = a.value;
        }
      }
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      if (a.kind == kArgHostIn || a.kind == kArgHostInOut) {
        H2D(staged[i], a.host, a.host_bytes);
      } else if (a.kind == kArgHostOut) {
        Check(api_->cuMemsetD8Async(staged[i], 0, a.host_bytes, stream_), "cuMemsetD8Async");
      }
    }
    const int rc = mod->entry(&rt_, slots.data());
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
    for (size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      if (a.kind == kArgHostOut || a.kind == kArgHostInOut) D2H(a.host, staged[i], a.host_bytes);
    }
    release();
    cur_ = nullptr;
    return ns;
  } catch (...) {
    release();
    cur_ = nullptr;
    throw;
  }
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
  const int64_t grid = d[5] < 1 ? 1 : d[5];
  ka.err = static_cast<int64_t>(self->err_dev_);
  ka.errflag = static_cast<int64_t>(self->err_flag_dev_);
  try {
    const int64_t gs = m->gscratch[index];
    if (gs > 0) {
      const uint64_t need = static_cast<uint64_t>(gs) * static_cast<uint64_t>(grid);
      std::lock_guard<std::mutex> l(self->mem_mu_);
      if (self->gscratch_bytes_ < need) {
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
    void* params[] = {&ka};
    self->Check(self->api_->cuLaunchKernel(m->fns[index], static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(m->block_threads), 1, 1,
                                           static_cast<unsigned>(m->shared[index]), self->stream_, params, nullptr),
                (std::string("cuLaunchKernel of '") + m->names[index] + "'").c_str());
    self->tasks_run_++;
  } catch (const DeviceError& e) {
    ApiFail(ctx, e.what());
    return 1;
  }
  return 0;
}

int CudaDeviceCore::ApiWaitAll(void* ctx) {
  auto* self = static_cast<CudaDeviceCore*>(ctx);
  if (self->started_) self->api_->cuEventRecord(self->ev_end_, self->stream_);
  const CUresult rc = self->api_->cuStreamSynchronize(self->stream_);
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
