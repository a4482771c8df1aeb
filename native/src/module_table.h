// The loaded modules of one device (cpu: a program library; cuda: a fatbin with its entry
// library), shared by DeviceCore and CudaDeviceCore: ids handed out from 1 and never reused,
// the lookup a launch makes, unloading, and the counters of DeviceStats. A module stays alive
// while a queued launch holds its shared_ptr; the last holder releases it outside the lock.
#ifndef TSPTO_NATIVE_MODULE_TABLE_H
#define TSPTO_NATIVE_MODULE_TABLE_H

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "errors.h"

namespace tspto {

template <class M>
class ModuleTable {
 public:
  uint32_t Add(std::shared_ptr<M> module) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t id = next_id_++;
    modules_.emplace(id, std::move(module));
    loads_.fetch_add(1, std::memory_order_relaxed);
    return id;
  }

  // The module of `id`, or a DeviceError (TSPTO_MODULE) naming `method`.
  std::shared_ptr<M> Get(uint32_t id, const char* method) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = modules_.find(id);
    if (it == modules_.end()) throw Unknown(method, id);
    return it->second;
  }

  // Unloads `id` (released here unless a queued launch still holds it).
  void Remove(uint32_t id) {
    std::shared_ptr<M> last;  // declared before the lock: released after it
    std::lock_guard<std::mutex> lock(mu_);
    auto it = modules_.find(id);
    if (it == modules_.end()) throw Unknown("unloadModule", id);
    last = std::move(it->second);
    modules_.erase(it);
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    modules_.clear();
  }

  uint64_t Loaded() {
    std::lock_guard<std::mutex> lock(mu_);
    return modules_.size();
  }
  uint64_t Loads() const { return loads_.load(std::memory_order_relaxed); }

 private:
  static DeviceError Unknown(const char* method, uint32_t id) {
    return DeviceError(std::string(method) + ": unknown module id " + std::to_string(id) + " (never loaded or already unloaded)", kCodeModule);
  }

  std::mutex mu_;
  std::map<uint32_t, std::shared_ptr<M>> modules_;
  uint32_t next_id_ = 1;
  std::atomic<uint64_t> loads_{0};
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_MODULE_TABLE_H
