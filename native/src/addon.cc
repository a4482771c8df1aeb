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

#include <memory>
#include <string>

#include "addon_args.h"
#include "addon_env.h"
#include "cuda_device.h"
#include "device.h"
#include "device_wrap.h"
#include "mpi.h"
#include "errors.h"
#include "tspto_abi.h"

namespace tspto {
using namespace addon;
namespace {

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
