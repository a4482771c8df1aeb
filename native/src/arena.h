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
//
// Launch holds (Pin/Unpin). A launch pins every allocation it uses (by address and
// generation) when it is queued and unpins it when it completes. Freeing a pinned
// allocation DEFERS the release: the record leaves the live set at once (the address is no
// longer accepted by anything: free, copies, launches, IsLive), but its bytes stay reserved
// and are not handed out again until the last launch holding it unpins. So a queued launch
// never reads memory that was freed and reallocated. Deferred bytes still count in
// bytes_in_use() until they are released; pending_frees() counts the records.
//
// Large blocks. Fresh pages of the mapping are zero, so only memory that earlier
// allocations used is zeroed; a block of at least kReturnBytes is zeroed by giving its whole
// pages back to the OS (madvise(MADV_DONTNEED): the next touch maps a zero page) instead of
// memset, and a freed block of that size is given back the same way, so the process RSS
// shrinks after a large free. An allocation the machine cannot back (more than the memory
// it has, or a large request above what is available now) fails with the out-of-memory
// error instead of stalling in page faults or swap.
#ifndef TSPTO_NATIVE_ARENA_H
#define TSPTO_NATIVE_ARENA_H

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <utility>

namespace tspto {

struct Allocation {
  uint64_t base;        // device address of the first byte
  uint64_t size;        // bytes requested
  uint64_t reserved;    // bytes taken from the arena (size rounded up to 64, at least 64)
  uint64_t generation;  // unique, increasing id of this allocation
  uint64_t pins = 0;    // launches in flight that use it
};

class Arena {
 public:
  static constexpr uint64_t kAlign = 64;
  // Blocks at least this large are zeroed / returned with madvise instead of memset.
  static constexpr uint64_t kReturnBytes = 256 * 1024;
  // Requests at least this large are checked against the memory available now.
  static constexpr uint64_t kCheckAvailableBytes = 64ull << 20;

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
  // (freed / interior / foreign pointer) otherwise. `op` prefixes the message. Returns true
  // when the release was deferred because launches in flight hold the allocation.
  bool Free(uint64_t addr, const char* op = "free");
  // Holds the live allocation that starts at `addr` for a launch; returns its generation, or
  // 0 with `why` set (DescribeNonLive) when `addr` is not the start of a live allocation.
  uint64_t Pin(uint64_t addr, std::string* why);
  // Holds the live allocation that contains [addr, addr + nbytes) for a launch: `addr` is its
  // start or lies inside it (a view of a DeviceTensor, t.narrow). Returns its generation and
  // sets *base to its start, or 0 with `why` set when no live allocation holds the whole range.
  uint64_t PinRange(uint64_t addr, uint64_t nbytes, uint64_t* base, std::string* why);
  // Drops one hold of (addr, generation); releases a deferred free when it was the last.
  // A no-op after Release().
  void Unpin(uint64_t addr, uint64_t generation);
  // One range of PinAll / UnpinAll: [addr, addr + nbytes) and where its allocation's start
  // and generation go (PinRange's *base and result).
  struct PinItem {
    uint64_t addr;
    uint64_t nbytes;
    uint64_t* base;
    uint64_t* generation;
  };
  // PinRange / Unpin of many ranges under one lock (a launch's device arguments): pins the
  // items in order; on the first that no live allocation holds, unpins the ones pinned so
  // far (their generations back to 0), sets `why` and returns its index; returns n when all
  // were pinned. UnpinAll drops the holds of (*base, *generation).
  size_t PinAll(PinItem* items, size_t n, std::string* why);
  void UnpinAll(const PinItem* items, size_t n);
  // Free() that ignores addresses which are not live and a released arena (cleanup paths).
  void FreeQuiet(uint64_t addr);
  // True when `addr` is the start of a live allocation.
  bool IsLive(uint64_t addr) const;
  // Zero-fills [addr, addr + nbytes) of an allocation the caller owns (memset, or for a
  // large block madvise); a no-op on a released arena.
  void Zero(uint64_t addr, uint64_t nbytes);
  // Checks that [addr, addr + nbytes) lies inside one live allocation; throws DeviceError
  // "<op>: ..." naming the address and the problem otherwise.
  void CheckRange(const char* op, uint64_t addr, uint64_t nbytes) const;
  // Describes why `addr` is not the start of a live allocation ("" when it is).
  std::string DescribeNonLive(uint64_t addr) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes_in_use() const;
  uint64_t live_allocations() const;
  uint64_t pending_frees() const;

  // Unmaps the region and forgets every record. Further use is a programming error; the
  // Device guards it with its closed flag.
  void Release();

 private:
  std::string OutOfMemoryMessage(uint64_t nbytes) const;  // mu_ held
  std::string DescribeNonLiveLocked(uint64_t addr) const;  // mu_ held
  uint64_t PinRangeLocked(uint64_t addr, uint64_t nbytes, uint64_t* base, std::string* why);  // mu_ held
  void InsertFree(uint64_t offset, uint64_t size);         // mu_ held
  void EraseFree(uint64_t offset, uint64_t size);          // mu_ held
  // Returns a block (whose record is already gone) to the free list; gives large blocks'
  // pages back to the OS first. Takes mu_ itself; region_mu_ must be held shared.
  void ReleaseBlock(uint64_t offset, uint64_t reserved);
  // Zeroes [offset, offset+n) of a block this thread owns (memset or madvise).
  void ZeroBlock(uint64_t offset, uint64_t n);
  void ReturnPages(uint64_t offset, uint64_t n);  // madvise(DONTNEED) of the whole pages
  // Bytes the machine can still back for a request (0 = unknown); see TryAllocate.
  static uint64_t MachineAvailableBytes();

  // Held shared while memory of the mapping is touched outside mu_ (zeroing, madvise);
  // Release() takes it exclusively before unmapping.
  mutable std::shared_mutex region_mu_;
  mutable std::mutex mu_;
  uint8_t* base_ = nullptr;
  uint64_t map_bytes_ = 0;  // length passed to mmap
  uint64_t capacity_ = 0;   // usable bytes (multiple of 64)
  std::map<uint64_t, Allocation> live_;                  // by device address
  std::map<uint64_t, Allocation> deferred_;  // freed while pinned: released at last Unpin
  std::map<uint64_t, uint64_t> free_by_offset_;          // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> free_by_size_;  // (size, offset)
  uint64_t in_use_ = 0;          // sum of `reserved` over live records
  uint64_t next_generation_ = 1;
  // Offsets at or above this mark have never been handed out, so they still hold the zero
  // pages of the fresh mapping and need no memset.
  uint64_t high_water_ = 0;
  uint64_t page_ = 4096;
  uint64_t phys_bytes_ = 0;  // physical memory of the machine (0 = unknown)
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_ARENA_H
