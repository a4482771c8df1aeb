// tspto device ABI: the contract between generated program libraries (src/codegen, cpu
// platform) and the native runtime (native/src). Generated code includes this header and
// links against nothing: every runtime service reaches it through TsptoRuntimeApi.
//
// A program library exports:
//   extern "C" int  tspto_abi_version(void);                 // == TSPTO_ABI_VERSION
//   extern "C" int  tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args);
//   extern "C" void k_<name>(const int64_t* args);           // one per InCore kernel
//
// `args` of tspto_entry: one int64 slot per entry parameter, in parameter order. A tensor
// parameter's slot holds its device address; an integer/bool scalar its value; a float
// scalar the bit pattern of a double (memcpy). Then one slot per dynamic dimension (a name
// in a shape annotation, like "M") of the parameters' shapes, in order of first appearance,
// holding its extent (>= 1; the host checks every tensor that shares a name agrees).
//
// A kernel's `args`: the slots the orchestration passed to rt->submit (its parameters in
// order, then the extents of its own parameters' dynamic dimensions, in order of first
// appearance), followed by TWO extra slots appended by the runtime:
//   args[nargs]     the address of the executing core's scratch arena (tiles live at
//                   planned offsets inside it, 64-byte aligned, rt->scratch_bytes long);
//   args[nargs + 1] the address of the launch's TsptoRuntimeApi (for rt->fail).
#ifndef TSPTO_ABI_H
#define TSPTO_ABI_H
#include <stdint.h>

// 2: TsptoAccess describes tensor windows (rank, dims, offsets, extents).
#define TSPTO_ABI_VERSION 2

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*TsptoKernelFn)(const int64_t* args);

// One memory region a task touches; the scheduler derives ordering from overlapping
// regions (write-after-read, read-after-write, write-after-write).
//
// rank 0: a plain byte range [base, base + nbytes).
// rank 1..TSPTO_MAX_RANK: a window of a row-major tensor: `tensor` is the address of its
// first element, `dims` its shape, `elem_bytes` its element size, and the window covers
// offsets[i] <= index[i] < offsets[i] + extents[i] on every axis. The runtime clamps the
// window to the tensor and sets base/nbytes to the window's byte hull (traces, argument
// dumps). Two windows of the same tensor (same address, rank, dims and element size)
// conflict only when their boxes overlap on every axis, so tasks on disjoint rows or
// columns of one tensor run in parallel; any other pair is compared by byte hulls.
#define TSPTO_MAX_RANK 4
enum { TSPTO_ACCESS_READ = 1, TSPTO_ACCESS_WRITE = 2, TSPTO_ACCESS_READWRITE = 3 };
typedef struct TsptoAccess {
  int64_t base;   // rank 0: device address of the first byte (rank > 0: set by the runtime)
  int64_t nbytes; // rank 0: extent in bytes (rank > 0: set by the runtime)
  int32_t mode;   // TSPTO_ACCESS_*
  int32_t rank;   // 0: byte range; 1..TSPTO_MAX_RANK: tensor window
  int64_t tensor;      // rank > 0: device address of the tensor's first element
  int64_t elem_bytes;  // rank > 0: bytes per element
  int64_t dims[TSPTO_MAX_RANK];     // rank > 0: the tensor's shape
  int64_t offsets[TSPTO_MAX_RANK];  // rank > 0: the window's first index per axis
  int64_t extents[TSPTO_MAX_RANK];  // rank > 0: the window's shape
} TsptoAccess;

typedef struct TsptoRuntimeApi {
  void* ctx;
  int64_t scratch_bytes;  // per-core scratch capacity
  // Queue one task. `args` (nargs slots) and `accesses` are copied before return. `name`
  // is a static string (the kernel's name) used by traces. `scope_id` identifies the
  // pl.at scope / call site the task came from. Returns 0, or non-zero after recording a
  // failure (the orchestration must then return non-zero).
  int (*submit)(void* ctx, TsptoKernelFn fn, const char* name, int32_t scope_id,
                const int64_t* args, int32_t nargs, const TsptoAccess* accesses,
                int32_t naccesses);
  // Block until every submitted task has finished. Returns 0, or non-zero if a task failed.
  int (*wait_all)(void* ctx);
  // Orchestration-level device buffers (createTensor). Zero-filled. Valid until the launch
  // ends or `free`; the runtime may keep the memory for the program's next launch (the cpu
  // device reuses a program's buffers, zero-filled again, instead of allocating each time).
  // Returns 0 (and records a failure) when out of memory.
  int64_t (*alloc)(void* ctx, int64_t nbytes);
  void (*free)(void* ctx, int64_t addr);
  // Record a runtime error (e.g. a dynamic window out of bounds). The launch then throws
  // a JS Error with this message. Safe to call from kernels on core threads.
  void (*fail)(void* ctx, const char* message);
  // Non-zero once a failure has been recorded; kernels and orchestration may stop early.
  int (*failed)(void* ctx);
  // Core threads executing tasks (>= 1). The orchestration may use it to split a parallel
  // loop into about this many tasks (SPMD by rows).
  int32_t core_count;
  int32_t reserved0;
} TsptoRuntimeApi;

#ifdef __cplusplus
}
#endif
#endif
