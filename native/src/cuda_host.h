// Host-side logic of the cuda device that needs no GPU (unit-tested through the addon's
// cudaHost export, test/targets/cuda/host.test.ts): the TMA tensor-map table rows of a v2
// module (kernels/entry.cpp, tspto_cuda_tmaps) and the arguments of cuTensorMapEncodeTiled.
#pragma once

#include <cstdint>
#include <string>

namespace tspto {

// One row of tspto_cuda_tmaps: kernel, slot, data type, inner / outer extent, row bytes,
// inner / outer box, swizzle (src/codegen/cuda/tma_gemm.ts, tmapTable).
struct TensorMapSpec {
  int kernel = 0;
  int slot = 0;
  int dtype = 0;  // CUtensorMapDataType
  uint64_t dims[2] = {0, 0};
  uint64_t row_bytes = 0;
  uint32_t box[2] = {0, 0};
  int swizzle = 0;  // CUtensorMapSwizzle
};

// The arguments of cuTensorMapEncodeTiled for a spec (the address comes at launch).
struct TensorMapArgs {
  int dtype = 0;
  uint32_t rank = 2;
  uint64_t dims[2] = {0, 0};
  uint64_t strides[1] = {0};  // rank - 1 byte strides (the innermost is the element size)
  uint32_t box[2] = {0, 0};
  uint32_t element_strides[2] = {1, 1};
  int interleave = 0;    // CU_TENSOR_MAP_INTERLEAVE_NONE
  int swizzle = 0;
  int l2_promotion = 2;  // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  int oob_fill = 0;      // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
};

inline int TensorMapElementBytes(int dtype) {
  switch (dtype) {
    case 0: return 1;                        // UINT8
    case 1: case 6: case 9: return 2;        // UINT16, FLOAT16, BFLOAT16
    case 2: case 3: case 7: return 4;        // UINT32, INT32, FLOAT32
    case 4: case 5: case 8: return 8;        // UINT64, INT64, FLOAT64
    default: return 0;
  }
}

// Checks a row against the driver's rules for a tiled 2D map (global strides multiples of 16
// below 2^40, boxes of 1..256 elements, the inner box within the swizzle span) and fills `out`.
inline bool ParseTensorMapRow(const int64_t* row, int kernels, int max_slots, TensorMapSpec* out, std::string* why) {
  TensorMapSpec s;
  s.kernel = static_cast<int>(row[0]);
  s.slot = static_cast<int>(row[1]);
  s.dtype = static_cast<int>(row[2]);
  const int64_t d0 = row[3], d1 = row[4], rb = row[5], b0 = row[6], b1 = row[7];
  s.swizzle = static_cast<int>(row[8]);
  const int eb = TensorMapElementBytes(s.dtype);
  auto bad = [&](const std::string& m) { *why = m; return false; };
  if (row[0] < 0 || row[0] >= kernels) return bad("kernel index " + std::to_string(row[0]) + " out of range");
  if (row[1] < 0 || row[1] >= max_slots) return bad("slot " + std::to_string(row[1]) + " out of range");
  if (eb == 0) return bad("unsupported data type " + std::to_string(row[2]));
  if (d0 < 1 || d1 < 1 || d0 > (int64_t(1) << 32) || d1 > (int64_t(1) << 32)) return bad("extent out of range");
  if (rb < d0 * eb || rb % 16 != 0 || rb >= (int64_t(1) << 40)) return bad("row bytes " + std::to_string(rb) + " must cover a row and be a multiple of 16");
  if (b0 < 1 || b1 < 1 || b0 > 256 || b1 > 256 || b0 > d0 || b1 > d1) return bad("box out of range");
  if ((b0 * eb) % 16 != 0) return bad("the inner box must be a multiple of 16 bytes");
  const int span = s.swizzle == 1 ? 32 : s.swizzle == 2 ? 64 : s.swizzle == 3 ? 128 : 0;
  if (s.swizzle < 0 || s.swizzle > 3) return bad("unsupported swizzle " + std::to_string(s.swizzle));
  if (span && b0 * eb > span) return bad("the inner box (" + std::to_string(b0 * eb) + " bytes) exceeds the swizzle span of " + std::to_string(span));
  s.dims[0] = static_cast<uint64_t>(d0);
  s.dims[1] = static_cast<uint64_t>(d1);
  s.row_bytes = static_cast<uint64_t>(rb);
  s.box[0] = static_cast<uint32_t>(b0);
  s.box[1] = static_cast<uint32_t>(b1);
  *out = s;
  return true;
}

inline TensorMapArgs TensorMapEncodeArgs(const TensorMapSpec& s) {
  TensorMapArgs a;
  a.dtype = s.dtype;
  a.dims[0] = s.dims[0];
  a.dims[1] = s.dims[1];
  a.strides[0] = s.row_bytes;
  a.box[0] = s.box[0];
  a.box[1] = s.box[1];
  a.swizzle = s.swizzle;
  return a;
}

}  // namespace tspto

// ------------------------------------------------------------------ CUDA graphs (opt-in)
#include <cstring>
#include <vector>

namespace tspto {

// One kernel launch as a graph node: the launch shape and the bytes of its parameters —
// up to kGraphMaps tensor maps (128 bytes each, 128-byte aligned) and then the argument block.
constexpr size_t kGraphMaps = 4;
constexpr size_t kGraphMapBytes = 128;
constexpr size_t kGraphArgsBytes = 448;  // sizeof(KernelArgs) (cuda_device.cc checks it)
constexpr size_t kGraphParamBytes = kGraphMaps * kGraphMapBytes + kGraphArgsBytes;
struct GraphNodeDesc {
  int kernel = -1;
  uint32_t grid = 0, block = 0, shared = 0;
  uint32_t nmaps = 0;
  alignas(128) unsigned char params[kGraphParamBytes] = {};
  unsigned char* map(size_t i) { return params + i * kGraphMapBytes; }
  unsigned char* args() { return params + kGraphMaps * kGraphMapBytes; }
  bool SameShape(const GraphNodeDesc& o) const { return kernel == o.kernel && grid == o.grid && block == o.block && shared == o.shared && nmaps == o.nmaps; }
  bool SameParams(const GraphNodeDesc& o) const { return std::memcmp(params, o.params, sizeof params) == 0; }
};

// What a flush of recorded launches does with the instantiated graph of its segment (the
// n-th flush of one run of the orchestration: before a free, a scratch reallocation or a wait).
struct GraphDecision {
  bool rebuild = false;         // no graph yet, or another sequence of kernels / grids: build and instantiate
  std::vector<size_t> patch;    // otherwise: the nodes whose parameters changed (cuGraphExecKernelNodeSetParams)
};

// The graphs' bookkeeping, without CUDA: per segment the nodes last launched.
class GraphBook {
 public:
  // Decides for `nodes` (the segment's launches, in order) and records them as launched.
  void Decide(size_t segment, const std::vector<GraphNodeDesc>& nodes, size_t count, GraphDecision* out) {
    out->rebuild = false;
    out->patch.clear();
    if (segment >= last_.size()) last_.resize(segment + 1);
    std::vector<GraphNodeDesc>& prev = last_[segment];
    bool same = prev.size() == count;
    for (size_t i = 0; same && i < count; ++i) same = prev[i].SameShape(nodes[i]);
    if (!same) {
      out->rebuild = true;
      prev.assign(nodes.begin(), nodes.begin() + static_cast<ptrdiff_t>(count));
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      if (!prev[i].SameParams(nodes[i])) {
        out->patch.push_back(i);
        std::memcpy(prev[i].params, nodes[i].params, sizeof prev[i].params);
      }
    }
  }
  void Forget(size_t segment) { if (segment < last_.size()) last_[segment].clear(); }
  size_t segments() const { return last_.size(); }

 private:
  std::vector<std::vector<GraphNodeDesc>> last_;
};

}  // namespace tspto
