#include "scheduler.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace tspto {

namespace {

// How long an idle thread polls before parking on its condition variable.
constexpr int64_t kSpinNs = 50'000;

thread_local bool tl_on_core = false;
thread_local const char* tl_task_name = nullptr;
thread_local int32_t tl_task_scope = -1;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Polls `done` for up to kSpinNs; true when it became true.
template <typename Pred>
bool SpinFor(Pred done) {
  const int64_t deadline = NowNs() + kSpinNs;
  for (uint32_t i = 0;; ++i) {
    if (done()) return true;
    CpuRelax();
    if ((i & 63) == 63 && NowNs() >= deadline) return done();
  }
}

// Takes the lock of `lock`, polling try_lock briefly first: the scheduler's critical
// sections are short, and a futex sleep + wake-up costs far more than a short wait.
void LockSpin(std::unique_lock<std::mutex>& lock) {
  for (int i = 0; i < 1000; ++i) {
    if (lock.try_lock()) return;
    CpuRelax();
  }
  lock.lock();
}

bool SameTensor(const TsptoAccess& a, const TsptoAccess& b) {
  if (a.rank == 0 || a.rank != b.rank || a.tensor != b.tensor || a.elem_bytes != b.elem_bytes) return false;
  for (int32_t i = 0; i < a.rank; ++i) {
    if (a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

bool Overlaps(const TsptoAccess& a, const TsptoAccess& b) {
  if (a.nbytes <= 0 || b.nbytes <= 0) return false;  // an empty access touches no element
  if (!(a.base < b.base + b.nbytes && b.base < a.base + a.nbytes)) return false;
  if (!SameTensor(a, b)) return true;  // byte hulls overlap
  // Two windows of one tensor: boxes overlap on every axis.
  for (int32_t i = 0; i < a.rank; ++i) {
    if (!(a.offsets[i] < b.offsets[i] + b.extents[i] && b.offsets[i] < a.offsets[i] + a.extents[i])) return false;
  }
  return true;
}

// Clamps a window to its tensor and sets base/nbytes to its byte hull (0/0 when empty).
void NormalizeWindow(TsptoAccess& a) {
  int64_t first = 0, last = 0, stride = 1;
  bool empty = false;
  for (int32_t d = a.rank - 1; d >= 0; --d) {
    int64_t lo = std::max<int64_t>(0, std::min(a.offsets[d], a.dims[d]));
    int64_t hi = a.offsets[d] + std::max<int64_t>(0, a.extents[d]);
    hi = std::max(lo, std::min(hi, a.dims[d]));
    a.offsets[d] = lo;
    a.extents[d] = hi - lo;
    if (hi == lo) empty = true;
    first += lo * stride;
    last += (hi - 1) * stride;
    stride *= a.dims[d];
  }
  for (int32_t d = a.rank; d < TSPTO_MAX_RANK; ++d) a.dims[d] = a.offsets[d] = a.extents[d] = 0;
  if (empty) {
    a.base = 0;
    a.nbytes = 0;
    return;
  }
  a.base = a.tensor + first * a.elem_bytes;
  a.nbytes = (last - first + 1) * a.elem_bytes;
}

bool Conflicts(const TsptoAccess& a, const TsptoAccess& b) {
  return ((a.mode | b.mode) & TSPTO_ACCESS_WRITE) != 0 && Overlaps(a, b);
}

// Per-thread hardware counters (user space only), opened on first use by a recording
// launch with PMU on. fd -1: unavailable (the reason is kept in *error).
struct ThreadPmu {
  int cycles = -2, instructions = -2;
};
thread_local ThreadPmu tl_pmu;

int OpenCounter(uint64_t config, std::string* error) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0 && error->empty()) {
    *error = std::string("perf_event_open: ") + std::strerror(errno);
  }
  return static_cast<int>(fd);
}

int64_t ReadCounter(int fd) {
  if (fd < 0) return -1;
  uint64_t v = 0;
  if (read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return -1;
  return static_cast<int64_t>(v);
}

}  // namespace

bool Scheduler::OnCoreThread() { return tl_on_core; }
const char* Scheduler::CurrentTaskName() { return tl_task_name; }
int32_t Scheduler::CurrentTaskScope() { return tl_task_scope; }

Scheduler::Scheduler(const SchedulerConfig& config, SchedulerHooks hooks)
    : config_(config), hooks_(std::move(hooks)), ring_(config.window) {
  const uint64_t scratch = config_.scratch_bytes == 0 ? 64 : (config_.scratch_bytes + 63) / 64 * 64;
  try {
    // One arena per core thread, plus one for the orchestration thread, which runs ready
    // tasks itself while it waits (WaitAll, a full ring).
    for (uint32_t c = 0; c <= config_.core_threads; ++c) {
      void* p = std::aligned_alloc(64, scratch);
      if (p == nullptr) throw std::bad_alloc();
      scratch_.push_back(p);
    }
    for (uint32_t c = 0; c < config_.core_threads; ++c) {
      threads_.emplace_back([this, c] { CoreLoop(c); });
    }
  } catch (...) {
    Shutdown();
    throw;
  }
}

Scheduler::~Scheduler() { Shutdown(); }

void Scheduler::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
    stop_ = true;
    stop_flag_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  for (void* p : scratch_) std::free(p);
  scratch_.clear();
}

void Scheduler::BeginLaunch(uint32_t record, uint64_t dump_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  last_end_ns_ = 0;
  record_ = record;
  dump_bytes_ = dump_bytes;
  if (record != 0 || !trace_tasks_.empty()) {
    trace_tasks_.clear();
    trace_edges_.clear();
  }
}

int64_t Scheduler::last_task_end_ns() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_end_ns_;
}

void Scheduler::FindPredecessors(const TsptoAccess* accesses, int32_t naccesses) {
  preds_.clear();
  if (naccesses == 0) return;
  for (uint32_t s = newest_; s != kNone; s = ring_[s].prev) {
    const Task& other = ring_[s];
    bool conflict = false;
    for (int32_t i = 0; i < naccesses && !conflict; ++i) {
      if (accesses[i].nbytes <= 0) continue;
      for (const TsptoAccess& b : other.accesses) {
        if (Conflicts(accesses[i], b)) {
          conflict = true;
          break;
        }
      }
    }
    if (conflict) preds_.push_back(s);
  }
}

std::string Scheduler::Submit(TsptoKernelFn fn, const char* name, int32_t scope_id,
                              const int64_t* args, int32_t nargs, const TsptoAccess* accesses,
                              int32_t naccesses) {
  if (tl_on_core) return "submit called from a kernel (core thread); only the orchestration may submit tasks";
  if (fn == nullptr) return "submit: kernel function pointer is null";
  if (nargs < 0 || (nargs > 0 && args == nullptr)) return "submit: invalid argument slots (nargs=" + std::to_string(nargs) + ")";
  if (naccesses < 0 || (naccesses > 0 && accesses == nullptr)) return "submit: invalid accesses (naccesses=" + std::to_string(naccesses) + ")";
  for (int32_t i = 0; i < naccesses; ++i) {
    const TsptoAccess& a = accesses[i];
    const int32_t mode = a.mode;
    if (mode != TSPTO_ACCESS_READ && mode != TSPTO_ACCESS_WRITE && mode != TSPTO_ACCESS_READWRITE) {
      return "submit: access " + std::to_string(i) + " of task '" + (name ? name : "?") +
             "' has invalid mode " + std::to_string(mode);
    }
    if (a.rank < 0 || a.rank > TSPTO_MAX_RANK || (a.rank > 0 && a.elem_bytes <= 0)) {
      return "submit: access " + std::to_string(i) + " of task '" + (name ? name : "?") +
             "' has invalid window (rank " + std::to_string(a.rank) + ", element size " +
             std::to_string(a.elem_bytes) + "; rank must be 0.." + std::to_string(TSPTO_MAX_RANK) +
             " and a window needs a positive element size)";
    }
    for (int32_t d = 0; d < a.rank; ++d) {
      if (a.dims[d] < 0) {
        return "submit: access " + std::to_string(i) + " of task '" + (name ? name : "?") +
               "' has negative dimension " + std::to_string(a.dims[d]) + " on axis " + std::to_string(d);
      }
    }
  }
  const uint64_t heap_bytes = sizeof(int64_t) * (static_cast<uint64_t>(nargs) + 2) +
                              sizeof(TsptoAccess) * static_cast<uint64_t>(naccesses);
  // A task that cannot fit the ring even when the ring is empty would wait forever: fail
  // now and name the knob.
  if (heap_bytes > config_.heap) {
    return "submit: deadlock: task '" + std::string(name ? name : "?") + "' needs " +
           std::to_string(heap_bytes) + " bytes of ring heap for its " + std::to_string(nargs) +
           " argument slots and " + std::to_string(naccesses) +
           " accesses, but the whole ring heap is " + std::to_string(config_.heap) +
           " bytes, so it can never be submitted; raise RunConfig.ringHeap (at least " +
           std::to_string(heap_bytes) + ")";
  }

  // Windows: clamp to the tensor and fill in the byte hull (an empty window touches nothing).
  const TsptoAccess* acc = accesses;
  if (naccesses > 0) {
    bool windows = false;
    for (int32_t i = 0; i < naccesses; ++i) windows = windows || accesses[i].rank > 0;
    if (windows) {
      norm_.assign(accesses, accesses + naccesses);
      for (TsptoAccess& a : norm_) {
        if (a.rank > 0) NormalizeWindow(a);
      }
      acc = norm_.data();
    }
  }
  accesses = acc;

  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  LockSpin(lock);
  // The task held back by the previous Submit goes to the cores now.
  if (held_ != kNone) {
    PushReady(held_);
    held_ = kNone;
  }
  const uint32_t slot = static_cast<uint32_t>(next_seq_ % ring_.size());
  // Wait for the ring slot, the heap budget and the dependency-edge budget.
  for (;;) {
    if (stop_) return "submit: device is closed";
    const bool empty = in_flight_.load(std::memory_order_relaxed) == 0;
    if (ring_[slot].state == State::kFree && (empty || heap_used_ + heap_bytes <= config_.heap)) {
      FindPredecessors(accesses, naccesses);
      if (empty || deps_used_ + preds_.size() <= config_.dep_pool) break;
    }
    // Does not fit yet: wait for a task to finish, running ready tasks here meanwhile (this
    // thread waits anyway). Spin a little without the lock, then park until Complete()
    // signals (it notifies done_cv_ while waiters exist).
    const uint64_t seen = completed_.load(std::memory_order_acquire);
    lock.unlock();
    if (HelpOne()) {
      LockSpin(lock);
      continue;
    }
    const bool progressed =
        SpinFor([&] { return completed_.load(std::memory_order_acquire) != seen; });
    LockSpin(lock);
    if (!progressed) {
      ++done_waiters_;
      done_cv_.wait(lock, [&] {
        return stop_ || completed_.load(std::memory_order_relaxed) != seen;
      });
      --done_waiters_;
    }
  }
  ++next_seq_;
  Task& t = ring_[slot];
  t.fn = fn;
  t.name = name;
  t.scope_id = scope_id;
  t.nargs = nargs;
  t.args.assign(args, args + nargs);
  t.args.push_back(0);  // scratch address, set by the executing core
  t.args.push_back(hooks_.api_address);
  t.accesses.clear();
  for (int32_t i = 0; i < naccesses; ++i) {
    if (accesses[i].nbytes > 0) t.accesses.push_back(accesses[i]);  // empty windows: nbytes 0
  }
  t.successors.clear();
  t.heap_bytes = heap_bytes;
  t.trace = nullptr;
  if (record_ != 0) {
    trace_tasks_.emplace_back();
    TraceTask& tt = trace_tasks_.back();
    tt.id = static_cast<uint32_t>(trace_tasks_.size() - 1);
    tt.name = name;
    tt.scope = scope_id;
    for (const TsptoAccess& a : t.accesses) tt.accesses.push_back(TraceAccess{a, {}, {}});
    t.trace = &tt;
    for (uint32_t p : preds_) {
      const Task& prod = ring_[p];
      if (prod.trace == nullptr) continue;
      // Every conflicting (producer access, consumer access) pair is one edge.
      for (size_t ci = 0; ci < t.accesses.size(); ++ci) {
        for (size_t pi = 0; pi < prod.accesses.size(); ++pi) {
          if (Conflicts(t.accesses[ci], prod.accesses[pi])) {
            trace_edges_.push_back(TraceEdge{prod.trace->id, tt.id, static_cast<int32_t>(pi),
                                             static_cast<int32_t>(ci)});
          }
        }
      }
    }
  }
  t.pending = static_cast<uint32_t>(preds_.size());
  for (uint32_t p : preds_) ring_[p].successors.push_back(slot);
  deps_used_ += preds_.size();
  if (t.trace != nullptr) t.trace->dispatch_ns = NowNs();
  heap_used_ += heap_bytes;
  // in_flight_ and completed_ change only under mu_: plain stores (no locked
  // read-modify-write on the submit and complete paths); lock-free readers see them atomically.
  in_flight_.store(in_flight_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // Append to the in-flight list.
  t.prev = newest_;
  t.next = kNone;
  if (newest_ != kNone) ring_[newest_].next = slot;
  newest_ = slot;
  if (t.pending == 0) {
    // Ready, but held back until the next Submit: if the orchestration waits next, it runs
    // the task itself (no hand-off to a core thread and back).
    t.state = State::kReady;
    held_ = slot;
  } else {
    t.state = State::kWaiting;
  }
  WakeCores(1);  // this thread takes one runnable task when it waits
  return "";
}

void Scheduler::PushReady(uint32_t slot) {
  ring_[slot].state = State::kReady;
  ready_.push_back(slot);
  ready_count_.fetch_add(1, std::memory_order_release);
}

void Scheduler::WakeCores(uint32_t helpers) {
  if (sleeping_cores_ <= waking_) return;
  // Runnable tasks: the ready ones and the one held back for the orchestration. Threads that
  // will take one without being woken: the caller's (`helpers`), the core threads polling
  // for work, and those already woken.
  const uint32_t runnable = ready_count_.load(std::memory_order_acquire) + (held_ != kNone ? 1u : 0u);
  uint32_t awake = spinning_.load(std::memory_order_acquire) + helpers + waking_;
  while (runnable > awake && sleeping_cores_ > waking_) {
    ++waking_;
    ++awake;
    work_cv_.notify_one();
  }
}

bool Scheduler::TryClaim() {
  uint32_t n = ready_count_.load(std::memory_order_acquire);
  while (n != 0) {
    if (ready_count_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) return true;
  }
  return false;
}

bool Scheduler::ReserveSlot() {
  uint32_t r = running_.load(std::memory_order_relaxed);
  do {
    if (r >= config_.core_threads) return false;
  } while (!running_.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel));
  return true;
}

bool Scheduler::Acquire() {
  if (ready_count_.load(std::memory_order_acquire) == 0) return false;
  // A running slot first (never more than core_threads tasks at once), then a ready task.
  if (!ReserveSlot()) return false;
  if (TryClaim()) return true;
  running_.fetch_sub(1, std::memory_order_release);
  return false;
}

void Scheduler::RunClaimed(uint32_t core, std::unique_lock<std::mutex>& lock) {
  // This thread owns one entry of ready_ and a running slot (Acquire).
  LockSpin(lock);
  const uint32_t slot = ready_.front();
  ready_.pop_front();
  Task& task = ring_[slot];
  task.state = State::kRunning;
  lock.unlock();
  Execute(task, core);
  running_.fetch_sub(1, std::memory_order_release);
  LockSpin(lock);
  Complete(slot);
  lock.unlock();
}

bool Scheduler::HelpOne() {
  // The orchestration thread, while it waits: runs a ready task with its own scratch arena
  // (index core_threads). A chain of dependent tasks then runs on this thread from start to
  // end without waking a core thread; independent tasks beyond the one it takes wake cores
  // (WakeCores). A kernel running here may not submit or wait.
  if (!Acquire()) return false;
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  tl_on_core = true;
  RunClaimed(config_.core_threads, lock);
  tl_on_core = false;
  return true;
}

bool Scheduler::WaitAll() {
  if (tl_on_core) return false;
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (held_ != kNone) {
    // The held task: run here when a running slot is free (no hand-off at all for a launch
    // of one task), else it joins the ready ones.
    LockSpin(lock);
    const uint32_t slot = held_;
    held_ = kNone;
    if (ReserveSlot()) {
      Task& task = ring_[slot];
      task.state = State::kRunning;
      lock.unlock();
      tl_on_core = true;
      Execute(task, config_.core_threads);
      tl_on_core = false;
      running_.fetch_sub(1, std::memory_order_release);
      LockSpin(lock);
      Complete(slot);
    } else {
      PushReady(slot);
      WakeCores(1);
    }
    lock.unlock();
  }
  const auto done = [&] { return in_flight_.load(std::memory_order_acquire) == 0; };
  const auto helpable = [&] {
    return ready_count_.load(std::memory_order_acquire) != 0 &&
           running_.load(std::memory_order_acquire) < config_.core_threads;
  };
  for (;;) {
    if (done()) return true;
    if (HelpOne()) continue;
    if (SpinFor([&] { return done() || helpable(); })) continue;
    LockSpin(lock);
    ++done_waiters_;
    done_cv_.wait(lock, [&] { return stop_ || done() || helpable(); });
    --done_waiters_;
    const bool stopped = stop_;
    lock.unlock();
    if (stopped) return true;
  }
}

void Scheduler::CoreLoop(uint32_t core) {
  tl_on_core = true;
  {
    // "tspto-d<device>-c<core>" (at most 15 characters) shows up in debuggers and top.
    char name[16];
    std::snprintf(name, sizeof name, "tspto-d%u-c%u", config_.device_id % 100, core % 10000);
    pthread_setname_np(pthread_self(), name);
  }
  // ready_count_ counts ready tasks not yet claimed. A core claims one by decrementing it
  // (CAS, after reserving a running slot: Acquire) before taking the lock, so waking cores
  // do not all rush for the same task.
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  for (;;) {
    if (!Acquire()) {
      // Idle: poll for new work without the lock for a short while (kSpinNs), then park.
      bool claimed = false;
      spinning_.fetch_add(1, std::memory_order_acq_rel);
      SpinFor([&] {
        return (claimed = Acquire()) || stop_flag_.load(std::memory_order_acquire);
      });
      spinning_.fetch_sub(1, std::memory_order_acq_rel);
      if (!claimed) {
        LockSpin(lock);
        ++sleeping_cores_;
        // Every return from the wait consumes one notification (waking_), whether or not this
        // thread then finds a task: a woken core that loses the task to another thread and parks
        // again must not stay counted as "being woken", or WakeCores would never wake a core
        // for the next ready task (measured: both tasks of a 2-band GEMV ran one after the
        // other on the orchestration thread in ~40% of launches).
        while (!(stop_ || (claimed = Acquire()))) {
          work_cv_.wait(lock);
          if (waking_ > 0) --waking_;
        }
        --sleeping_cores_;
        if (!claimed) return;  // stop_ and nothing left to run
        lock.unlock();
      }
    }
    RunClaimed(core, lock);
  }
}

void Scheduler::Execute(Task& task, uint32_t core) {
  // After a recorded failure the remaining tasks are skipped (still completed, so that
  // their successors and WaitAll are released).
  if (hooks_.failed != nullptr && hooks_.failed->load(std::memory_order_acquire)) return;
  task.args[task.nargs] = static_cast<int64_t>(reinterpret_cast<intptr_t>(scratch_[core]));
  if (task.trace != nullptr) {
    RecordExecute(task, core);
    return;
  }
  tl_task_name = task.name;
  tl_task_scope = task.scope_id;
  try {
    task.fn(task.args.data());
  } catch (const std::exception& e) {
    if (hooks_.fail) hooks_.fail(std::string("kernel threw a C++ exception: ") + e.what());
  } catch (...) {
    if (hooks_.fail) hooks_.fail("kernel threw a C++ exception");
  }
  tl_task_name = nullptr;
  tl_task_scope = -1;
  tasks_run_.fetch_add(1, std::memory_order_relaxed);
}

// Execute with DFX recording: core, times, counters, argument snapshots.
void Scheduler::RecordExecute(Task& task, uint32_t core) {
  TraceTask& tt = *task.trace;
  tt.core = static_cast<int32_t>(core);
  const bool dump = (record_ & kTraceDump) != 0;
  const bool pmu = (record_ & kTracePmu) != 0;
  auto snapshot = [&](bool after) {
    for (TraceAccess& a : tt.accesses) {
      const uint64_t n = dump_bytes_ == 0 ? static_cast<uint64_t>(a.access.nbytes)
                                          : std::min<uint64_t>(dump_bytes_, a.access.nbytes);
      const uint8_t* p = reinterpret_cast<const uint8_t*>(static_cast<intptr_t>(a.access.base));
      (after ? a.after : a.before).assign(p, p + n);
    }
  };
  if (dump) snapshot(false);
  if (pmu && tl_pmu.cycles == -2) {
    std::string error;
    tl_pmu.cycles = OpenCounter(PERF_COUNT_HW_CPU_CYCLES, &error);
    tl_pmu.instructions = OpenCounter(PERF_COUNT_HW_INSTRUCTIONS, &error);
    if (!error.empty()) {
      std::lock_guard<std::mutex> lock(pmu_mu_);
      if (pmu_error_.empty()) pmu_error_ = error;
    }
  }
  const int64_t c0 = pmu ? ReadCounter(tl_pmu.cycles) : -1;
  const int64_t i0 = pmu ? ReadCounter(tl_pmu.instructions) : -1;
  tl_task_name = task.name;
  tl_task_scope = task.scope_id;
  tt.start_ns = NowNs();
  try {
    task.fn(task.args.data());
  } catch (const std::exception& e) {
    if (hooks_.fail) hooks_.fail(std::string("kernel threw a C++ exception: ") + e.what());
  } catch (...) {
    if (hooks_.fail) hooks_.fail("kernel threw a C++ exception");
  }
  tt.end_ns = NowNs();
  if (pmu) {
    const int64_t c1 = ReadCounter(tl_pmu.cycles), i1 = ReadCounter(tl_pmu.instructions);
    tt.cycles = (c0 >= 0 && c1 >= 0) ? c1 - c0 : -1;
    tt.instructions = (i0 >= 0 && i1 >= 0) ? i1 - i0 : -1;
  }
  tl_task_name = nullptr;
  tl_task_scope = -1;
  if (dump) snapshot(true);
  tasks_run_.fetch_add(1, std::memory_order_relaxed);
}

void Scheduler::Complete(uint32_t slot) {
  Task& t = ring_[slot];
  for (uint32_t s : t.successors) {
    if (--ring_[s].pending == 0) PushReady(s);
  }
  deps_used_ -= t.successors.size();
  heap_used_ -= t.heap_bytes;
  t.successors.clear();
  t.state = State::kFree;
  // Unlink from the in-flight list.
  if (t.prev != kNone) ring_[t.prev].next = t.next;
  if (t.next != kNone) ring_[t.next].prev = t.prev; else newest_ = t.prev;
  t.prev = t.next = kNone;
  last_end_ns_ = NowNs();
  completed_.store(completed_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  in_flight_.store(in_flight_.load(std::memory_order_relaxed) - 1, std::memory_order_release);
  WakeCores(1);  // the caller takes one of the tasks made ready
  if (done_waiters_ > 0) done_cv_.notify_all();
}

}  // namespace tspto
