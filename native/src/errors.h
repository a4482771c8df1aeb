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

class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message, const char* code = "")
      : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;  // static string
};

// "0x7f12345678c0": device addresses are printed in hex everywhere.
inline std::string Hex(uint64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

}  // namespace tspto

#endif  // TSPTO_NATIVE_ERRORS_H
