// The cuda platform's device: an NVIDIA GPU through the CUDA driver API, which is loaded at
// run time with dlopen("libcuda.so.1") (the addon never links CUDA, so it builds and loads on
// machines without it; opening a CudaDeviceCore there throws "no CUDA driver found").
//
// Same surface as DeviceCore (device.h), so the Node-API binding serves both:
//  - memory: one cuMemAlloc per allocation, recorded as (base, size, generation); foreign,
//    freed and interior addresses are rejected. Zero-filled on allocation.
//  - transfers: through a pinned staging buffer (cuMemHostAlloc) on the device's stream,
//    counted in stats like the cpu platform's.
//  - modules: a program's host orchestration (build/libentry.so, dlopen'd) plus its kernels
//    (build/program.fatbin, cuModuleLoadData) and the kernel table the library exports.
//  - launch: the LaunchPlan protocol of the cpu core (device.h): Prepare checks the argument
//    count and each host view's live length against the argBytes given at load (shared
//    checks, same errors), pins the allocations the launch names (a free while it is in
//    flight is deferred) and holds the module; with stage_now (launchAsync) it stages the
//    host inputs on the JS thread, and CopyResults copies the results back there after
//    re-checking the views; Plan::Release drops staging and pins.
//    The orchestration runs on the calling thread; each rt->submit is one
//    cuLaunchKernel on the device's stream (in order, so no dependency tracking); wait_all
//    synchronizes the stream and reads the kernels' failure record (host-mapped memory).
//    The device time is the CUDA-event time from the first kernel to the end.
#ifndef TSPTO_NATIVE_CUDA_DEVICE_H
#define TSPTO_NATIVE_CUDA_DEVICE_H

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_host.h"
#include "device.h"
#include "module_table.h"
#include "scheduler.h"
#include "tspto_abi.h"

namespace tspto {

struct CudaApi;  // driver entry points (cuda_device.cc)

class CudaDeviceCore {
 public:
  explicit CudaDeviceCore(const DeviceOptions& options);  // throws DeviceError(kCodeNoGpu) without a driver/GPU
  ~CudaDeviceCore();
  CudaDeviceCore(const CudaDeviceCore&) = delete;
  CudaDeviceCore& operator=(const CudaDeviceCore&) = delete;

  void Close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  uint64_t Alloc(uint64_t nbytes);
  // Frees now, or -- when launches in flight hold the allocation -- when the last of them
  // completes (returns true then). Either way the address is dead from this call on.
  bool Free(uint64_t addr);
  bool IsLive(uint64_t addr);
  void H2D(uint64_t addr, const void* src, uint64_t nbytes, bool counted = true);
  void D2H(void* dst, uint64_t addr, uint64_t nbytes, bool counted = true);
  void D2D(uint64_t dst, uint64_t src, uint64_t nbytes);

  // `path`: the artifact's build/libentry.so; build/program.fatbin is next to it.
  // `arg_bytes`: bytes of each entry parameter's tensor (-1 for scalars); empty = unknown.
  uint32_t LoadModule(const std::string& path, ArgLayout arg_bytes = {});
  // Removes the module from the table; launches already holding it still run (the module is
  // unloaded when the last of them lets go).
  void UnloadModule(uint32_t id);

  struct Module;
  // One launch from parse to completion (the cpu core's LaunchPlan, with this core's
  // staging buffers and pins). Release() must be called once the launch is over.
  struct Plan {
    CudaDeviceCore* device = nullptr;
    std::shared_ptr<Module> module;
    uint32_t module_id = 0;
    std::vector<LaunchArg> args;  // staged: device staging buffer; generation: pinned allocation
    bool prestaged = false;
    bool held = false;  // pins / staging to release
    void Release();
    ~Plan() { Release(); }
  };
  // Same contract as DeviceCore::Prepare / Launch / CopyResults.
  void Prepare(Plan* plan, const char* method, bool stage_now);
  uint64_t Launch(Plan* plan);
  void CopyResults(const Plan& plan, const char* method,
                   const std::vector<std::pair<uint8_t*, uint64_t>>& hosts);
  DeviceStats Stats();

  // DFX: mask & kTraceTasks records a CUDA event pair around each kernel launch of the
  // following launches (not through graphs); argument dumps and hardware counters are not
  // recorded on the GPU. The trace's times are host ns: each kernel's start / end are its
  // events' offsets from the launch's first event, anchored at that kernel's submit time.
  void SetRecording(uint32_t mask, uint64_t dump_bytes) { (void)dump_bytes; rec_mask_ = mask; }
  struct LaunchTrace {
    bool valid = false;
    uint32_t mask = 0;
    int64_t start_ns = 0, entry_end_ns = 0, end_ns = 0;
    std::vector<int64_t> slots;
    std::vector<std::pair<uint64_t, uint64_t>> orch_buffers;
  };
  // No per-task recording on the GPU yet: always "no trace".
  template <typename Fn>
  void TakeTrace(Fn fn) {
    const std::string why = "hardware counters and argument dumps are not recorded on the cuda platform";
    if (!trace_.valid) { fn(nullptr, no_tasks_, no_edges_, why); return; }
    fn(&trace_, trace_tasks_, no_edges_, why);
    trace_.valid = false;
    trace_tasks_.clear();
  }

 private:
  struct Alloc_ { uint64_t size; uint64_t generation; uint64_t pins = 0; };
  struct Context;  // the CUDA context, shared with modules that outlive the table

  void CheckOpen() const;
  void Check(int rc, const char* what);  // CUresult -> DeviceError
  uint64_t AllocLocked(uint64_t nbytes);  // mem_mu_ held
  bool FreeLocked(uint64_t addr, const char* op = "free");  // true: deferred (pinned)
  std::string DescribeNonLiveLocked(uint64_t addr) const;
  uint64_t PinRangeLocked(uint64_t addr, uint64_t nbytes, uint64_t* base, std::string* why);  // a view's address may lie inside the allocation
  uint64_t PinLocked(uint64_t addr, std::string* why);  // generation, or 0 with `why`
  void UnpinLocked(uint64_t addr, uint64_t generation);
  void CheckRange(uint64_t addr, uint64_t nbytes, const char* what);
  void Stage(uint64_t bytes);  // pinned staging of at least `bytes` (chunk size)
  void CopyInLocked(uint64_t dst, const void* src, uint64_t nbytes);   // mem_mu_ held
  void CopyOutLocked(void* dst, uint64_t src, uint64_t nbytes);        // mem_mu_ held
  uint64_t TakeStagingLocked(uint64_t nbytes, bool zero);  // a launch staging buffer
  void StageArgsLocked(Plan* plan);  // host kinds: staging buffers (+ inputs copied)
  void ReleasePlan(Plan* plan);
  uint64_t LaunchLocked(Plan* plan);

  // CUDA graphs (opt-in, TSPTO_CUDA_GRAPH=1 with v2 modules): the recorded launches of the
  // current segment become one graph launch (built once per segment, parameters patched).
  void FlushGraphLocked();
  static int ApiSubmit(void* ctx, TsptoKernelFn fn, const char* name, int32_t scope_id, const int64_t* args,
                       int32_t nargs, const TsptoAccess* accesses, int32_t naccesses);
  static int ApiWaitAll(void* ctx);
  static int64_t ApiAlloc(void* ctx, int64_t nbytes);
  static void ApiFree(void* ctx, int64_t addr);
  static void ApiFail(void* ctx, const char* message);
  static int ApiFailed(void* ctx);

  const DeviceOptions options_;
  std::shared_ptr<CudaApi> api_;
  std::shared_ptr<Context> context_;
  void* ctx_ = nullptr;     // CUcontext (the device's primary context)
  int device_ = 0;          // CUdevice
  void* stream_ = nullptr;  // CUstream
  void* ev_start_ = nullptr;
  void* ev_end_ = nullptr;
  TsptoRuntimeApi rt_{};

  std::mutex launch_mu_;
  std::mutex close_mu_;
  std::atomic<bool> closed_{false};

  std::mutex mem_mu_;  // allocations, staging, stream use outside launches
  std::map<uint64_t, Alloc_> allocs_;
  std::map<uint64_t, Alloc_> deferred_;  // freed while pinned: released at the last unpin
  uint64_t generation_ = 0;
  uint64_t bytes_in_use_ = 0;
  uint64_t capacity_ = 0;
  uint8_t* staging_ = nullptr;  // pinned
  uint64_t staging_bytes_ = 0;
  int64_t* err_host_ = nullptr;  // host-mapped flag word: a kernel recorded a failure
  uint64_t err_flag_dev_ = 0;    // its device address
  uint64_t err_dev_ = 0;         // the failure record (device memory, CUDA_ERR_WORDS int64)
  std::multimap<uint64_t, uint64_t> spare_;  // launch staging buffers kept for reuse: size -> address

  ModuleTable<Module> modules_;

  // per launch (launch_mu_)
  Module* cur_ = nullptr;
  bool started_ = false;
  std::atomic<bool> failed_{false};
  std::string fail_message_;
  std::vector<uint64_t> orch_buffers_;
  std::vector<int64_t> launch_slots_;  // the orchestration's slots of the current launch (under launch_mu_)
  std::vector<uint64_t> gscratch_;  // device scratch of kernels whose tiles do not fit in shared memory: address, bytes
  uint64_t gscratch_bytes_ = 0;
  uint64_t gscratch_addr_ = 0;
  bool graphs_ = false;                // TSPTO_CUDA_GRAPH=1 at device creation
  std::vector<GraphNodeDesc> pending_; // the segment's launches, recorded (capacity kept)
  size_t pending_count_ = 0;
  size_t segment_ = 0;                 // flushes so far in this launch
  GraphDecision decision_;

  std::atomic<uint64_t> launches_{0}, h2d_bytes_{0}, d2h_bytes_{0}, tasks_run_{0};
  std::atomic<uint64_t> enqueue_ns_{0}, sync_ns_{0};
  int64_t mark_ns_ = 0;  // the current launch's last enqueue / sync boundary (steady clock)
  std::deque<TraceTask> no_tasks_;
  // DFX (launch_mu_): the recording mask, the event pool (2 per kernel, kept), the current
  // launch's kernels, and the last recorded launch's trace
  std::atomic<uint32_t> rec_mask_{0};
  bool recording_ = false;
  std::vector<void*> rec_events_;
  struct RecordedKernel { std::string name; int64_t submit_ns; };
  std::vector<RecordedKernel> rec_kernels_;
  LaunchTrace trace_;
  std::deque<TraceTask> trace_tasks_;
  std::deque<std::string> trace_names_;
  void FinishTraceLocked(int64_t start_ns, int64_t entry_end_ns);
  std::vector<TraceEdge> no_edges_;
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_CUDA_DEVICE_H
