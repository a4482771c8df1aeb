#include "device.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "errors.h"

namespace tspto {

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Appends where a failure happened when it is reported from a kernel on a core thread.
std::string WithTaskContext(const std::string& message) {
  const char* task = Scheduler::CurrentTaskName();
  if (task == nullptr) return message;
  return message + " (in task '" + task + "', scope " +
         std::to_string(Scheduler::CurrentTaskScope()) + ")";
}

}  // namespace

DeviceCore::DeviceCore(const DeviceOptions& options) : options_(options) {
  arena_ = std::make_shared<Arena>(options.memory_bytes);

  api_.ctx = this;
  api_.scratch_bytes = static_cast<int64_t>(options.scratch_bytes);
  api_.submit = &DeviceCore::ApiSubmit;
  api_.wait_all = &DeviceCore::ApiWaitAll;
  api_.alloc = &DeviceCore::ApiAlloc;
  api_.free = &DeviceCore::ApiFree;
  api_.fail = &DeviceCore::ApiFail;
  api_.failed = &DeviceCore::ApiFailed;
  api_.core_count = static_cast<int32_t>(options.core_threads);

  SchedulerConfig config;
  config.device_id = options.device_id;
  config.core_threads = options.core_threads;
  config.scratch_bytes = options.scratch_bytes;
  config.window = options.ring_task_window;
  config.heap = options.ring_heap;
  config.dep_pool = options.ring_dep_pool;
  SchedulerHooks hooks;
  hooks.failed = &failed_;
  hooks.fail = [this](const std::string& m) { RecordFailure(WithTaskContext(m)); };
  hooks.api_address = static_cast<int64_t>(reinterpret_cast<intptr_t>(&api_));
  scheduler_ = std::make_unique<Scheduler>(config, std::move(hooks));
}

DeviceCore::~DeviceCore() { Close(); }

void DeviceCore::Close() {
  std::lock_guard<std::mutex> close_lock(close_mu_);
  if (closed_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> launch_lock(launch_mu_);  // wait for a running launch
  closed_.store(true, std::memory_order_release);
  scheduler_->Shutdown();
  {
    // Launches still queued hold their module; its dlclose happens when they let go.
    modules_.Clear();
  }
  {
    std::lock_guard<std::mutex> lock(orch_mu_);
    orch_buffers_.clear();
  }
  arena_->Release();
}

void DeviceCore::CheckOpen() const {
  if (closed()) throw DeviceError("device is closed", kCodeClosed);
}

// ---------------------------------------------------------------------------------------
// Memory

uint64_t DeviceCore::Alloc(uint64_t nbytes) {
  CheckOpen();
  return arena_->Allocate(nbytes, /*zero=*/true);
}

bool DeviceCore::Free(uint64_t addr) {
  CheckOpen();
  return arena_->Free(addr, "free");
}

bool DeviceCore::IsLive(uint64_t addr) {
  CheckOpen();
  return arena_->IsLive(addr);
}

void DeviceCore::H2D(uint64_t addr, const void* src, uint64_t nbytes, bool counted) {
  CheckOpen();
  arena_->CheckRange("h2d", addr, nbytes);
  if (nbytes != 0) std::memcpy(reinterpret_cast<void*>(addr), src, nbytes);
  if (counted) h2d_bytes_.fetch_add(nbytes, std::memory_order_relaxed);
}

void DeviceCore::D2H(void* dst, uint64_t addr, uint64_t nbytes, bool counted) {
  CheckOpen();
  arena_->CheckRange("d2h", addr, nbytes);
  if (nbytes != 0) std::memcpy(dst, reinterpret_cast<const void*>(addr), nbytes);
  if (counted) d2h_bytes_.fetch_add(nbytes, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------
// Modules

Module::~Module() {
  if (arena) {
    for (const LaunchBuffer& b : buffers) arena->FreeQuiet(b.addr);
  }
  if (handle != nullptr) dlclose(handle);
}

uint32_t DeviceCore::LoadModule(const std::string& path, ArgLayout arg_bytes) {
  CheckOpen();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw DeviceError("loadModule: cannot load program library '" + path +
                      "': " + (why ? why : "unknown dlopen error"), kCodeModule);
  }
  auto reject = [&](const std::string& why) {
    dlclose(handle);
    throw DeviceError("loadModule: '" + path + "' " + why, kCodeModule);
  };
  auto version = reinterpret_cast<int (*)()>(dlsym(handle, "tspto_abi_version"));
  if (version == nullptr) reject("is not a tspto program library (no tspto_abi_version symbol)");
  const int v = version();
  if (v != TSPTO_ABI_VERSION) {
    reject("was built for tspto ABI version " + std::to_string(v) +
           " but this runtime implements version " + std::to_string(TSPTO_ABI_VERSION) +
           "; rebuild the program");
  }
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, "tspto_entry"));
  if (entry == nullptr) reject("is not a tspto program library (no tspto_entry symbol)");

  auto module = std::make_shared<Module>();
  module->handle = handle;
  module->entry = entry;
  module->path = path;
  module->arg_bytes = std::move(arg_bytes);
  module->arena = arena_;
  return modules_.Add(std::move(module));
}

void DeviceCore::UnloadModule(uint32_t id) {
  CheckOpen();
  modules_.Remove(id);  // dlclose (if this was the last holder) outside the table's lock
}

// ---------------------------------------------------------------------------------------
// Launch

int64_t ArgLayout::Need(size_t i, const std::vector<LaunchArg>& args, const char* method) const {
  if (i >= bytes.size() || bytes[i] < 0) return -1;
  int64_t n = bytes[i];
  if (i < dims.size()) {
    for (uint32_t slot : dims[i]) {
      const int64_t d = slot < args.size() ? args[slot].value : 0;
      if (slot >= args.size() || args[slot].kind != kArgInt || d < 1 || (n > 0 && d > (INT64_C(1) << 62) / n)) {
        throw DeviceError(std::string(method) + ": argument " + std::to_string(slot) +
                              " (a dynamic dimension of argument " + std::to_string(i) +
                              ") must be an integer >= 1 whose tensor fits in memory, got " +
                              (slot < args.size() ? std::to_string(d) : std::string("nothing")),
                          kCodeBadArgument, static_cast<int64_t>(slot));
      }
      n *= d;
    }
  }
  return n;
}

void CheckArgCount(const std::vector<LaunchArg>& args, const ArgLayout& expect,
                   const char* method) {
  if (!expect.empty() && expect.size() != args.size()) {
    throw DeviceError(std::string(method) + ": the program takes " + std::to_string(expect.size()) +
                          " arguments, got " + std::to_string(args.size()),
                      kCodeBadArgument);
  }
}

void CheckHostArg(LaunchArg* a, size_t i, const ArgLayout& expect, const std::vector<LaunchArg>& args,
                  const char* method) {
  // The bytes the program reads/writes; the view's LIVE length must cover them.
  uint64_t need = a->host_bytes;
  const int64_t e = expect.Need(i, args, method);
  if (e >= 0) need = static_cast<uint64_t>(e);
  if (a->host_bytes < need) {
    throw DeviceError(std::string(method) + ": argument " + std::to_string(i) + " (" +
                          ArgKindName(a->kind) + ") is a host view of " +
                          std::to_string(a->host_bytes) + " bytes, but the program " +
                          (a->kind == kArgHostIn ? "reads " : "uses ") + std::to_string(need) +
                          " bytes (a detached, transferred or shrunk ArrayBuffer, or a "
                          "view that is too short)",
                      kCodeHostView, static_cast<int64_t>(i));
  }
  a->stage_bytes = need;  // never more than validated
}

void CheckResultViews(const std::vector<LaunchArg>& args,
                      const std::vector<std::pair<uint8_t*, uint64_t>>& hosts, const char* method) {
  for (size_t i = 0; i < args.size(); ++i) {
    const LaunchArg& a = args[i];
    if (a.kind != kArgHostOut && a.kind != kArgHostInOut) continue;
    if (i >= hosts.size() || hosts[i].second < a.stage_bytes) {
      const uint64_t have = i < hosts.size() ? hosts[i].second : 0;
      throw DeviceError(std::string(method) + ": argument " + std::to_string(i) + " (" +
                            ArgKindName(a.kind) + ") is a host view of " + std::to_string(have) +
                            " bytes when the launch completed, fewer than the " +
                            std::to_string(a.stage_bytes) +
                            " bytes of its result (its ArrayBuffer was detached, transferred or "
                            "shrunk while the launch ran); no result was written",
                        kCodeHostView, static_cast<int64_t>(i));
    }
  }
}

namespace {
// The ranges of a plan's pinned device arguments, for Arena::PinAll / UnpinAll (one lock for
// all of them). Per thread, reused: no allocation per launch.
thread_local std::vector<Arena::PinItem> tl_pins;
}  // namespace

void LaunchPlan::Release() {
  if (!held || device == nullptr) return;
  held = false;
  Arena& arena = device->arena();
  tl_pins.clear();
  for (LaunchArg& a : args) {
    if (a.staged != 0) {
      arena.FreeQuiet(a.staged);
      a.staged = 0;
    }
    if (a.generation != 0) tl_pins.push_back({static_cast<uint64_t>(a.value), 0, &a.pin_base, &a.generation});
  }
  if (!tl_pins.empty()) arena.UnpinAll(tl_pins.data(), tl_pins.size());
  for (auto& p : tl_pins) *p.generation = 0;
}

void DeviceCore::Prepare(LaunchPlan* plan, const char* method, bool stage_now) {
  CheckOpen();
  plan->device = this;
  plan->module = modules_.Get(plan->module_id, method);
  const ArgLayout& expect = plan->module->arg_bytes;
  const size_t n = plan->args.size();
  CheckArgCount(plan->args, expect, method);
  plan->held = true;  // from here on, a throw releases what was pinned/staged so far
  try {
    tl_pins.clear();
    for (size_t i = 0; i < n; ++i) {
      LaunchArg& a = plan->args[i];
      switch (a.kind) {
        case kArgHostIn:
        case kArgHostOut:
        case kArgHostInOut:
          CheckHostArg(&a, i, expect, plan->args, method);
          break;
        case kArgDevice: {
          // the allocation holding the bytes the program uses from this address (a view's
          // address may lie inside it): pinned by its start and generation, below
          const int64_t need = expect.Need(i, plan->args, method);
          tl_pins.push_back({static_cast<uint64_t>(a.value), need > 0 ? static_cast<uint64_t>(need) : 0, &a.pin_base, &a.generation});
          break;
        }
        default:
          break;
      }
    }
    if (!tl_pins.empty()) {
      // every device argument pinned under one lock; the first that is not live is the error
      std::string why;
      const size_t bad = arena_->PinAll(tl_pins.data(), tl_pins.size(), &why);
      if (bad < tl_pins.size()) {
        size_t i = 0;
        while (&plan->args[i].generation != tl_pins[bad].generation) ++i;
        throw DeviceError(std::string(method) + ": argument " + std::to_string(i) + " (device tensor): " + why,
                          kCodeBadAddress, static_cast<int64_t>(i));
      }
    }
    if (stage_now) {
      for (size_t i = 0; i < n; ++i) {
        LaunchArg& a = plan->args[i];
        if (a.kind == kArgHostIn || a.kind == kArgHostInOut) {
          a.staged = arena_->Allocate(a.stage_bytes, /*zero=*/false);
          if (a.stage_bytes != 0) std::memcpy(reinterpret_cast<void*>(a.staged), a.host, a.stage_bytes);
          h2d_bytes_.fetch_add(a.stage_bytes, std::memory_order_relaxed);
        } else if (a.kind == kArgHostOut) {
          a.staged = arena_->Allocate(a.stage_bytes, /*zero=*/true);
        }
        if (a.kind <= kArgHostInOut) a.host = nullptr;  // never touched off the JS thread
      }
      plan->prestaged = true;
    }
  } catch (...) {
    plan->Release();
    throw;
  }
}

void DeviceCore::CopyResults(const LaunchPlan& plan, const char* method,
                             const std::vector<std::pair<uint8_t*, uint64_t>>& hosts) {
  CheckOpen();  // the staging buffers are gone with a closed device
  const size_t n = plan.args.size();
  CheckResultViews(plan.args, hosts, method);  // nothing is written unless all fit
  for (size_t i = 0; i < n; ++i) {
    const LaunchArg& a = plan.args[i];
    if (a.kind != kArgHostOut && a.kind != kArgHostInOut) continue;
    if (a.stage_bytes != 0) std::memcpy(hosts[i].first, reinterpret_cast<const void*>(a.staged), a.stage_bytes);
    d2h_bytes_.fetch_add(a.stage_bytes, std::memory_order_relaxed);
  }
}

uint64_t DeviceCore::Launch(LaunchPlan* plan) {
  std::lock_guard<std::mutex> lock(launch_mu_);
  CheckOpen();  // under the lock: Close() may have run while this launch waited
  return LaunchLocked(plan);
}

uint64_t DeviceCore::LaunchLocked(LaunchPlan* plan) {
  EntryFn entry = plan->module->entry;
  std::vector<LaunchArg>& args = plan->args;

  {
    std::lock_guard<std::mutex> lock(fail_mu_);
    failed_.store(false, std::memory_order_release);
    fail_message_.clear();
  }

  // Orchestration buffers are released when this scope ends, on success and on every
  // failure path (staging buffers belong to the plan: LaunchPlan::Release).
  struct LaunchBuffers {
    DeviceCore* device;
    ~LaunchBuffers() {
      std::lock_guard<std::mutex> lock(device->orch_mu_);
      for (uint64_t addr : device->orch_buffers_) device->arena_->FreeQuiet(addr);
      device->orch_buffers_.clear();
      device->orch_kept_.clear();  // the module keeps them
      device->orch_module_ = nullptr;
      device->orch_next_ = 0;
    }
  } buffers{this};
  // No task of this launch runs yet (submissions synchronize through the scheduler's lock).
  orch_module_ = plan->module.get();
  orch_next_ = 0;

  const size_t n = args.size();
  slots_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    LaunchArg& a = args[i];
    switch (a.kind) {
      case kArgHostIn:
      case kArgHostInOut:
        if (!plan->prestaged) {
          a.staged = arena_->Allocate(a.stage_bytes, /*zero=*/false);
          if (a.stage_bytes != 0) std::memcpy(reinterpret_cast<void*>(a.staged), a.host, a.stage_bytes);
          h2d_bytes_.fetch_add(a.stage_bytes, std::memory_order_relaxed);
        }
        slots_[i] = static_cast<int64_t>(a.staged);
        break;
      case kArgHostOut:
        if (!plan->prestaged) a.staged = arena_->Allocate(a.stage_bytes, /*zero=*/true);
        slots_[i] = static_cast<int64_t>(a.staged);
        break;
      case kArgDevice:  // pinned by Prepare: live when queued, and not released since
      case kArgInt:
      case kArgFloat:
      case kArgBool:
        slots_[i] = a.value;
        break;
      default:
        throw DeviceError("launch: argument " + std::to_string(i) + " has invalid kind " +
                              std::to_string(a.kind) + " (expected 0..6)",
                          kCodeBadArgument, static_cast<int64_t>(i));
    }
  }

  trace_.valid = false;
  recording_.store(record_mask_ != 0, std::memory_order_relaxed);
  if (record_mask_ != 0) {
    trace_.mask = record_mask_;
    trace_.slots = slots_;
    trace_.orch_buffers.clear();
  }
  scheduler_->BeginLaunch(record_mask_, dump_bytes_);
  const int64_t start = NowNs();
  int rc = 0;
  try {
    rc = entry(&api_, slots_.data());
  } catch (const std::exception& e) {
    RecordFailure(std::string("tspto_entry threw a C++ exception: ") + e.what());
    rc = -1;
  } catch (...) {
    RecordFailure("tspto_entry threw a C++ exception");
    rc = -1;
  }
  const int64_t entry_end = NowNs();
  // Tasks reference the staging buffers: always drain before anything is released.
  scheduler_->WaitAll();
  const int64_t end = std::max(entry_end, scheduler_->last_task_end_ns());
  launches_.fetch_add(1, std::memory_order_relaxed);
  if (record_mask_ != 0) {
    trace_.valid = true;
    trace_.start_ns = start;
    trace_.entry_end_ns = entry_end;
    trace_.end_ns = end;
  }

  const bool failed = failed_.load(std::memory_order_acquire);
  if (failed) {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(fail_mu_);
      message = fail_message_;
    }
    throw DeviceError("kernel failure: " + message, kCodeKernelFailure);
  }
  if (rc != 0) {
    throw DeviceError("kernel failure: tspto_entry returned " + std::to_string(rc) +
                          " without recording a failure message",
                      kCodeKernelFailure);
  }
  // Results of host Out / InOut arguments (only for successful launches: a failed launch
  // leaves the host buffers untouched). A synchronous launch runs on the JS thread, so its
  // views are as Prepare validated them; a prestaged (async) launch is copied back by the
  // caller on the JS thread after re-checking the views.
  if (!plan->prestaged) {
    for (size_t i = 0; i < n; ++i) {
      const LaunchArg& a = args[i];
      if (a.kind == kArgHostOut || a.kind == kArgHostInOut) {
        if (a.stage_bytes != 0) std::memcpy(a.host, reinterpret_cast<const void*>(a.staged), a.stage_bytes);
        d2h_bytes_.fetch_add(a.stage_bytes, std::memory_order_relaxed);
      }
    }
  }
  return static_cast<uint64_t>(end - start);
}

DeviceStats DeviceCore::Stats() {
  CheckOpen();
  DeviceStats s{};
  s.launches = launches_.load(std::memory_order_relaxed);
  s.h2d_bytes = h2d_bytes_.load(std::memory_order_relaxed);
  s.d2h_bytes = d2h_bytes_.load(std::memory_order_relaxed);
  s.bytes_in_use = arena_->bytes_in_use();
  s.live_allocations = arena_->live_allocations();
  s.pending_frees = arena_->pending_frees();
  s.capacity = arena_->capacity();
  s.modules_loaded = modules_.Loaded();
  s.module_loads = modules_.Loads();
  s.tasks_run = scheduler_->tasks_run();
  return s;
}

// ---------------------------------------------------------------------------------------
// Runtime API given to program libraries

void DeviceCore::RecordFailure(const std::string& message) {
  std::lock_guard<std::mutex> lock(fail_mu_);
  if (failed_.load(std::memory_order_relaxed)) return;  // the first failure wins
  fail_message_ = message;
  failed_.store(true, std::memory_order_release);
}

int DeviceCore::ApiSubmit(void* ctx, TsptoKernelFn fn, const char* name, int32_t scope_id,
                          const int64_t* args, int32_t nargs, const TsptoAccess* accesses,
                          int32_t naccesses) {
  auto* d = static_cast<DeviceCore*>(ctx);
  if (d->failed_.load(std::memory_order_acquire)) return 1;
  const std::string error =
      d->scheduler_->Submit(fn, name, scope_id, args, nargs, accesses, naccesses);
  if (!error.empty()) {
    d->RecordFailure(error);
    return 1;
  }
  return 0;
}

int DeviceCore::ApiWaitAll(void* ctx) {
  auto* d = static_cast<DeviceCore*>(ctx);
  if (!d->scheduler_->WaitAll()) {
    d->RecordFailure(WithTaskContext("wait_all called from a kernel (core thread)"));
    return 1;
  }
  return d->failed_.load(std::memory_order_acquire) ? 1 : 0;
}

int64_t DeviceCore::ApiAlloc(void* ctx, int64_t nbytes) {
  auto* d = static_cast<DeviceCore*>(ctx);
  if (nbytes < 0) {
    d->RecordFailure(WithTaskContext("rt->alloc: negative size " + std::to_string(nbytes)));
    return 0;
  }
  const uint64_t n = static_cast<uint64_t>(nbytes);
  std::lock_guard<std::mutex> lock(d->orch_mu_);
  Module* m = d->orch_module_;
  const size_t k = d->orch_next_++;
  uint64_t addr = 0;
  if (m != nullptr && n < Module::kMaxCachedBufferBytes) {
    // The module's k-th buffer, kept from an earlier launch: zero-filled again.
    if (k < m->buffers.size() && m->buffers[k].bytes >= n) {
      addr = m->buffers[k].addr;
      d->arena_->Zero(addr, n);
    } else {
      std::string error;
      addr = d->arena_->TryAllocate(n, true, &error);
      if (addr == 0) {
        d->RecordFailure(WithTaskContext(error));
        return 0;
      }
      if (k < m->buffers.size()) {
        d->arena_->FreeQuiet(m->buffers[k].addr);  // too small for this launch: replaced
        m->buffers[k] = Module::LaunchBuffer{addr, n};
      } else {
        m->buffers.resize(k + 1);
        m->buffers[k] = Module::LaunchBuffer{addr, n};
      }
    }
    d->orch_kept_.push_back(addr);
  } else {
    std::string error;
    addr = d->arena_->TryAllocate(n, true, &error);
    if (addr == 0) {
      d->RecordFailure(WithTaskContext(error));
      return 0;
    }
    d->orch_buffers_.push_back(addr);
  }
  if (d->recording_.load(std::memory_order_relaxed)) {
    d->trace_.orch_buffers.emplace_back(addr, n);
  }
  return static_cast<int64_t>(addr);
}

void DeviceCore::ApiFree(void* ctx, int64_t addr) {
  auto* d = static_cast<DeviceCore*>(ctx);
  {
    std::lock_guard<std::mutex> lock(d->orch_mu_);
    const uint64_t a = static_cast<uint64_t>(addr);
    auto it = std::find(d->orch_buffers_.begin(), d->orch_buffers_.end(), a);
    if (it != d->orch_buffers_.end()) {
      d->orch_buffers_.erase(it);
      d->arena_->Free(a, "rt->free");
      return;
    }
    auto kept = std::find(d->orch_kept_.begin(), d->orch_kept_.end(), a);
    if (kept != d->orch_kept_.end()) {
      d->orch_kept_.erase(kept);  // back to the module for its next launch
      return;
    }
  }
  d->RecordFailure(WithTaskContext("rt->free: " + Hex(static_cast<uint64_t>(addr)) +
                                   " is not a live buffer allocated by this launch's "
                                   "orchestration (rt->alloc)"));
}

void DeviceCore::ApiFail(void* ctx, const char* message) {
  auto* d = static_cast<DeviceCore*>(ctx);
  d->RecordFailure(WithTaskContext(message != nullptr && *message != '\0'
                                       ? std::string(message)
                                       : std::string("unspecified failure")));
}

int DeviceCore::ApiFailed(void* ctx) {
  return static_cast<DeviceCore*>(ctx)->failed_.load(std::memory_order_acquire) ? 1 : 0;
}

}  // namespace tspto
