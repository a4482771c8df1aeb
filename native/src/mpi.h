// MPI for the distributed runtime (src/distributed): Open MPI's libmpi is loaded at run time
// with dlopen, so the addon builds and loads on machines without MPI. See mpi.cc.
#ifndef TSPTO_NATIVE_MPI_H
#define TSPTO_NATIVE_MPI_H

#include <napi.h>

#include <memory>

#include "device.h"

namespace tspto {

// The `mpi` object of the addon's exports.
Napi::Object MpiBinding(Napi::Env env);

// The DeviceCore of a JS Device object (defined in addon.cc); throws a JS TypeError naming
// `what` for anything else, and a "device is closed" error for a closed device.
std::shared_ptr<DeviceCore> DeviceCoreOf(Napi::Env env, Napi::Value v, const char* what);

}  // namespace tspto

#endif  // TSPTO_NATIVE_MPI_H
