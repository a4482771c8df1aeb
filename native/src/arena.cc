#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "errors.h"

namespace tspto {

namespace {
uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }
}  // namespace

Arena::Arena(uint64_t capacity) {
  capacity_ = capacity / kAlign * kAlign;
  if (capacity_ == 0) {
    throw DeviceError("device memory capacity must be at least " + std::to_string(kAlign) +
                      " bytes, got " + std::to_string(capacity), kCodeBadArgument);
  }
  map_bytes_ = capacity_;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw DeviceError("cannot reserve " + std::to_string(capacity_) +
                      " bytes of device memory: " + std::strerror(errno), kCodeOutOfMemory);
  }
  base_ = static_cast<uint8_t*>(p);
#ifdef MADV_HUGEPAGE
  // Transparent huge pages where the kernel gives them on request (THP "madvise", Debian's
  // default): the first write to fresh device memory then faults once per 2 MiB instead of once
  // per 4 KiB page. Uploading GPT-2's 497 MB of weights spent most of its time in those faults
  // (first copy into a fresh 256 MB tensor ~0.8 s, the second 20 ms). Best effort: ignored
  // where the kernel refuses.
  (void)madvise(base_, map_bytes_, MADV_HUGEPAGE);
#endif
  InsertFree(0, capacity_);
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) page_ = static_cast<uint64_t>(page);
  const long pages = sysconf(_SC_PHYS_PAGES);
  if (pages > 0) phys_bytes_ = static_cast<uint64_t>(pages) * page_;
}

Arena::~Arena() { Release(); }

void Arena::Release() {
  std::unique_lock<std::shared_mutex> region(region_mu_);  // nobody is zeroing or returning pages
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ != nullptr) {
    munmap(base_, map_bytes_);
    base_ = nullptr;
  }
  live_.clear();
  deferred_.clear();
  free_by_offset_.clear();
  free_by_size_.clear();
  in_use_ = 0;
}

void Arena::InsertFree(uint64_t offset, uint64_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void Arena::EraseFree(uint64_t offset, uint64_t size) {
  free_by_offset_.erase(offset);
  free_by_size_.erase({size, offset});
}

std::string Arena::OutOfMemoryMessage(uint64_t nbytes) const {
  return "device out of memory: requested " + std::to_string(nbytes) + " bytes, " +
         std::to_string(in_use_) + " bytes in use of " + std::to_string(capacity_) +
         " bytes capacity; free DeviceTensors you no longer need (ChipWorker.freeTensor)";
}

namespace {
// First number after `key` in a /proc-style "key value" file, or -1.
int64_t ReadKeyed(const char* path, const char* key) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t value = -1;
  const size_t klen = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, klen) == 0) {
      value = std::strtoll(line + klen, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return value;
}
// The whole content of a one-number file ("max" and errors give -1).
int64_t ReadNumber(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  char buf[64] = {0};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  if (!ok || buf[0] < '0' || buf[0] > '9') return -1;
  return std::strtoll(buf, nullptr, 10);
}
}  // namespace

uint64_t Arena::MachineAvailableBytes() {
  // MemAvailable of the machine, capped by the cgroup (v2) limit of this process.
  int64_t avail = ReadKeyed("/proc/meminfo", "MemAvailable:");
  if (avail >= 0) avail *= 1024;
  const int64_t limit = ReadNumber("/sys/fs/cgroup/memory.max");
  const int64_t current = ReadNumber("/sys/fs/cgroup/memory.current");
  if (limit >= 0 && current >= 0) {
    const int64_t room = limit > current ? limit - current : 0;
    if (avail < 0 || room < avail) avail = room;
  }
  return avail < 0 ? 0 : static_cast<uint64_t>(avail);
}

void Arena::ReturnPages(uint64_t offset, uint64_t n) {
  const uint64_t lo = RoundUp(offset, page_);
  const uint64_t hi = (offset + n) / page_ * page_;
  if (hi > lo) madvise(base_ + lo, hi - lo, MADV_DONTNEED);
}

void Arena::ZeroBlock(uint64_t offset, uint64_t n) {
  if (n < kReturnBytes) {
    std::memset(base_ + offset, 0, n);
    return;
  }
  // Whole pages: dropped (the next touch maps a fresh zero page); the partial pages at
  // both ends: memset.
  const uint64_t lo = RoundUp(offset, page_);
  const uint64_t hi = (offset + n) / page_ * page_;
  std::memset(base_ + offset, 0, lo - offset);
  if (madvise(base_ + lo, hi - lo, MADV_DONTNEED) != 0) std::memset(base_ + lo, 0, hi - lo);
  std::memset(base_ + hi, 0, offset + n - hi);
}

void Arena::Zero(uint64_t addr, uint64_t nbytes) {
  std::shared_lock<std::shared_mutex> region(region_mu_);
  if (base_ == nullptr || nbytes == 0) return;
  ZeroBlock(addr - reinterpret_cast<uint64_t>(base_), nbytes);
}

uint64_t Arena::TryAllocate(uint64_t nbytes, bool zero, std::string* error) {
  std::shared_lock<std::shared_mutex> region(region_mu_);
  // Large requests are checked against what the machine has available now (read before
  // taking the lock: it is a file read).
  const uint64_t available = nbytes >= kCheckAvailableBytes ? MachineAvailableBytes() : 0;
  uint64_t offset = 0, dirty_end = 0, addr = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Guard the rounding against overflow: anything this large cannot fit anyway.
    if (base_ == nullptr || nbytes > capacity_) {
      *error = OutOfMemoryMessage(nbytes);
      return 0;
    }
    const uint64_t reserved = nbytes == 0 ? kAlign : RoundUp(nbytes, kAlign);
    // What the machine can back: never more than its physical memory in all, and a large
    // request not more than what is available now (otherwise the first touch of its pages
    // would swap or stall instead of failing).
    const bool over_physical = phys_bytes_ != 0 && in_use_ + reserved > phys_bytes_;
    const bool over_available = available != 0 && reserved > available;
    if (over_physical || over_available) {
      *error = "device out of memory: requested " + std::to_string(nbytes) + " bytes, " +
               std::to_string(in_use_) + " bytes in use of " + std::to_string(capacity_) +
               " bytes capacity, but this machine cannot back it (" +
               (over_physical ? std::to_string(phys_bytes_) + " bytes of physical memory"
                              : std::to_string(available) + " bytes of memory available now") +
               "); free DeviceTensors you no longer need (ChipWorker.freeTensor) or use smaller "
               "tensors";
      return 0;
    }
    // Best fit: the smallest free block that holds `reserved` (lowest offset among equals).
    auto fit = free_by_size_.lower_bound({reserved, 0});
    if (fit == free_by_size_.end()) {
      *error = OutOfMemoryMessage(nbytes);
      return 0;
    }
    const uint64_t block_size = fit->first;
    offset = fit->second;
    EraseFree(offset, block_size);
    if (block_size > reserved) InsertFree(offset + reserved, block_size - reserved);

    addr = reinterpret_cast<uint64_t>(base_) + offset;
    live_.emplace(addr, Allocation{addr, nbytes, reserved, next_generation_++, 0});
    in_use_ += reserved;
    // Only the part below the high-water mark can hold data of earlier allocations: the
    // rest is fresh zero pages of the mapping.
    if (zero && offset < high_water_) {
      dirty_end = offset + reserved < high_water_ ? offset + reserved : high_water_;
    }
    if (offset + reserved > high_water_) high_water_ = offset + reserved;
  }
  // Outside the lock (the block is ours; nobody knows its address yet).
  if (dirty_end > offset) ZeroBlock(offset, dirty_end - offset);
  return addr;
}

uint64_t Arena::Allocate(uint64_t nbytes, bool zero) {
  std::string error;
  const uint64_t addr = TryAllocate(nbytes, zero, &error);
  if (addr == 0) throw DeviceError(error, kCodeOutOfMemory);
  return addr;
}

std::string Arena::DescribeNonLiveLocked(uint64_t addr) const {
  const uint64_t lo = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || addr < lo || addr >= lo + capacity_) {
    return Hex(addr) + " is not an address of this device's memory (foreign pointer)";
  }
  auto deferred = deferred_.find(addr);
  if (deferred != deferred_.end()) {
    return Hex(addr) + " is not a live allocation (freed; its memory is released when the " +
           std::to_string(deferred->second.pins) + " launch(es) in flight that use it finish)";
  }
  auto it = live_.upper_bound(addr);
  if (it != live_.begin()) {
    --it;
    const Allocation& a = it->second;
    if (addr == a.base) return "";
    if (addr < a.base + a.reserved) {
      return Hex(addr) + " is an interior pointer (offset " + std::to_string(addr - a.base) +
             " into the allocation at " + Hex(a.base) + " of " + std::to_string(a.size) +
             " bytes), not the start of an allocation";
    }
  }
  return Hex(addr) + " is not a live allocation (already freed or never allocated)";
}

std::string Arena::DescribeNonLive(uint64_t addr) const {
  std::lock_guard<std::mutex> lock(mu_);
  return DescribeNonLiveLocked(addr);
}

bool Arena::Free(uint64_t addr, const char* op) {
  std::shared_lock<std::shared_mutex> region(region_mu_);
  uint64_t offset = 0, reserved = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(addr);
    if (it == live_.end()) {
      throw DeviceError(std::string(op) + ": " + DescribeNonLiveLocked(addr), kCodeBadAddress);
    }
    if (it->second.pins > 0) {
      // Launches in flight use it: the address dies now, the bytes at the last Unpin.
      deferred_.emplace(addr, it->second);
      live_.erase(it);
      return true;
    }
    offset = addr - reinterpret_cast<uint64_t>(base_);
    reserved = it->second.reserved;
    in_use_ -= reserved;
    live_.erase(it);
  }
  ReleaseBlock(offset, reserved);
  return false;
}

void Arena::FreeQuiet(uint64_t addr) {
  try {
    Free(addr, "free");
  } catch (...) {
  }
}

void Arena::ReleaseBlock(uint64_t offset, uint64_t size) {
  // Large blocks give their pages back to the OS before anyone can allocate them again.
  if (size >= kReturnBytes) ReturnPages(offset, size);
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ == nullptr) return;
  // Coalesce with the free neighbours on both sides.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && next->first == offset + size) {
    const uint64_t next_size = next->second;
    EraseFree(next->first, next_size);
    size += next_size;
  }
  auto prev = free_by_offset_.lower_bound(offset);
  if (prev != free_by_offset_.begin()) {
    --prev;
    if (prev->first + prev->second == offset) {
      const uint64_t prev_offset = prev->first;
      const uint64_t prev_size = prev->second;
      EraseFree(prev_offset, prev_size);
      offset = prev_offset;
      size += prev_size;
    }
  }
  InsertFree(offset, size);
}

uint64_t Arena::Pin(uint64_t addr, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(addr);
  if (it == live_.end()) {
    *why = DescribeNonLiveLocked(addr);
    return 0;
  }
  ++it->second.pins;
  return it->second.generation;
}

uint64_t Arena::PinRange(uint64_t addr, uint64_t nbytes, uint64_t* base, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  return PinRangeLocked(addr, nbytes, base, why);
}

uint64_t Arena::PinRangeLocked(uint64_t addr, uint64_t nbytes, uint64_t* base, std::string* why) {
  auto it = live_.upper_bound(addr);
  if (it != live_.begin()) {
    --it;
    Allocation& a = it->second;
    if (addr == a.base || addr < a.base + a.size) {
      const uint64_t room = a.base + a.size - addr;
      if (nbytes > room) {
        *why = "the range [" + Hex(addr) + ", " + Hex(addr) + " + " + std::to_string(nbytes) +
               ") the program uses leaves the allocation at " + Hex(a.base) + " of " +
               std::to_string(a.size) + " bytes (" + std::to_string(room) + " bytes from " +
               Hex(addr) + ")";
        return 0;
      }
      ++a.pins;
      *base = a.base;
      return a.generation;
    }
  }
  *why = DescribeNonLiveLocked(addr);
  if (why->empty()) *why = Hex(addr) + " is not inside a live allocation";
  return 0;
}

void Arena::Unpin(uint64_t addr, uint64_t generation) {
  std::shared_lock<std::shared_mutex> region(region_mu_);
  uint64_t offset = 0, reserved = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (base_ == nullptr) return;
    auto it = live_.find(addr);
    if (it != live_.end() && it->second.generation == generation) {
      if (it->second.pins > 0) --it->second.pins;
      return;
    }
    auto d = deferred_.find(addr);
    if (d == deferred_.end() || d->second.generation != generation) return;
    if (--d->second.pins > 0) return;
    offset = addr - reinterpret_cast<uint64_t>(base_);
    reserved = d->second.reserved;
    in_use_ -= reserved;
    deferred_.erase(d);
  }
  ReleaseBlock(offset, reserved);
}

size_t Arena::PinAll(PinItem* items, size_t n, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t generation = PinRangeLocked(items[i].addr, items[i].nbytes, items[i].base, why);
    if (generation == 0) {
      for (size_t j = 0; j < i; ++j) {  // still live: pinned under this lock
        auto p = live_.find(*items[j].base);
        if (p != live_.end() && p->second.pins > 0) --p->second.pins;
        *items[j].generation = 0;
      }
      return i;
    }
    *items[i].generation = generation;
  }
  return n;
}

void Arena::UnpinAll(const PinItem* items, size_t n) {
  std::shared_lock<std::shared_mutex> region(region_mu_);
  // Deferred frees whose last pin goes now: released after the lock (rare: no allocation
  // unless there is one).
  std::vector<std::pair<uint64_t, uint64_t>> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (base_ == nullptr) return;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t addr = *items[i].base, generation = *items[i].generation;
      auto it = live_.find(addr);
      if (it != live_.end() && it->second.generation == generation) {
        if (it->second.pins > 0) --it->second.pins;
        continue;
      }
      auto d = deferred_.find(addr);
      if (d == deferred_.end() || d->second.generation != generation) continue;
      if (--d->second.pins > 0) continue;
      release.emplace_back(addr - reinterpret_cast<uint64_t>(base_), d->second.reserved);
      in_use_ -= d->second.reserved;
      deferred_.erase(d);
    }
  }
  for (const auto& r : release) ReleaseBlock(r.first, r.second);
}

bool Arena::IsLive(uint64_t addr) const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.count(addr) != 0;
}

void Arena::CheckRange(const char* op, uint64_t addr, uint64_t nbytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.upper_bound(addr);
  const Allocation* a = nullptr;
  if (it != live_.begin()) {
    --it;
    if (addr < it->second.base + it->second.size ||
        (addr == it->second.base && nbytes == 0)) {
      a = &it->second;
    }
  }
  if (a == nullptr) {
    const uint64_t lo = reinterpret_cast<uint64_t>(base_);
    const bool foreign = base_ == nullptr || addr < lo || addr >= lo + capacity_;
    throw DeviceError(std::string(op) + ": " +
                          (foreign ? DescribeNonLiveLocked(addr)
                                   : Hex(addr) + " is not inside a live allocation (freed, never "
                                                 "allocated, or past the end of one)"),
                      kCodeBadAddress);
  }
  const uint64_t room = a->base + a->size - addr;
  if (nbytes > room) {
    throw DeviceError(std::string(op) + ": range [" + Hex(addr) + ", " + Hex(addr) + " + " +
                      std::to_string(nbytes) + ") leaves the allocation at " + Hex(a->base) +
                      " of " + std::to_string(a->size) + " bytes (" + std::to_string(room) +
                      " bytes available from " + Hex(addr) + ")",
                      kCodeBadAddress);
  }
}

uint64_t Arena::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

uint64_t Arena::live_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

uint64_t Arena::pending_frees() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deferred_.size();
}

}  // namespace tspto
