// Argument conversion and errors of the Node-API binding (addon.cc, device_wrap.h): JS values
// to addresses, byte counts, module ids and launch arguments, native errors to JS errors.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device.h"
#include "errors.h"

namespace tspto {
namespace addon {

inline constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1

Napi::Error ToJsError(Napi::Env env, const DeviceError& e);

// A native call argument of the wrong type (TypeError) or range (RangeError), with code
// TSPTO_BAD_ARGUMENT (and argIndex for launch arguments).
Napi::Error BadArg(Napi::Env env, const std::string& message, bool range = false,
                   int64_t arg_index = -1, const char* code = kCodeBadArgument);

// Runs `body`, turning native exceptions into JS exceptions.
template <typename Body>
auto Guard(Napi::Env env, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const DeviceError& e) {
    throw ToJsError(env, e);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw ToJsError(env, DeviceError("tspto native: host out of memory", kCodeOutOfMemory));
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("tspto native: ") + e.what());
  }
}

std::string Describe(Napi::Value v);

// A non-negative integer given as a number (exact) or a bigint (lossless uint64).
bool ToUint64(Napi::Value v, uint64_t* out);
uint64_t AddressArg(Napi::Env env, Napi::Value v, const char* method);
uint64_t ByteCountArg(Napi::Env env, Napi::Value v, const char* method);

// Data pointer and byte length of a TypedArray / DataView / ArrayBuffer (no JS objects
// created). False when `v` is none of those.
bool HostView(napi_env env, napi_value v, uint8_t** data, uint64_t* bytes);

uint32_t ModuleIdArg(Napi::Env env, Napi::Value v, const char* method);

// Converts launch(moduleId, args, kinds) arguments (see addon_args.cc).
void ParseLaunch(const Napi::CallbackInfo& info, const char* method, uint32_t* module_id,
                 std::vector<LaunchArg>* out, std::vector<Napi::ObjectReference>* keep);

}  // namespace addon
}  // namespace tspto
