// The JS classes of device cores (Device, CudaDevice) of the Node-API binding; registered by
// Init in addon.cc.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "addon_args.h"
#include "addon_env.h"
#include "cuda_device.h"
#include "device.h"
#include "errors.h"
#include "launch_worker.h"
#include "mpi.h"

namespace tspto {
namespace addon {

// The JS class of a device core: `Device` (cpu, DeviceCore) and `CudaDevice` (cuda,
// CudaDeviceCore) share this binding.
template <typename CoreT>
class DeviceWrap : public Napi::ObjectWrap<DeviceWrap<CoreT>> {
 public:
  using Base = Napi::ObjectWrap<DeviceWrap<CoreT>>;
  using Plan = typename CoreT::Plan;  // LaunchPlan (cpu) or CudaDeviceCore::Plan
  static Napi::Function Define(Napi::Env env, const char* name) {
    return Base::DefineClass(
        env, name,
        {
            Base::template InstanceMethod<&DeviceWrap::Alloc>("alloc"),
            Base::template InstanceMethod<&DeviceWrap::Free>("free"),
            Base::template InstanceMethod<&DeviceWrap::IsLive>("isLive"),
            Base::template InstanceMethod<&DeviceWrap::H2D>("h2d"),
            Base::template InstanceMethod<&DeviceWrap::D2H>("d2h"),
            Base::template InstanceMethod<&DeviceWrap::WriteDevice>("writeDevice"),
            Base::template InstanceMethod<&DeviceWrap::ReadDevice>("readDevice"),
            Base::template InstanceMethod<&DeviceWrap::D2D>("d2d"),
            Base::template InstanceMethod<&DeviceWrap::LoadModule>("loadModule"),
            Base::template InstanceMethod<&DeviceWrap::UnloadModule>("unloadModule"),
            Base::template InstanceMethod<&DeviceWrap::Launch>("launch"),
            Base::template InstanceMethod<&DeviceWrap::LaunchAsync>("launchAsync"),
            Base::template InstanceMethod<&DeviceWrap::Stats>("stats"),
            Base::template InstanceMethod<&DeviceWrap::SetRecording>("setRecording"),
            Base::template InstanceMethod<&DeviceWrap::TakeTrace>("takeTrace"),
            Base::template InstanceMethod<&DeviceWrap::Close>("close"),
            Base::template InstanceAccessor<&DeviceWrap::Closed>("closed"),
        });
  }

  explicit DeviceWrap(const Napi::CallbackInfo& info) : Base(info) {
    Napi::Env env = info.Env();
    if (!info.IsConstructCall()) throw BadArg(env, "Device must be called with new");
    if (!info[0].IsObject()) {
      throw BadArg(env, "Device: options must be an object, got " + Describe(info[0]));
    }
    Napi::Object o = info[0].As<Napi::Object>();
    DeviceOptions opts;
    opts.device_id = static_cast<uint32_t>(Option(o, "deviceId", 0, 2147483647.0));
    opts.core_threads = static_cast<uint32_t>(Option(o, "coreThreads", 1, 1024));
    opts.sched_threads = static_cast<uint32_t>(Option(o, "schedThreads", 0, 1024));
    opts.scratch_bytes = Option(o, "scratchBytes", 0, 1099511627776.0);      // 1 TiB
    opts.memory_bytes = Option(o, "memoryBytes", 64, 140737488355328.0);     // 128 TiB
    opts.ring_task_window = static_cast<uint32_t>(Option(o, "ringTaskWindow", 1, 16777216));
    opts.ring_heap = Option(o, "ringHeap", 1, kMaxSafeInteger);
    opts.ring_dep_pool = Option(o, "ringDepPool", 1, 2147483647.0);
    core_ = Guard(env, [&] { return std::make_shared<CoreT>(opts); });
    env.GetInstanceData<AddonData>()->state->Add(core_);
  }

  ~DeviceWrap() override {
    // Garbage-collected without close(): release threads and memory now.
    if (core_) core_->Close();
  }

 private:
  // An integer option in [lo, hi]; the message names the field, the rule and the value.
  static uint64_t Option(Napi::Object o, const char* name, double lo, double hi) {
    Napi::Value v = o.Get(name);
    const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
    if (!(d == std::trunc(d) && d >= lo && d <= hi)) {
      throw BadArg(o.Env(),
                   std::string("Device: option '") + name + "' must be an integer in [" +
                       std::to_string(static_cast<uint64_t>(lo)) + ", " +
                       std::to_string(static_cast<uint64_t>(hi)) + "], got " + Describe(v),
                   true);
    }
    return static_cast<uint64_t>(d);
  }

  CoreT& Core(Napi::Env env) {
    if (core_->closed()) throw ToJsError(env, DeviceError("device is closed", kCodeClosed));
    return *core_;
  }

  Napi::Value Alloc(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t n = ByteCountArg(env, info[0], "alloc");
    const uint64_t addr = Guard(env, [&] { return core.Alloc(n); });
    return Napi::BigInt::New(env, addr);
  }

  // Returns true when the release was deferred (launches in flight hold the allocation).
  Napi::Value Free(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t addr = AddressArg(env, info[0], "free");
    return Napi::Boolean::New(env, Guard(env, [&] { return core.Free(addr); }));
  }

  Napi::Value IsLive(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    uint64_t addr = 0;
    if (!ToUint64(info[0], &addr)) return Napi::Boolean::New(env, false);
    return Napi::Boolean::New(env, Guard(env, [&] { return core.IsLive(addr); }));
  }

  // Resolves a host view argument and checks it holds at least nbytes.
  static uint8_t* HostBytes(Napi::Env env, Napi::Value v, uint64_t nbytes, const char* method,
                            const char* role, uint64_t addr) {
    uint8_t* data = nullptr;
    uint64_t len = 0;
    if (!HostView(env, v, &data, &len)) {
      throw BadArg(env, std::string(method) + ": " + role + " must be an ArrayBufferView, got " +
                            Describe(v));
    }
    if (len < nbytes) {
      throw BadArg(env, std::string(method) + ": " + role + " has " + std::to_string(len) +
                            " bytes, fewer than nbytes=" + std::to_string(nbytes) +
                            " (device address " + Hex(addr) + ")",
                   true, -1, kCodeHostView);
    }
    return data;
  }

  void H2D(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t addr = AddressArg(env, info[0], "h2d");
    const uint64_t n = ByteCountArg(env, info[2], "h2d");
    const uint8_t* src = HostBytes(env, info[1], n, "h2d", "source view", addr);
    Guard(env, [&] { core.H2D(addr, src, n); });
  }

  void D2H(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t addr = AddressArg(env, info[1], "d2h");
    const uint64_t n = ByteCountArg(env, info[2], "d2h");
    uint8_t* dst = HostBytes(env, info[0], n, "d2h", "destination view", addr);
    Guard(env, [&] { core.D2H(dst, addr, n); });
  }

  // Device-side accesses of the interp platform's executor: same checks, not counted as
  // host<->device transfers.
  void WriteDevice(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t addr = AddressArg(env, info[0], "writeDevice");
    const uint64_t n = ByteCountArg(env, info[2], "writeDevice");
    const uint8_t* src = HostBytes(env, info[1], n, "writeDevice", "source view", addr);
    Guard(env, [&] { core.H2D(addr, src, n, false); });
  }

  void ReadDevice(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t addr = AddressArg(env, info[1], "readDevice");
    const uint64_t n = ByteCountArg(env, info[2], "readDevice");
    uint8_t* dst = HostBytes(env, info[0], n, "readDevice", "destination view", addr);
    Guard(env, [&] { core.D2H(dst, addr, n, false); });
  }

  // d2d(dst, src, nbytes): device-to-device copy (cuda); the cpu device stages it in JS.
  void D2D(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint64_t dst = AddressArg(env, info[0], "d2d");
    const uint64_t src = AddressArg(env, info[1], "d2d");
    const uint64_t n = ByteCountArg(env, info[2], "d2d");
    if constexpr (std::is_same_v<CoreT, CudaDeviceCore>) {
      Guard(env, [&] { core.D2D(dst, src, n); });
    } else {
      std::vector<uint8_t> tmp(n);
      Guard(env, [&] { core.D2H(tmp.data(), src, n, false); core.H2D(dst, tmp.data(), n, false); });
    }
  }

  Napi::Value LoadModule(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    if (!info[0].IsString()) {
      throw BadArg(env, "loadModule: path must be a string, got " + Describe(info[0]));
    }
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    // Optional argBytes: per launch slot, the bytes of its tensor (-1 for scalars), or for a
    // tensor with dynamic dimensions [staticBytes, slot, ...] (times those slots' values).
    // Every launch then checks each host view's live length against them.
    ArgLayout arg_bytes;
    if (!info[1].IsUndefined()) {
      if (!info[1].IsArray()) {
        throw BadArg(env, "loadModule: argBytes must be an array, got " + Describe(info[1]));
      }
      Napi::Array a = info[1].As<Napi::Array>();
      const uint32_t n = a.Length();
      auto integer = [&](Napi::Value v, double lo, double hi, const std::string& what) -> int64_t {
        const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
        if (!(d == std::trunc(d) && d >= lo && d <= hi)) {
          throw BadArg(env, "loadModule: " + what + " must be an integer in [" + std::to_string(static_cast<int64_t>(lo)) +
                                ", " + std::to_string(static_cast<int64_t>(hi)) + "], got " + Describe(v), true);
        }
        return static_cast<int64_t>(d);
      };
      for (uint32_t i = 0; i < n; ++i) {
        Napi::Value v = a.Get(i);
        const std::string at = "argBytes[" + std::to_string(i) + "]";
        std::vector<uint32_t> dims;
        if (v.IsArray()) {
          Napi::Array x = v.As<Napi::Array>();
          if (x.Length() < 2) throw BadArg(env, "loadModule: " + at + " must be [staticBytes, slot, ...], got " + Describe(v), true);
          arg_bytes.bytes.push_back(integer(x.Get(0u), 0, kMaxSafeInteger, at + "[0]"));
          for (uint32_t k = 1; k < x.Length(); ++k) {
            dims.push_back(static_cast<uint32_t>(integer(x.Get(k), 0, n - 1.0, at + "[" + std::to_string(k) + "]")));
          }
        } else {
          arg_bytes.bytes.push_back(integer(v, -1, kMaxSafeInteger, at));
        }
        arg_bytes.dims.push_back(std::move(dims));
      }
    }
    return Napi::Number::New(env, Guard(env, [&] { return core.LoadModule(path, std::move(arg_bytes)); }));
  }

  void UnloadModule(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const uint32_t id = ModuleIdArg(env, info[0], "unloadModule");
    Guard(env, [&] { core.UnloadModule(id); });
  }

  // The synchronous hot path: one crossing, views used in place, no JS allocation except
  // the returned number.
  Napi::Value Launch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    ParseLaunch(info, "launch", &plan_.module_id, &plan_.args, nullptr);
    struct Done {  // staging and holds released on every path; the module let go
      Plan& plan;
      ~Done() { plan.Release(); plan.module.reset(); }
    } done{plan_};
    const uint64_t ns = Guard(env, [&] {
      core.Prepare(&plan_, "launch", /*stage_now=*/false);
      return core.Launch(&plan_);
    });
    return Napi::Number::New(env, static_cast<double>(ns));
  }

  // Always returns a promise: argument errors and a closed device reject it.
  Napi::Value LaunchAsync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    try {
      CoreT& core = Core(env);
      auto plan = std::make_unique<Plan>();
      std::vector<Napi::ObjectReference> keep;
      ParseLaunch(info, "launchAsync", &plan->module_id, &plan->args, &keep);
      // Validated, pinned and staged now, on the JS thread.
      Guard(env, [&] { core.Prepare(plan.get(), "launchAsync", /*stage_now=*/true); });
      auto* worker = new LaunchWorker<CoreT>(env, core_, this->Value(), std::move(plan), std::move(keep));
      Napi::Promise promise = worker->Promise();
      worker->Queue();
      return promise;
    } catch (const Napi::Error& e) {
      Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
      deferred.Reject(e.Value());
      return deferred.Promise();
    }
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const DeviceStats s = Guard(env, [&] { return core.Stats(); });
    Napi::Object o = Napi::Object::New(env);
    auto set = [&](const char* k, uint64_t v) { o.Set(k, Napi::Number::New(env, static_cast<double>(v))); };
    set("launches", s.launches);
    set("h2dBytes", s.h2d_bytes);
    set("d2hBytes", s.d2h_bytes);
    set("bytesInUse", s.bytes_in_use);
    set("liveAllocations", s.live_allocations);
    set("pendingFrees", s.pending_frees);
    set("capacity", s.capacity);
    set("modulesLoaded", s.modules_loaded);
    set("moduleLoads", s.module_loads);
    set("tasksRun", s.tasks_run);
    set("enqueueNs", s.enqueue_ns);
    set("syncNs", s.sync_ns);
    return o;
  }

  // setRecording(mask, dumpBytes): TraceFlags of the following launches (1 tasks+edges,
  // 2 argument snapshots, 4 hardware counters); 0 turns recording off.
  void SetRecording(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    const double mask = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
    const double dump = info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : 0;
    if (!(mask >= 0 && mask <= 7 && mask == std::trunc(mask)) || !(dump >= 0 && dump == std::trunc(dump))) {
      throw BadArg(env, "setRecording: mask must be an integer in [0, 7] and dumpBytes >= 0, got " +
                            Describe(info[0]) + ", " + Describe(info[1]),
                   true);
    }
    core.SetRecording(static_cast<uint32_t>(mask), static_cast<uint64_t>(dump));
  }

  // takeTrace(): the trace of the last launch that recorded, or null (none since the last
  // takeTrace). Packed, a few objects whatever the task count (src/targets/native.ts
  // unpackTrace reads it): times are steady_clock ns, addresses BigInts.
  //   names:   kernel names, tasks refer to them by index
  //   tasks:   Float64Array, TRACE_TASK_FIELDS per task: id, name index, scope, core,
  //            submit, start, end, cycles, instructions, access count
  //   acc:     Float64Array, TRACE_ACC_FIELDS per access (tasks' accesses in order): nbytes,
  //            mode, rank, elem bytes, dims[4], offsets[4], extents[4]
  //   addrs:   BigUint64Array, 2 per access: base, tensor
  //   dump:    (argument snapshots) Uint8Array of every access's before and after bytes, and
  //   dumpIdx: Float64Array, 4 per access: before offset, length, after offset, length
  //   edges:   Int32Array, 4 per edge: from, to, from access, to access
  Napi::Value TakeTrace(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    CoreT& core = Core(env);
    Napi::Value result = env.Null();
    core.TakeTrace([&](const typename CoreT::LaunchTrace* tr, const std::deque<TraceTask>& tasks,
                       const std::vector<TraceEdge>& edges, const std::string& pmu_error) {
      if (tr == nullptr) return;
      constexpr size_t kTaskFields = 10, kAccFields = 4 + 3 * TSPTO_MAX_RANK;
      auto num = [&](double v) { return Napi::Number::New(env, v); };
      Napi::Object o = Napi::Object::New(env);
      o.Set("launchStartNs", num(static_cast<double>(tr->start_ns)));
      o.Set("entryEndNs", num(static_cast<double>(tr->entry_end_ns)));
      o.Set("launchEndNs", num(static_cast<double>(tr->end_ns)));
      o.Set("mask", num(tr->mask));
      o.Set("pmuError", Napi::String::New(env, pmu_error));
      Napi::Array slots = Napi::Array::New(env, tr->slots.size());
      for (size_t i = 0; i < tr->slots.size(); ++i) slots.Set(i, Napi::BigInt::New(env, tr->slots[i]));
      o.Set("argSlots", slots);
      Napi::Array orch = Napi::Array::New(env, tr->orch_buffers.size());
      for (size_t i = 0; i < tr->orch_buffers.size(); ++i) {
        Napi::Object b = Napi::Object::New(env);
        b.Set("base", Napi::BigInt::New(env, tr->orch_buffers[i].first));
        b.Set("nbytes", num(static_cast<double>(tr->orch_buffers[i].second)));
        orch.Set(i, b);
      }
      o.Set("orchBuffers", orch);
      size_t n_acc = 0, dump_bytes = 0;
      for (const TraceTask& t : tasks) {
        n_acc += t.accesses.size();
        for (const TraceAccess& a : t.accesses) dump_bytes += a.before.size() + a.after.size();
      }
      const bool dump = (tr->mask & kTraceDump) != 0;
      Napi::Float64Array ta = Napi::Float64Array::New(env, tasks.size() * kTaskFields);
      Napi::Float64Array aa = Napi::Float64Array::New(env, n_acc * kAccFields);
      Napi::BigUint64Array ad = Napi::BigUint64Array::New(env, n_acc * 2);
      Napi::Float64Array di = Napi::Float64Array::New(env, dump ? n_acc * 4 : 0);
      Napi::Uint8Array db = Napi::Uint8Array::New(env, dump ? dump_bytes : 0);
      std::vector<std::string> names;
      std::unordered_map<const char*, uint32_t> name_ids;  // by pointer: kernel names are static strings
      double* tp = ta.Data();
      double* ap = aa.Data();
      uint64_t* pp = ad.Data();
      double* ip = dump ? di.Data() : nullptr;
      uint8_t* bp = dump ? db.Data() : nullptr;
      size_t boff = 0;
      for (const TraceTask& t : tasks) {
        const char* nm = t.name ? t.name : "?";
        auto it = name_ids.find(nm);
        if (it == name_ids.end()) { it = name_ids.emplace(nm, static_cast<uint32_t>(names.size())).first; names.emplace_back(nm); }
        const uint32_t id = it->second;
        const double tf[kTaskFields] = {static_cast<double>(t.id), static_cast<double>(id), static_cast<double>(t.scope),
                                        static_cast<double>(t.core), static_cast<double>(t.dispatch_ns), static_cast<double>(t.start_ns),
                                        static_cast<double>(t.end_ns), static_cast<double>(t.cycles), static_cast<double>(t.instructions),
                                        static_cast<double>(t.accesses.size())};
        std::memcpy(tp, tf, sizeof tf);
        tp += kTaskFields;
        for (const TraceAccess& x : t.accesses) {
          const TsptoAccess& a = x.access;
          ap[0] = static_cast<double>(a.nbytes);
          ap[1] = a.mode;
          ap[2] = a.rank;
          ap[3] = static_cast<double>(a.elem_bytes);
          for (int32_t d = 0; d < TSPTO_MAX_RANK; ++d) {
            const bool in = d < a.rank;
            ap[4 + d] = in ? static_cast<double>(a.dims[d]) : 0;
            ap[4 + TSPTO_MAX_RANK + d] = in ? static_cast<double>(a.offsets[d]) : 0;
            ap[4 + 2 * TSPTO_MAX_RANK + d] = in ? static_cast<double>(a.extents[d]) : 0;
          }
          ap += kAccFields;
          *pp++ = static_cast<uint64_t>(a.base);
          *pp++ = static_cast<uint64_t>(a.tensor);
          if (dump) {
            ip[0] = static_cast<double>(boff);
            ip[1] = static_cast<double>(x.before.size());
            if (!x.before.empty()) std::memcpy(bp + boff, x.before.data(), x.before.size());
            boff += x.before.size();
            ip[2] = static_cast<double>(boff);
            ip[3] = static_cast<double>(x.after.size());
            if (!x.after.empty()) std::memcpy(bp + boff, x.after.data(), x.after.size());
            boff += x.after.size();
            ip += 4;
          }
        }
      }
      Napi::Array na = Napi::Array::New(env, names.size());
      for (size_t i = 0; i < names.size(); ++i) na.Set(i, Napi::String::New(env, names[i]));
      o.Set("names", na);
      o.Set("tasks", ta);
      o.Set("acc", aa);
      o.Set("addrs", ad);
      if (dump) { o.Set("dump", db); o.Set("dumpIdx", di); }
      Napi::Int32Array es = Napi::Int32Array::New(env, edges.size() * 4);
      int32_t* ep = es.Data();
      for (const TraceEdge& e : edges) {
        *ep++ = static_cast<int32_t>(e.from);
        *ep++ = static_cast<int32_t>(e.to);
        *ep++ = e.from_access;
        *ep++ = e.to_access;
      }
      o.Set("edges", es);
      o.Set("rankFields", num(TSPTO_MAX_RANK));
      result = o;
    });
    return result;
  }

  void Close(const Napi::CallbackInfo& info) { core_->Close(); }

  Napi::Value Closed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), core_->closed());
  }

  std::shared_ptr<CoreT> core_;
  Plan plan_;  // reused by the synchronous launch (declared after core_: destroyed first)

  friend std::shared_ptr<DeviceCore> tspto::DeviceCoreOf(Napi::Env, Napi::Value, const char*);
};

}  // namespace addon
}  // namespace tspto
