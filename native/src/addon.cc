// Node-API binding of the tspto native runtime: exports { Device, abiVersion }.
//
// The addon keeps no mutable globals: everything an environment needs lives in per-env
// instance data (EnvState), so every Node worker_thread can load and use it. An env
// cleanup hook closes the env's devices (joining their threads), so a script that never
// calls close() still exits promptly.
//
// The parts: addon_args (argument conversion, errors), addon_env.h (per-env state),
// launch_worker.h (launchAsync), device_wrap.h (the Device / CudaDevice classes).
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>

#include "addon_args.h"
#include "addon_env.h"
#include "cuda_device.h"
#include "cuda_host.h"
#include "device.h"
#include "device_wrap.h"
#include "mpi.h"
#include "errors.h"
#include "tspto_abi.h"

namespace tspto {
using namespace addon;
namespace {

// ---------------------------------------------------------------------------------------
// cudaHost: the cuda device's host logic that needs no GPU, for tests (cuda_host.h).

// tensorMapArgs(row: number[9], kernels, maxSlots) -> the cuTensorMapEncodeTiled arguments,
// or throws the loader's message for a bad row.
Napi::Value TensorMapArgsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsArray()) throw Napi::TypeError::New(env, "tensorMapArgs(row, kernels, maxSlots)");
  Napi::Array a = info[0].As<Napi::Array>();
  if (a.Length() != 9) throw Napi::TypeError::New(env, "tensorMapArgs: a row has 9 numbers");
  int64_t row[9];
  for (uint32_t i = 0; i < 9; ++i) row[i] = a.Get(i).As<Napi::Number>().Int64Value();
  TensorMapSpec s;
  std::string why;
  if (!ParseTensorMapRow(row, info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value(), &s, &why)) throw Napi::Error::New(env, why);
  const TensorMapArgs t = TensorMapEncodeArgs(s);
  Napi::Object o = Napi::Object::New(env);
  auto arr = [&](std::initializer_list<double> v) { Napi::Array r = Napi::Array::New(env, v.size()); uint32_t i = 0; for (double x : v) r.Set(i++, Napi::Number::New(env, x)); return r; };
  o.Set("kernel", s.kernel);
  o.Set("slot", s.slot);
  o.Set("dtype", t.dtype);
  o.Set("rank", t.rank);
  o.Set("dims", arr({static_cast<double>(t.dims[0]), static_cast<double>(t.dims[1])}));
  o.Set("strides", arr({static_cast<double>(t.strides[0])}));
  o.Set("box", arr({static_cast<double>(t.box[0]), static_cast<double>(t.box[1])}));
  o.Set("elementStrides", arr({static_cast<double>(t.element_strides[0]), static_cast<double>(t.element_strides[1])}));
  o.Set("interleave", t.interleave);
  o.Set("swizzle", t.swizzle);
  o.Set("l2Promotion", t.l2_promotion);
  o.Set("oobFill", t.oob_fill);
  return o;
}

// graphDecisions(runs) -> for each run of an orchestration (a list of segments, each a list of
// launches [kernel, grid, block, shared, slot values...]), per segment { rebuild, patch }:
// what the cuda device does with that segment's CUDA graph (GraphBook, cuda_host.h).
Napi::Value GraphDecisionsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "graphDecisions(runs)");
  Napi::Array runs = info[0].As<Napi::Array>();
  GraphBook book;
  std::vector<GraphNodeDesc> nodes;
  GraphDecision d;
  Napi::Array out = Napi::Array::New(env, runs.Length());
  for (uint32_t r = 0; r < runs.Length(); ++r) {
    Napi::Array segs = runs.Get(r).As<Napi::Array>();
    Napi::Array rout = Napi::Array::New(env, segs.Length());
    for (uint32_t sg = 0; sg < segs.Length(); ++sg) {
      Napi::Array launches = segs.Get(sg).As<Napi::Array>();
      nodes.assign(launches.Length(), GraphNodeDesc{});
      for (uint32_t i = 0; i < launches.Length(); ++i) {
        Napi::Array l = launches.Get(i).As<Napi::Array>();
        if (l.Length() < 4 || l.Length() - 4 > kGraphArgsBytes / 8) throw Napi::TypeError::New(env, "graphDecisions: a launch is [kernel, grid, block, shared, slots...]");
        GraphNodeDesc& nd = nodes[i];
        nd.kernel = l.Get(0u).As<Napi::Number>().Int32Value();
        nd.grid = l.Get(1u).As<Napi::Number>().Uint32Value();
        nd.block = l.Get(2u).As<Napi::Number>().Uint32Value();
        nd.shared = l.Get(3u).As<Napi::Number>().Uint32Value();
        for (uint32_t w = 4; w < l.Length(); ++w) {
          const int64_t v = l.Get(w).As<Napi::Number>().Int64Value();
          std::memcpy(nd.args() + (w - 4) * 8, &v, 8);
        }
      }
      book.Decide(sg, nodes, nodes.size(), &d);
      Napi::Object o = Napi::Object::New(env);
      o.Set("rebuild", d.rebuild);
      Napi::Array patch = Napi::Array::New(env, d.patch.size());
      for (size_t i = 0; i < d.patch.size(); ++i) patch.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(d.patch[i])));
      o.Set("patch", patch);
      rout.Set(sg, o);
    }
    out.Set(r, rout);
  }
  return out;
}

Napi::Object CudaHostBinding(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("graphDecisions", Napi::Function::New(env, GraphDecisionsJs, "graphDecisions"));
  o.Set("tensorMapArgs", Napi::Function::New(env, TensorMapArgsJs, "tensorMapArgs"));
  return o;
}

// ---------------------------------------------------------------------------------------
// Module init (runs once per environment: main thread and each worker_thread)

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto state = std::make_shared<EnvState>();
  env.SetInstanceData<AddonData>(new AddonData{state, Napi::FunctionReference()});
  // Runs at env teardown, after in-flight async work has completed: close what is open.
  env.AddCleanupHook([state]() { state->CloseAll(); });
  Napi::Function device = DeviceWrap<DeviceCore>::Define(env, "Device");
  env.GetInstanceData<AddonData>()->device_ctor = Napi::Persistent(device);
  exports.Set("Device", device);
  exports.Set("CudaDevice", DeviceWrap<CudaDeviceCore>::Define(env, "CudaDevice"));
  exports.Set("mpi", MpiBinding(env));
  exports.Set("cudaHost", CudaHostBinding(env));
  exports.Set("abiVersion", Napi::Number::New(env, TSPTO_ABI_VERSION));
  return exports;
}

}  // namespace

std::shared_ptr<DeviceCore> DeviceCoreOf(Napi::Env env, Napi::Value v, const char* what) {
  AddonData* data = env.GetInstanceData<AddonData>();
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(data->device_ctor.Value())) {
    throw Napi::TypeError::New(env, std::string(what) + ": expected a Device, got " + Describe(v));
  }
  DeviceWrap<DeviceCore>* w = DeviceWrap<DeviceCore>::Unwrap(v.As<Napi::Object>());
  if (!w->core_ || w->core_->closed()) throw ToJsError(env, DeviceError(std::string(what) + ": device is closed", kCodeClosed));
  return w->core_;
}

}  // namespace tspto

static Napi::Object InitTsptoNative(Napi::Env env, Napi::Object exports) {
  return tspto::Init(env, exports);
}

NODE_API_MODULE(tspto_native, InitTsptoNative)
