// Task scheduler of one device: a persistent pool of core threads fed from a bounded task
// ring with dependency tracking.
//
// * The ring has `window` slots; submission n uses slot n % window and waits until that
//   slot's previous task has finished. Two more budgets give back-pressure like the
//   device's ring: `heap` bytes of copied task arguments/accesses and `dep_pool` dependency
//   edges in flight. A submission that does not fit waits for running tasks to finish (a
//   submission into an empty ring is always accepted, so no task can wait forever). A task
//   whose arguments alone exceed the whole heap could never fit: Submit fails at once with
//   a deadlock message naming RunConfig.ringHeap.
// * Dependencies are derived at submission from the task's accesses: the new task waits
//   for every earlier, unfinished task with an overlapping region where at least one of the
//   two accesses writes (RAW, WAR, WAW). Regions are byte ranges or tensor windows (see
//   TsptoAccess): two windows of one tensor overlap only when their boxes do, so tasks on
//   disjoint rows/columns of a tensor run in parallel. Tasks without conflicts run in parallel.
// * Core threads take ready tasks in submission order. Each owns a 64-byte-aligned scratch
//   arena; the runtime appends [scratch address, runtime-api address] to the task's slots.
// * Idle core threads poll for work for a short window (kSpinNs), then park on a condition
//   variable: no CPU when idle. A parked thread is woken only for work the threads awake
//   will not take (WakeCores): the orchestration thread counts as one of them, since it runs
//   ready tasks itself while it waits (WaitAll, a full ring) with a scratch arena of its own.
//   A launch whose tasks form a chain (a transformer layer's scopes) therefore runs on the
//   orchestration thread without one hand-off between threads; independent tasks beyond the
//   one it takes wake core threads. Never more than core_threads tasks run at once
//   (running_ counts them, the orchestration's included).
// * The last task submitted is held back until the next Submit, so that it cannot be taken
//   by a core thread before the orchestration waits: a launch of one small task costs no
//   hand-off, one of two row bands one.
//
// Submit/WaitAll are called by the launch's orchestration thread (one launch at a time per
// device); they are rejected on core threads (a kernel cannot submit or wait).
#ifndef TSPTO_NATIVE_SCHEDULER_H
#define TSPTO_NATIVE_SCHEDULER_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tspto_abi.h"

namespace tspto {

struct SchedulerConfig {
  uint32_t device_id = 0;
  uint32_t core_threads = 1;
  uint64_t scratch_bytes = 0;
  uint32_t window = 16;     // ring task slots
  uint64_t heap = 1 << 20;  // bytes of task args + accesses in flight
  uint64_t dep_pool = 1 << 16;  // dependency edges in flight
};

// What the scheduler needs from its device.
// DFX recording of one launch (Scheduler::BeginLaunch with record != 0). Only touched when
// recording is on: the hot path pays one branch per task.
struct TraceAccess {
  TsptoAccess access;
  std::vector<uint8_t> before, after;  // first dump_bytes bytes of the region (args dump)
};
struct TraceTask {
  uint32_t id = 0;  // submission order within the launch
  const char* name = nullptr;
  int32_t scope = 0;
  int32_t core = -1;
  int64_t dispatch_ns = 0, start_ns = 0, end_ns = 0;
  int64_t cycles = -1, instructions = -1;
  std::vector<TraceAccess> accesses;
};
struct TraceEdge {
  uint32_t from, to;
  int32_t from_access, to_access;  // indices into the tasks' accesses
};
enum TraceFlags : uint32_t { kTraceTasks = 1, kTraceDump = 2, kTracePmu = 4 };

struct SchedulerHooks {
  // Set once a failure has been recorded: queued tasks are then skipped (not executed).
  const std::atomic<bool>* failed = nullptr;
  // Records a failure (first message wins). Used for exceptions escaping a kernel.
  std::function<void(const std::string&)> fail;
  // Value of the runtime-api slot appended to every task's args.
  int64_t api_address = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, SchedulerHooks hooks);  // starts the core threads
  ~Scheduler();  // Shutdown()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues one task (args and accesses are copied). Blocks while the ring is full. Returns
  // "" on success or the reason the task was rejected (bad arguments, core thread, closed).
  std::string Submit(TsptoKernelFn fn, const char* name, int32_t scope_id, const int64_t* args,
                     int32_t nargs, const TsptoAccess* accesses, int32_t naccesses);
  // Blocks until every submitted task has finished. Returns false on a core thread.
  bool WaitAll();
  // Starts a launch: resets the "last task end" clock and the trace. `record` is a mask of
  // TraceFlags (0: nothing recorded); `dump_bytes` caps the bytes of each access copied
  // before/after a task when kTraceDump is on (0 = whole region).
  void BeginLaunch(uint32_t record = 0, uint64_t dump_bytes = 0);
  // The trace of the current/last launch (valid after WaitAll, until the next BeginLaunch).
  const std::deque<TraceTask>& trace_tasks() const { return trace_tasks_; }
  const std::vector<TraceEdge>& trace_edges() const { return trace_edges_; }
  uint32_t recording() const { return record_; }
  // Why hardware counters are unavailable ("" when they were read).
  const std::string& pmu_error() const { return pmu_error_; }
  // steady_clock time (ns since epoch of the clock) at which the last task of the current
  // launch finished; 0 when no task finished.
  int64_t last_task_end_ns();
  uint64_t tasks_run() const { return tasks_run_.load(std::memory_order_relaxed); }
  // Stops and joins the core threads; frees scratch memory. Idempotent. Must not be called
  // while a launch is in progress.
  void Shutdown();

  // True on a core thread of any device (kernels run there).
  static bool OnCoreThread();
  // Name / scope of the task running on this core thread (nullptr / -1 elsewhere).
  static const char* CurrentTaskName();
  static int32_t CurrentTaskScope();

 private:
  enum class State : uint8_t { kFree, kWaiting, kReady, kRunning };
  struct Task {
    State state = State::kFree;
    TsptoKernelFn fn = nullptr;
    const char* name = nullptr;
    int32_t scope_id = 0;
    int32_t nargs = 0;
    std::vector<int64_t> args;          // nargs + 2 runtime slots
    std::vector<TsptoAccess> accesses;  // regions with nbytes > 0
    std::vector<uint32_t> successors;   // slots waiting for this task
    uint32_t pending = 0;               // unfinished predecessors
    uint64_t heap_bytes = 0;
    TraceTask* trace = nullptr;         // recording only
    // In-flight list (submission order), as slot indices; kNone at the ends.
    uint32_t prev = kNone, next = kNone;
  };
  static constexpr uint32_t kNone = 0xffffffffu;

  void CoreLoop(uint32_t core);
  // Claims one ready task (decrements ready_count_); false when none is ready.
  bool TryClaim();
  // Reserves a running slot (running_ < core_threads); false when core_threads tasks run.
  bool ReserveSlot();
  // Reserves a running slot (at most core_threads) and claims a ready task; false (nothing
  // reserved) when there is no ready task or core_threads tasks run already.
  bool Acquire();
  // Runs the task this thread acquired (front of ready_) and completes it. `lock` (on mu_)
  // is not held on entry or exit.
  void RunClaimed(uint32_t core, std::unique_lock<std::mutex>& lock);
  // On the orchestration thread while it waits (WaitAll, a full ring): acquires and runs one
  // ready task with scratch arena core_threads; false when it could not.
  bool HelpOne();
  void Execute(Task& task, uint32_t core);
  void Complete(uint32_t slot);  // mu_ held
  void PushReady(uint32_t slot);  // mu_ held; wakes nobody (WakeCores does)
  // Wakes parked core threads for the runnable tasks (ready + held) that the threads awake
  // already will not take: `helpers` (the caller's, which takes one), the polling cores and
  // those woken before. mu_ held.
  void WakeCores(uint32_t helpers);
  // Slots of unfinished tasks that conflict with the given accesses, into preds_. mu_ held.
  void FindPredecessors(const TsptoAccess* accesses, int32_t naccesses);

  const SchedulerConfig config_;
  const SchedulerHooks hooks_;

  std::mutex mu_;
  std::condition_variable work_cv_;  // core threads park here
  std::condition_variable done_cv_;  // submitters (ring full) and WaitAll park here
  uint32_t sleeping_cores_ = 0;      // mu_
  uint32_t waking_ = 0;              // mu_: parked cores notified that have not woken yet
  uint32_t done_waiters_ = 0;        // mu_
  std::atomic<uint32_t> spinning_{0};  // core threads polling for work (awake, idle)
  std::atomic<uint32_t> running_{0};   // tasks executing now (core threads and the orchestration)
  bool stop_ = false;                // mu_
  std::atomic<bool> stop_flag_{false};

  std::vector<Task> ring_;
  std::deque<uint32_t> ready_;          // mu_
  std::atomic<uint32_t> ready_count_{0};  // entries of ready_ not yet claimed by a core
  std::atomic<uint32_t> in_flight_{0};    // submitted, not finished
  std::atomic<uint64_t> completed_{0};    // tasks finished (ever); wakes ring-full waits
  uint64_t next_seq_ = 0;                 // mu_
  uint32_t newest_ = kNone;  // last task of the in-flight list (scanned backwards), mu_
  uint64_t heap_used_ = 0;                // mu_
  uint64_t deps_used_ = 0;                // mu_
  int64_t last_end_ns_ = 0;               // mu_
  std::vector<uint32_t> preds_;           // mu_, reused by FindPredecessors
  std::vector<TsptoAccess> norm_;         // orchestration thread: Submit's normalized windows
  // The last submitted task when it was ready at submission: not yet in ready_, so the
  // orchestration thread can run it itself in WaitAll. Published by the next Submit.
  // Only the orchestration thread reads or writes it.
  uint32_t held_ = kNone;

  uint32_t record_ = 0;
  uint64_t dump_bytes_ = 0;
  std::deque<TraceTask> trace_tasks_;  // references stay valid across push_back
  std::vector<TraceEdge> trace_edges_;
  std::mutex pmu_mu_;
  std::string pmu_error_;
  void RecordExecute(Task& task, uint32_t core);

  std::vector<void*> scratch_;  // one per core + one for the orchestration thread (RunHeld), 64-byte aligned
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> tasks_run_{0};
  bool shut_down_ = false;
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_SCHEDULER_H
