// Device memory arena: one reserved virtual region (mmap, MAP_NORESERVE) carved into
// 64-byte-aligned allocations. Device addresses are real host pointers into the region, so
// generated kernels dereference them directly.
//
// Every allocation is a record {base, size, reserved, generation}. Only the exact base of a
// live record is accepted by Free/IsLive (and by launch arguments); foreign, freed and
// interior pointers are rejected. Copies (CheckRange) may start inside an allocation but must
// not leave it.
//
// Allocation is best-fit over a free list indexed both by address (for coalescing on free)
// and by size (for the fit). All methods are thread-safe: JS-thread calls can race with an
// asynchronous launch's staging and orchestration allocations.
#ifndef TSPTO_NATIVE_ARENA_H
#define TSPTO_NATIVE_ARENA_H

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace tspto {

struct Allocation {
  uint64_t base;        // device address of the first byte
  uint64_t size;        // bytes requested
  uint64_t reserved;    // bytes taken from the arena (size rounded up to 64, at least 64)
  uint64_t generation;  // unique, increasing id of this allocation
};

class Arena {
 public:
  static constexpr uint64_t kAlign = 64;

  // Reserves `capacity` bytes (rounded down to a multiple of 64). Throws DeviceError if the
  // reservation fails.
  explicit Arena(uint64_t capacity);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Allocates `nbytes`; zero-fills the block when `zero` is true. Throws DeviceError (code
  // TSPTO_DEVICE_OOM) with the requested / in-use / capacity message when nothing fits.
  uint64_t Allocate(uint64_t nbytes, bool zero);
  // Same, but reports out-of-memory through `error` and returns 0 instead of throwing.
  uint64_t TryAllocate(uint64_t nbytes, bool zero, std::string* error);
  // Releases the allocation that starts at `addr`. Throws DeviceError naming the problem
  // (freed / interior / foreign pointer) otherwise. `op` prefixes the message.
  void Free(uint64_t addr, const char* op = "free");
  // True when `addr` is the start of a live allocation.
  bool IsLive(uint64_t addr) const;
  // Checks that [addr, addr + nbytes) lies inside one live allocation; throws DeviceError
  // "<op>: ..." naming the address and the problem otherwise.
  void CheckRange(const char* op, uint64_t addr, uint64_t nbytes) const;
  // Describes why `addr` is not the start of a live allocation ("" when it is).
  std::string DescribeNonLive(uint64_t addr) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes_in_use() const;
  uint64_t live_allocations() const;

  // Unmaps the region and forgets every record. Further use is a programming error; the
  // Device guards it with its closed flag.
  void Release();

 private:
  std::string OutOfMemoryMessage(uint64_t nbytes) const;  // mu_ held
  std::string DescribeNonLiveLocked(uint64_t addr) const;  // mu_ held
  void InsertFree(uint64_t offset, uint64_t size);         // mu_ held
  void EraseFree(uint64_t offset, uint64_t size);          // mu_ held

  mutable std::mutex mu_;
  uint8_t* base_ = nullptr;
  uint64_t map_bytes_ = 0;  // length passed to mmap
  uint64_t capacity_ = 0;   // usable bytes (multiple of 64)
  std::map<uint64_t, Allocation> live_;                  // by device address
  std::map<uint64_t, uint64_t> free_by_offset_;          // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> free_by_size_;  // (size, offset)
  uint64_t in_use_ = 0;          // sum of `reserved` over live records
  uint64_t next_generation_ = 1;
  // Offsets at or above this mark have never been handed out, so they still hold the zero
  // pages of the fresh mapping and need no memset.
  uint64_t high_water_ = 0;
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_ARENA_H
