// Argument conversion and errors of the Node-API binding (declared in addon_args.h).
#include "addon_args.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tspto {
namespace addon {

Napi::Error ToJsError(Napi::Env env, const DeviceError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  if (*e.code() != '\0') err.Set("code", Napi::String::New(env, e.code()));
  if (e.arg_index() >= 0) err.Set("argIndex", Napi::Number::New(env, static_cast<double>(e.arg_index())));
  return err;
}

// A native call argument of the wrong type (TypeError) or range (RangeError), with code
// TSPTO_BAD_ARGUMENT (and argIndex for launch arguments).
Napi::Error BadArg(Napi::Env env, const std::string& message, bool range,
                   int64_t arg_index, const char* code) {
  Napi::Error err = range ? static_cast<Napi::Error>(Napi::RangeError::New(env, message))
                          : static_cast<Napi::Error>(Napi::TypeError::New(env, message));
  err.Set("code", Napi::String::New(env, code));
  if (arg_index >= 0) err.Set("argIndex", Napi::Number::New(env, static_cast<double>(arg_index)));
  return err;
}

std::string Describe(Napi::Value v) {
  switch (v.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return v.As<Napi::Boolean>().Value() ? "true" : "false";
    case napi_number: {
      const double d = v.As<Napi::Number>().DoubleValue();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 1e18) {
        return std::to_string(static_cast<int64_t>(d));
      }
      return std::to_string(d);
    }
    case napi_string: return "a string";
    case napi_symbol: return "a symbol";
    case napi_bigint: return "a bigint";
    case napi_function: return "a function";
    case napi_external: return "an external";
    default:
      if (v.IsArray()) return "an array";
      if (v.IsTypedArray() || v.IsDataView()) return "an ArrayBufferView";
      if (v.IsArrayBuffer()) return "an ArrayBuffer";
      return "an object";
  }
}

// A non-negative integer given as a number (exact) or a bigint (lossless uint64).
bool ToUint64(Napi::Value v, uint64_t* out) {
  if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d <= kMaxSafeInteger && d == std::trunc(d))) return false;
    *out = static_cast<uint64_t>(d);
    return true;
  }
  if (v.IsBigInt()) {
    bool lossless = false;
    *out = v.As<Napi::BigInt>().Uint64Value(&lossless);
    return lossless;
  }
  return false;
}

uint64_t AddressArg(Napi::Env env, Napi::Value v, const char* method) {
  uint64_t addr = 0;
  if (!ToUint64(v, &addr)) {
    throw BadArg(env, std::string(method) + ": address must be a non-negative bigint, got " +
                          Describe(v));
  }
  return addr;
}

uint64_t ByteCountArg(Napi::Env env, Napi::Value v, const char* method) {
  uint64_t n = 0;
  if (!ToUint64(v, &n)) {
    throw BadArg(env, std::string(method) + ": nbytes must be a non-negative integer, got " +
                          Describe(v));
  }
  return n;
}

// Data pointer and byte length of a TypedArray / DataView / ArrayBuffer (no JS objects
// created). False when `v` is none of those.
bool HostView(napi_env env, napi_value v, uint8_t** data, uint64_t* bytes) {
  bool is = false;
  void* p = nullptr;
  size_t len = 0;
  if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
    napi_typedarray_type type;
    size_t length = 0, offset = 0;
    if (napi_get_typedarray_info(env, v, &type, &length, &p, nullptr, &offset) != napi_ok) return false;
    size_t element = 1;
    switch (type) {
      case napi_int16_array: case napi_uint16_array: element = 2; break;
      case napi_int32_array: case napi_uint32_array: case napi_float32_array: element = 4; break;
      case napi_float64_array: case napi_bigint64_array: case napi_biguint64_array: element = 8; break;
      default: element = 1; break;
    }
    len = length * element;
  } else if (napi_is_dataview(env, v, &is) == napi_ok && is) {
    size_t offset = 0;
    if (napi_get_dataview_info(env, v, &len, &p, nullptr, &offset) != napi_ok) return false;
  } else if (napi_is_arraybuffer(env, v, &is) == napi_ok && is) {
    if (napi_get_arraybuffer_info(env, v, &p, &len) != napi_ok) return false;
  } else {
    return false;
  }
  *data = static_cast<uint8_t*>(p);
  *bytes = len;
  return true;
}

uint32_t ModuleIdArg(Napi::Env env, Napi::Value v, const char* method) {
  uint64_t id = 0;
  if (!v.IsNumber() || !ToUint64(v, &id) || id > std::numeric_limits<uint32_t>::max()) {
    throw BadArg(env, std::string(method) + ": module id must be a non-negative integer, got " +
                          Describe(v));
  }
  return static_cast<uint32_t>(id);
}

namespace {
// Data and element count of `v` when it is a typed array of `type` (one N-API call).
bool TypedArrayOf(napi_env env, napi_value v, napi_typedarray_type type, void** data, size_t* length) {
  napi_typedarray_type t;
  // no arraybuffer / offset out-parameters: asking for the buffer materializes it in V8
  if (napi_get_typedarray_info(env, v, &t, length, data, nullptr, nullptr) != napi_ok) {
    const napi_extended_error_info* ignored;
    napi_get_last_error_info(env, &ignored);  // not a typed array: clear the pending status
    return false;
  }
  return t == type;
}

// A numeric slot of kind 3..6 into `value`; false when the slot defers to the args element
// (an int slot holding NaN: a bigint beyond 2^53). The same rules (and messages) as the
// element conversion below.
bool ParseSlot(Napi::Env env, const char* method, uint32_t i, uint8_t kind, double d, int64_t* value) {
  auto bad = [&](const char* expected) {
    std::string got = (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 1e18)
                          ? std::to_string(static_cast<int64_t>(d)) : std::to_string(d);
    return BadArg(env, std::string(method) + ": argument " + std::to_string(i) + " (" +
                           ArgKindName(kind) + ") must be " + expected + ", got " + got,
                  false, i);
  };
  switch (kind) {
    case kArgDevice:
      if (!(d >= 0 && d <= kMaxSafeInteger && d == std::trunc(d))) throw bad("a device address (bigint)");
      *value = static_cast<int64_t>(d);
      return true;
    case kArgInt:
      if (std::isnan(d)) return false;
      if (!(d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
        throw bad("an integer in the int64 range");
      }
      *value = static_cast<int64_t>(d);
      return true;
    case kArgFloat:
      std::memcpy(value, &d, sizeof d);
      return true;
    case kArgBool:
      *value = d != 0 ? 1 : 0;
      return true;
    default:
      return false;
  }
}
}  // namespace

// Converts launch(moduleId, args, kinds) arguments. Host views are referenced by pointer
// with their LIVE byte length (a detached buffer has 0); when `keep` is given (async
// launch) each host view gets a persistent reference (keep[i], empty for other kinds) so
// the launch can re-read it on the JS thread when it completes.
void ParseLaunch(const Napi::CallbackInfo& info, const char* method, uint32_t* module_id,
                 std::vector<LaunchArg>* out, std::vector<Napi::ObjectReference>* keep) {
  Napi::Env env = info.Env();
  *module_id = ModuleIdArg(env, info[0], method);
  if (!info[1].IsArray()) {
    throw BadArg(env, std::string(method) + ": args must be an array, got " + Describe(info[1]));
  }
  Napi::Array arr = info[1].As<Napi::Array>();
  const uint32_t n = arr.Length();
  // kinds (Uint8Array) and the optional slots (Float64Array, one per argument: device
  // addresses and scalars as numbers, read here in one block instead of one element lookup
  // and conversion per argument): one napi_get_typedarray_info each (the Napi wrappers' type
  // and length accessors would each ask again).
  const uint8_t* kind_data = nullptr;
  size_t kinds_len = 0;
  if (!TypedArrayOf(env, info[2], napi_uint8_array, reinterpret_cast<void**>(const_cast<uint8_t**>(&kind_data)), &kinds_len)) {
    throw BadArg(env, std::string(method) + ": kinds must be a Uint8Array, got " + Describe(info[2]));
  }
  if (kinds_len != n) {
    throw BadArg(env, std::string(method) + ": kinds has " + std::to_string(kinds_len) +
                          " entries but args has " + std::to_string(n));
  }
  const double* slots = nullptr;
  if (info.Length() > 3 && !info[3].IsUndefined()) {
    size_t slots_len = 0;
    void* data = nullptr;
    if (!TypedArrayOf(env, info[3], napi_float64_array, &data, &slots_len) || slots_len != n) {
      throw BadArg(env, std::string(method) + ": slots must be a Float64Array of " + std::to_string(n) +
                            " entries (one per argument), got " + Describe(info[3]));
    }
    slots = static_cast<const double*>(data);
  }
  out->resize(n);
  if (keep != nullptr) keep->resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    LaunchArg& a = (*out)[i];
    a = LaunchArg{};
    a.kind = kind_data[i];
    if (slots != nullptr && a.kind >= kArgDevice && a.kind <= kArgBool &&
        ParseSlot(env, method, i, a.kind, slots[i], &a.value)) {
      continue;
    }
    Napi::Value v = arr.Get(i);
    auto bad = [&](const char* expected) {
      return BadArg(env, std::string(method) + ": argument " + std::to_string(i) + " (" +
                             ArgKindName(a.kind) + ") must be " + expected + ", got " + Describe(v),
                    false, i);
    };
    switch (a.kind) {
      case kArgHostIn:
      case kArgHostOut:
      case kArgHostInOut:
        if (!HostView(env, v, &a.host, &a.host_bytes)) throw bad("an ArrayBufferView");
        if (keep != nullptr) (*keep)[i] = Napi::Persistent(v.As<Napi::Object>());
        break;
      case kArgDevice: {
        uint64_t addr = 0;
        if (!ToUint64(v, &addr)) throw bad("a device address (bigint)");
        a.value = static_cast<int64_t>(addr);
        break;
      }
      case kArgInt:
        if (v.IsBigInt()) {
          bool lossless = false;
          a.value = v.As<Napi::BigInt>().Int64Value(&lossless);
          if (!lossless) throw bad("an integer in the int64 range");
        } else if (v.IsNumber()) {
          const double d = v.As<Napi::Number>().DoubleValue();
          // [-2^63, 2^63): exactly representable bounds.
          if (!(d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
            throw bad("an integer in the int64 range");
          }
          a.value = static_cast<int64_t>(d);
        } else {
          throw bad("a number or bigint");
        }
        break;
      case kArgFloat: {
        if (!v.IsNumber()) throw bad("a number");
        const double d = v.As<Napi::Number>().DoubleValue();
        std::memcpy(&a.value, &d, sizeof d);
        break;
      }
      case kArgBool:
        if (v.IsBoolean()) {
          a.value = v.As<Napi::Boolean>().Value() ? 1 : 0;
        } else if (v.IsNumber()) {
          a.value = v.As<Napi::Number>().DoubleValue() != 0 ? 1 : 0;
        } else {
          throw bad("a boolean");
        }
        break;
      default:
        throw BadArg(env, std::string(method) + ": kinds[" + std::to_string(i) + "] = " +
                              std::to_string(a.kind) + " is not an argument kind (0..6)",
                     false, i);
    }
  }
}

}  // namespace addon
}  // namespace tspto
