// One tspto device (the cpu platform): memory arena + module table + scheduler, and the
// launch protocol of the ABI (native/include/tspto_abi.h). Independent of Node-API so the
// launch can run on any thread; the binding (addon.cc) converts JS values to LaunchArgs and
// DeviceErrors to JS Errors.
//
// Threading: launches are serialized by launch_mu_ (a sync launch waits for a running async
// one). Memory and module operations may be called from the JS thread while an async launch
// runs; the arena and module table have their own locks. Close() waits for a running launch.
#ifndef TSPTO_NATIVE_DEVICE_H
#define TSPTO_NATIVE_DEVICE_H

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arena.h"
#include "module_table.h"
#include "scheduler.h"
#include "tspto_abi.h"

namespace tspto {

struct DeviceOptions {
  uint32_t device_id = 0;
  uint32_t core_threads = 1;
  uint32_t sched_threads = 1;
  uint64_t scratch_bytes = 0;
  uint64_t memory_bytes = 0;
  uint32_t ring_task_window = 16;
  uint64_t ring_heap = 1 << 20;
  uint64_t ring_dep_pool = 1 << 16;
};

// Argument kinds of a launch (the `kinds` array of Device.launch).
enum ArgKind : uint8_t {
  kArgHostIn = 0,     // host view, staged and uploaded
  kArgHostOut = 1,    // host view, zeroed staging buffer, downloaded after the launch
  kArgHostInOut = 2,  // both
  kArgDevice = 3,     // device address of a live allocation
  kArgInt = 4,        // int64 value
  kArgFloat = 5,      // bit pattern of a double
  kArgBool = 6,       // 0 / 1
};

inline const char* ArgKindName(uint8_t kind) {
  switch (kind) {
    case kArgHostIn: return "host In";
    case kArgHostOut: return "host Out";
    case kArgHostInOut: return "host InOut";
    case kArgDevice: return "device tensor";
    case kArgInt: return "int scalar";
    case kArgFloat: return "float scalar";
    case kArgBool: return "bool scalar";
    default: return "unknown kind";
  }
}

struct LaunchArg {
  uint8_t kind = kArgInt;
  int64_t value = 0;          // slot value for kinds 3..6
  uint8_t* host = nullptr;    // host bytes for kinds 0..2
  uint64_t host_bytes = 0;    // live byte length of the view when the launch was parsed
  // Set by DeviceCore::Prepare:
  uint64_t stage_bytes = 0;   // host kinds: bytes staged/copied (validated <= host_bytes)
  uint64_t staged = 0;        // host kinds: staging buffer (device address), 0 = none yet
  uint64_t generation = 0;    // device kind: the pinned allocation's generation
  uint64_t pin_base = 0;      // device kind: the pinned allocation's start (a view's address lies inside it)
};

// What a program uses of each launch slot (parameters, then dynamic dimensions), given at
// load (loadModule's argBytes). Empty: unknown (launches then stage each host view whole).
struct ArgLayout {
  std::vector<int64_t> bytes;               // per slot: tensor bytes (the static part), -1: a scalar
  std::vector<std::vector<uint32_t>> dims;  // per slot: the slots holding its dynamic extents
  bool empty() const { return bytes.empty(); }
  size_t size() const { return bytes.size(); }
  // The bytes slot i's tensor spans in this launch (bytes[i] times its dynamic extents), or
  // -1 (a scalar, or unknown). A dynamic extent below 1, or a product past 2^62, is a
  // TSPTO_BAD_ARGUMENT naming the slot.
  int64_t Need(size_t i, const std::vector<struct LaunchArg>& args, const char* method) const;
};

// A program library loaded on a device. Shared by the module table and every launch that
// is queued or running with it, so unloading (or closing) never pulls code from under a
// launch: dlclose happens when the last holder lets go.
struct Module {
  void* handle = nullptr;
  int (*entry)(const TsptoRuntimeApi*, const int64_t*) = nullptr;
  std::string path;
  // Bytes of each launch slot's tensor (ArgLayout), given at load.
  ArgLayout arg_bytes;
  // Launch buffers (rt->alloc: pl.createTensor) kept between the module's launches: the
  // k-th buffer a launch asks for reuses entry k when it is large enough, zero-filled again
  // (DeviceCore::ApiAlloc), so a launch allocates nothing once the module has run. Only the
  // launch that runs the module touches them (launches of a device run one at a time);
  // they are released with the module (unloadModule / close, after the last launch holding
  // it). Buffers of kMaxCachedBufferBytes or more are not kept.
  static constexpr uint64_t kMaxCachedBufferBytes = 64ull << 20;
  struct LaunchBuffer {
    uint64_t addr = 0;
    uint64_t bytes = 0;
  };
  std::vector<LaunchBuffer> buffers;
  std::shared_ptr<Arena> arena;  // where `buffers` live (a released arena ignores the frees)
  ~Module();
};

// One launch from parse to completion. Prepare() validates it against the module (argument
// count, each host view's live length against the bytes the program uses) and pins the
// device allocations it names; with `stage_now` (asynchronous launches) it also stages the
// host arguments immediately, on the calling (JS) thread, so the launch never touches a
// JS-owned buffer from another thread. Release() frees the staging and drops the pins; it
// must be called once the launch is over (the destructor does it as a backstop).
struct LaunchPlan {
  class DeviceCore* device = nullptr;
  std::shared_ptr<Module> module;
  uint32_t module_id = 0;
  std::vector<LaunchArg> args;
  bool prestaged = false;
  bool held = false;  // pins / staging to release
  void Release();
  ~LaunchPlan() { Release(); }
};

// Launch argument checks shared by the cpu (DeviceCore) and cuda (CudaDeviceCore) cores, so
// both give the same errors. `expect`: the module's arg_bytes (empty = unknown).
// The argument count against the program's parameters (TSPTO_BAD_ARGUMENT).
void CheckArgCount(const std::vector<LaunchArg>& args, const ArgLayout& expect,
                   const char* method);
// A host-kind argument: its view's LIVE length must cover the bytes the program uses
// (TSPTO_HOST_VIEW naming argument i); sets a->stage_bytes to exactly those bytes.
void CheckHostArg(LaunchArg* a, size_t i, const ArgLayout& expect, const std::vector<LaunchArg>& args,
                  const char* method);
// Before the results of a prestaged launch are copied back: each Out/InOut view
// (`hosts[i]`: current pointer and live length) still holds its stage_bytes (TSPTO_HOST_VIEW).
void CheckResultViews(const std::vector<LaunchArg>& args,
                      const std::vector<std::pair<uint8_t*, uint64_t>>& hosts, const char* method);

struct DeviceStats {
  uint64_t launches, h2d_bytes, d2h_bytes, bytes_in_use, live_allocations, pending_frees, capacity;
  uint64_t modules_loaded, module_loads, tasks_run;
  // cuda: host time of launches split at the wait, cumulative ns: enqueueing (the orchestration
  // up to its wait: argument staging excluded) and synchronizing (the wait). 0 on other devices.
  uint64_t enqueue_ns = 0, sync_ns = 0;
};

class DeviceCore {
 public:
  using Plan = LaunchPlan;  // the binding's launch plan type (CudaDeviceCore has its own)
  explicit DeviceCore(const DeviceOptions& options);  // reserves memory, starts threads
  ~DeviceCore();                                       // Close()
  DeviceCore(const DeviceCore&) = delete;
  DeviceCore& operator=(const DeviceCore&) = delete;

  // Idempotent: waits for a running launch, joins threads, unloads modules, frees memory.
  void Close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  uint64_t Alloc(uint64_t nbytes);
  // Frees now, or -- when launches in flight hold the allocation -- when the last of them
  // completes (returns true then). Either way the address is dead from this call on.
  bool Free(uint64_t addr);
  bool IsLive(uint64_t addr);
  // `counted`: a host<->device transfer (stats). Device-side accesses by the interp
  // platform's executor (which plays the device) are not transfers and pass false.
  void H2D(uint64_t addr, const void* src, uint64_t nbytes, bool counted = true);
  void D2H(void* dst, uint64_t addr, uint64_t nbytes, bool counted = true);
  // The host pointer of device range [addr, addr + nbytes), checked against the arena's
  // records like a copy (for in-place collectives, native/src/mpi.cc). Not a transfer.
  uint8_t* Resolve(const char* op, uint64_t addr, uint64_t nbytes) {
    CheckOpen();
    arena_->CheckRange(op, addr, nbytes);
    return reinterpret_cast<uint8_t*>(addr);
  }

  // `arg_bytes`: bytes of each entry parameter's tensor (-1 for scalars); empty = unknown.
  uint32_t LoadModule(const std::string& path, ArgLayout arg_bytes = {});
  // Removes the module from the table; launches already holding it still run.
  void UnloadModule(uint32_t id);

  // Resolves the module, checks the arguments and pins device allocations (see LaunchPlan).
  // `method` prefixes messages. Throws DeviceError (the plan is released).
  void Prepare(LaunchPlan* plan, const char* method, bool stage_now);
  // Runs a prepared launch to completion and returns the device time in ns. Throws
  // DeviceError. A plan that was not prestaged is staged here and its Out/InOut results are
  // copied to the host views on success; a prestaged plan leaves that to the caller
  // (CopyResults, on the JS thread).
  uint64_t Launch(LaunchPlan* plan);
  // Copies the staged Out/InOut results of a completed prestaged launch into `hosts`
  // (current view pointer and live length of each argument; index = argument).
  void CopyResults(const LaunchPlan& plan, const char* method,
                   const std::vector<std::pair<uint8_t*, uint64_t>>& hosts);
  Arena& arena() { return *arena_; }

  DeviceStats Stats();

  // DFX: TraceFlags recorded by the following launches (0 = off) and the byte cap of the
  // argument snapshots (0 = whole regions).
  void SetRecording(uint32_t mask, uint64_t dump_bytes) {
    std::lock_guard<std::mutex> lock(launch_mu_);
    record_mask_ = mask;
    dump_bytes_ = dump_bytes;
  }
  // The trace of the last launch that recorded (valid until the next launch).
  struct LaunchTrace {
    bool valid = false;
    uint32_t mask = 0;
    int64_t start_ns = 0, entry_end_ns = 0, end_ns = 0;
    std::vector<int64_t> slots;  // entry argument slots (device addresses of tensors)
    std::vector<std::pair<uint64_t, uint64_t>> orch_buffers;  // rt->alloc: address, bytes
  };
  // Calls fn(trace, tasks, edges, pmu_error) under the launch lock; marks the trace taken.
  template <typename Fn>
  void TakeTrace(Fn fn) {
    std::lock_guard<std::mutex> lock(launch_mu_);
    if (!trace_.valid) {
      fn(nullptr, scheduler_->trace_tasks(), scheduler_->trace_edges(), scheduler_->pmu_error());
      return;
    }
    trace_.valid = false;
    fn(&trace_, scheduler_->trace_tasks(), scheduler_->trace_edges(), scheduler_->pmu_error());
  }

 private:
  using EntryFn = int (*)(const TsptoRuntimeApi*, const int64_t*);

  void CheckOpen() const;  // throws "device is closed"
  void RecordFailure(const std::string& message);
  uint64_t LaunchLocked(LaunchPlan* plan);  // launch_mu_ held

  // TsptoRuntimeApi callbacks; ctx is the DeviceCore.
  static int ApiSubmit(void* ctx, TsptoKernelFn fn, const char* name, int32_t scope_id,
                       const int64_t* args, int32_t nargs, const TsptoAccess* accesses,
                       int32_t naccesses);
  static int ApiWaitAll(void* ctx);
  static int64_t ApiAlloc(void* ctx, int64_t nbytes);
  static void ApiFree(void* ctx, int64_t addr);
  static void ApiFail(void* ctx, const char* message);
  static int ApiFailed(void* ctx);

  const DeviceOptions options_;
  std::shared_ptr<Arena> arena_;  // shared with the modules' launch buffers
  TsptoRuntimeApi api_{};
  std::unique_ptr<Scheduler> scheduler_;

  std::mutex launch_mu_;  // one launch at a time; Close and UnloadModule take it too
  std::mutex close_mu_;   // serializes Close
  std::atomic<bool> closed_{false};

  ModuleTable<Module> modules_;

  // Per-launch failure state (reset at launch start).
  std::atomic<bool> failed_{false};
  std::mutex fail_mu_;
  std::string fail_message_;

  // Orchestration buffers (rt->alloc) of the running launch: those not kept by its module
  // (freed at launch end) and the module's kept ones it uses (released to the module).
  std::mutex orch_mu_;
  std::vector<uint64_t> orch_buffers_;
  std::vector<uint64_t> orch_kept_;  // orch_mu_: module buffers in use by this launch
  Module* orch_module_ = nullptr;    // orch_mu_: the running launch's module
  size_t orch_next_ = 0;             // orch_mu_: rt->alloc calls so far in this launch

  uint32_t record_mask_ = 0;   // launch_mu_
  uint64_t dump_bytes_ = 0;    // launch_mu_
  LaunchTrace trace_;          // launch_mu_
  std::atomic<bool> recording_{false};

  std::vector<int64_t> slots_;     // launch_mu_: entry argument slots (reused)

  std::atomic<uint64_t> launches_{0}, h2d_bytes_{0}, d2h_bytes_{0};
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_DEVICE_H
