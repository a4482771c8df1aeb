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
  uint64_t host_bytes = 0;
};

struct DeviceStats {
  uint64_t launches, h2d_bytes, d2h_bytes, bytes_in_use, live_allocations, capacity;
  uint64_t modules_loaded, module_loads, tasks_run;
};

class DeviceCore {
 public:
  explicit DeviceCore(const DeviceOptions& options);  // reserves memory, starts threads
  ~DeviceCore();                                       // Close()
  DeviceCore(const DeviceCore&) = delete;
  DeviceCore& operator=(const DeviceCore&) = delete;

  // Idempotent: waits for a running launch, joins threads, unloads modules, frees memory.
  void Close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  uint64_t Alloc(uint64_t nbytes);
  void Free(uint64_t addr);
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

  uint32_t LoadModule(const std::string& path);
  void UnloadModule(uint32_t id);

  // Runs one launch to completion and returns the device time in ns. Throws DeviceError.
  uint64_t Launch(uint32_t module_id, const std::vector<LaunchArg>& args);

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
  struct Module {
    void* handle;
    EntryFn entry;
    std::string path;
  };

  void CheckOpen() const;  // throws "device is closed"
  void RecordFailure(const std::string& message);
  uint64_t LaunchLocked(uint32_t module_id, const std::vector<LaunchArg>& args);  // launch_mu_ held

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
  std::unique_ptr<Arena> arena_;
  TsptoRuntimeApi api_{};
  std::unique_ptr<Scheduler> scheduler_;

  std::mutex launch_mu_;  // one launch at a time; Close and UnloadModule take it too
  std::mutex close_mu_;   // serializes Close
  std::atomic<bool> closed_{false};

  std::mutex modules_mu_;
  std::map<uint32_t, Module> modules_;
  uint32_t next_module_id_ = 1;
  std::atomic<uint64_t> module_loads_{0};

  // Per-launch failure state (reset at launch start).
  std::atomic<bool> failed_{false};
  std::mutex fail_mu_;
  std::string fail_message_;

  // Orchestration buffers (rt->alloc) of the running launch; freed at launch end.
  std::mutex orch_mu_;
  std::vector<uint64_t> orch_buffers_;

  uint32_t record_mask_ = 0;   // launch_mu_
  uint64_t dump_bytes_ = 0;    // launch_mu_
  LaunchTrace trace_;          // launch_mu_
  std::atomic<bool> recording_{false};

  std::vector<int64_t> slots_;     // launch_mu_: entry argument slots (reused)
  std::vector<uint64_t> staging_;  // launch_mu_: staging buffers of host arguments

  std::atomic<uint64_t> launches_{0}, h2d_bytes_{0}, d2h_bytes_{0};
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_DEVICE_H
