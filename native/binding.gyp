# Build of the tspto native runtime: one node-addon-api addon, `tspto_native`.
# `npm install` runs `node-gyp rebuild --directory native`; the output is
# native/build/Release/tspto_native.node (loaded by src/runtime/native.ts).
{
  "targets": [
    {
      "target_name": "tspto_native",
      "sources": [
        "src/addon.cc",
        "src/addon_args.cc",
        "src/arena.cc",
        "src/cuda_device.cc",
        "src/device.cc",
        "src/scheduler.cc",
        "src/mpi.cc",
        "src/mpi_watch.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "include"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      # common.gypi already adds -pthread -Wall -Wextra; the C++ flags come last on the
      # command line, so -O2 here wins over the Release default -O3.
      "cflags_cc": ["-std=c++17", "-O2", "-fexceptions"],
      "ldflags": ["-pthread"],
      "libraries": ["-ldl"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0"
      }
    }
  ]
}
