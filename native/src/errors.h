// Error type shared by the native runtime. Every failure that reaches JavaScript is a
// DeviceError: a message meant for the user plus an optional machine-readable code that
// the N-API layer attaches to the JS Error as `error.code`.
#ifndef TSPTO_NATIVE_ERRORS_H
#define TSPTO_NATIVE_ERRORS_H

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace tspto {

// Codes attached to JS errors (empty = none).
inline constexpr const char* kCodeOutOfMemory = "TSPTO_DEVICE_OOM";
inline constexpr const char* kCodeKernelFailure = "TSPTO_KERNEL_FAILURE";
inline constexpr const char* kCodeClosed = "TSPTO_DEVICE_CLOSED";
// A device address that is not (inside) a live allocation: foreign, freed, interior, or a
// copy range that leaves its allocation.
inline constexpr const char* kCodeBadAddress = "TSPTO_BAD_ADDRESS";
// A host view (TypedArray/DataView/ArrayBuffer) that holds fewer bytes than the operation
// needs: too short, or detached/transferred/shrunk since it was created.
inline constexpr const char* kCodeHostView = "TSPTO_HOST_VIEW";
// A native call argument of the wrong type or range (byte counts, kinds, options).
inline constexpr const char* kCodeBadArgument = "TSPTO_BAD_ARGUMENT";
// A program library that cannot be loaded, or a module id that is not loaded.
inline constexpr const char* kCodeModule = "TSPTO_MODULE";
// The cuda platform: no NVIDIA driver / GPU on this machine (opening a CudaDevice), and a
// CUDA driver call that failed.
inline constexpr const char* kCodeNoGpu = "TSPTO_NO_GPU";
inline constexpr const char* kCodeCuda = "TSPTO_CUDA";
// The full table of codes and the TsptoError classes they become is in
// src/targets/native_errors.ts and docs/errors.md.

class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message, const char* code = "", int64_t arg_index = -1)
      : std::runtime_error(message), code_(code), arg_index_(arg_index) {}
  const char* code() const { return code_; }
  // 0-based index of the launch argument the error is about, or -1 (attached to the JS
  // error as `argIndex`).
  int64_t arg_index() const { return arg_index_; }

 private:
  const char* code_;  // static string
  int64_t arg_index_;
};

// "0x7f12345678c0": device addresses are printed in hex everywhere.
inline std::string Hex(uint64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

}  // namespace tspto

#endif  // TSPTO_NATIVE_ERRORS_H
