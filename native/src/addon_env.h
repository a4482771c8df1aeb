// Per-env state of the Node-API binding: the open devices of one environment (main thread or
// a worker_thread), closed by the env cleanup hook (addon.cc).
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace tspto {
namespace addon {

struct EnvState {
  // Each open device of this env (cpu or cuda) as "is it still open" and "close it".
  struct Entry {
    std::function<bool()> open;
    std::function<void()> close;
  };
  std::mutex mu;
  std::vector<Entry> devices;

  template <typename Core>
  void Add(const std::shared_ptr<Core>& core) {
    std::lock_guard<std::mutex> lock(mu);
    // Drop entries of devices that are gone, so the list does not grow without bound.
    std::vector<Entry> alive;
    for (auto& e : devices) {
      if (e.open()) alive.push_back(e);
    }
    std::weak_ptr<Core> w = core;
    alive.push_back(Entry{[w] { auto d = w.lock(); return d && !d->closed(); }, [w] { if (auto d = w.lock()) d->Close(); }});
    devices.swap(alive);
  }

  // Env teardown: close every device still open (joins threads, frees memory).
  void CloseAll() {
    std::vector<Entry> open;
    {
      std::lock_guard<std::mutex> lock(mu);
      open.swap(devices);
    }
    for (auto& e : open) e.close();
  }
};

struct AddonData {
  std::shared_ptr<EnvState> state;
  Napi::FunctionReference device_ctor;  // to recognise Device objects (DeviceCoreOf)
};

}  // namespace addon
}  // namespace tspto
