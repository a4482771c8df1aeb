#include "arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "errors.h"

namespace tspto {

namespace {
uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }
}  // namespace

Arena::Arena(uint64_t capacity) {
  capacity_ = capacity / kAlign * kAlign;
  if (capacity_ == 0) {
    throw DeviceError("device memory capacity must be at least " + std::to_string(kAlign) +
                      " bytes, got " + std::to_string(capacity));
  }
  map_bytes_ = capacity_;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw DeviceError("cannot reserve " + std::to_string(capacity_) +
                      " bytes of device memory: " + std::strerror(errno));
  }
  base_ = static_cast<uint8_t*>(p);
  InsertFree(0, capacity_);
}

Arena::~Arena() { Release(); }

void Arena::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ != nullptr) {
    munmap(base_, map_bytes_);
    base_ = nullptr;
  }
  live_.clear();
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

uint64_t Arena::TryAllocate(uint64_t nbytes, bool zero, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  // Guard the rounding against overflow: anything this large cannot fit anyway.
  if (base_ == nullptr || nbytes > capacity_) {
    *error = OutOfMemoryMessage(nbytes);
    return 0;
  }
  const uint64_t reserved = nbytes == 0 ? kAlign : RoundUp(nbytes, kAlign);
  // Best fit: the smallest free block that holds `reserved` (lowest offset among equals).
  auto fit = free_by_size_.lower_bound({reserved, 0});
  if (fit == free_by_size_.end()) {
    *error = OutOfMemoryMessage(nbytes);
    return 0;
  }
  const uint64_t block_size = fit->first;
  const uint64_t offset = fit->second;
  EraseFree(offset, block_size);
  if (block_size > reserved) InsertFree(offset + reserved, block_size - reserved);

  const uint64_t addr = reinterpret_cast<uint64_t>(base_) + offset;
  live_.emplace(addr, Allocation{addr, nbytes, reserved, next_generation_++});
  in_use_ += reserved;
  if (zero && offset < high_water_) {
    // Only the part below the high-water mark can hold data of earlier allocations.
    const uint64_t dirty_end = offset + reserved < high_water_ ? offset + reserved : high_water_;
    std::memset(base_ + offset, 0, dirty_end - offset);
  }
  if (offset + reserved > high_water_) high_water_ = offset + reserved;
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

void Arena::Free(uint64_t addr, const char* op) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(addr);
  if (it == live_.end()) throw DeviceError(std::string(op) + ": " + DescribeNonLiveLocked(addr));
  uint64_t offset = addr - reinterpret_cast<uint64_t>(base_);
  uint64_t size = it->second.reserved;
  in_use_ -= size;
  live_.erase(it);

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
                                             "allocated, or past the end of one)"));
  }
  const uint64_t room = a->base + a->size - addr;
  if (nbytes > room) {
    throw DeviceError(std::string(op) + ": range [" + Hex(addr) + ", " + Hex(addr) + " + " +
                      std::to_string(nbytes) + ") leaves the allocation at " + Hex(a->base) +
                      " of " + std::to_string(a->size) + " bytes (" + std::to_string(room) +
                      " bytes available from " + Hex(addr) + ")");
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

}  // namespace tspto
