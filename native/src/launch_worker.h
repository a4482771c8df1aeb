// launchAsync: the launch runs on a libuv pool thread and settles a promise (device_wrap.h).
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "addon_args.h"

namespace tspto {
namespace addon {

template <typename Core>
class LaunchWorker : public Napi::AsyncWorker {
 public:
  using Plan = typename Core::Plan;
  // `plan` was prepared with stage_now: host inputs are already staged, device tensors and
  // the module are held until this worker is done.
  LaunchWorker(Napi::Env env, std::shared_ptr<Core> core, Napi::Object device,
               std::unique_ptr<Plan> plan, std::vector<Napi::ObjectReference> keep)
      : Napi::AsyncWorker(env, "tspto.launchAsync"),
        deferred_(Napi::Promise::Deferred::New(env)),
        core_(std::move(core)),
        device_(Napi::Persistent(device)),
        plan_(std::move(plan)),
        keep_(std::move(keep)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      ns_ = core_->Launch(plan_.get());
    } catch (const DeviceError& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::exception& e) {
      SetError(std::string("tspto native: ") + e.what());
    }
  }

  // On the JS thread: re-read each result view (it may have been detached or shrunk while
  // the launch ran), copy the results, then release staging and holds.
  void OnOK() override {
    Napi::Env env = Env();
    std::vector<std::pair<uint8_t*, uint64_t>> hosts(plan_->args.size(), {nullptr, 0});
    for (size_t i = 0; i < keep_.size() && i < hosts.size(); ++i) {
      if (keep_[i].IsEmpty()) continue;
      uint8_t* data = nullptr;
      uint64_t len = 0;
      if (HostView(env, keep_[i].Value(), &data, &len)) hosts[i] = {data, len};
    }
    try {
      core_->CopyResults(*plan_, "launchAsync", hosts);
    } catch (const DeviceError& e) {
      plan_->Release();
      deferred_.Reject(ToJsError(env, e).Value());
      return;
    }
    plan_->Release();
    deferred_.Resolve(Napi::Number::New(env, static_cast<double>(ns_)));
  }

  void OnError(const Napi::Error& e) override {
    plan_->Release();
    Napi::Error err = e;
    if (*code_ != '\0') err.Set("code", Napi::String::New(Env(), code_));
    deferred_.Reject(err.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<Core> core_;  // keeps the device state alive until completion
  Napi::ObjectReference device_;      // keeps the JS Device from being collected
  std::unique_ptr<Plan> plan_;
  std::vector<Napi::ObjectReference> keep_;  // host views by argument index (or empty)
  uint64_t ns_ = 0;
  const char* code_ = "";
};

}  // namespace addon
}  // namespace tspto
