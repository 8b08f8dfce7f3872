#include "tools/gguf/gguf_blocks.h"

#include <cstring>

namespace gkrt::gguf {
namespace {

// Every half's float, made once: a call to halfToFloat for each of SmolLM2's 5 million
// block scales and offsets took a fifth of converting it.
const float* halfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = halfToFloat(uint16_t(h));
    return t;
  }();
  return table.data();
}

inline float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return halfTable()[h];
}

// A Q4_0/Q4_1 block's 16 bytes (value j low, j + 16 high) as gkrt's (value 2b low, 2b + 1
// high), the top bit of each nibble flipped by `flip` (0x88: q - 8 as two's complement).
inline void repackQ4(const uint8_t* qs, uint8_t* out, uint8_t flip) {
  for (int b = 0; b < 8; ++b) {
    out[b] = uint8_t(((qs[2 * b] & 15) | (qs[2 * b + 1] << 4)) ^ flip);                  // values 0..15
    out[8 + b] = uint8_t(((qs[2 * b] >> 4) | (qs[2 * b + 1] & 0xF0)) ^ flip);           // values 16..31
  }
}

// One 256-value Q4_K super-block's scale and min of sub-block j (6 bits each).
void q4kScaleMin(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Writes 32 4-bit values (0..15) two a byte, even k low.
inline void packNibbles(const uint8_t* v, uint8_t* out, int n) {
  for (int b = 0; b < n / 2; ++b) out[b] = uint8_t(v[2 * b] | (v[2 * b + 1] << 4));
}

// Converts one file row (`src`, K values) into row n of `w`.
void convertRow(uint32_t type, const uint8_t* src, BlockWeight& w, int64_t n) {
  uint8_t* vals = w.values.data() + n * w.blocks * w.blob;
  float* sc = w.scales.data() + n * w.blocks;
  float* off = w.offsets.empty() ? nullptr : w.offsets.data() + n * w.blocks;
  uint8_t v[32];
  switch (TensorType(type)) {
    case TensorType::kQ4_0:
      for (int64_t b = 0; b < w.blocks; ++b, src += 18) {
        sc[b] = half(src);
        repackQ4(src + 2, vals + b * 16, 0x88);  // q - 8 as a two's-complement nibble
      }
      break;
    case TensorType::kQ4_1:
      for (int64_t b = 0; b < w.blocks; ++b, src += 20) {
        sc[b] = half(src);
        off[b] = half(src + 2);
        repackQ4(src + 4, vals + b * 16, 0);
      }
      break;
    case TensorType::kQ8_0:
      for (int64_t b = 0; b < w.blocks; ++b, src += 34) {
        sc[b] = half(src);
        std::memcpy(vals + b * 32, src + 2, 32);
      }
      break;
    case TensorType::kQ4_K:
      for (int64_t s = 0; s < w.blocks / 8; ++s, src += 144) {
        const float d = half(src), dmin = half(src + 2);
        const uint8_t* scales = src + 4;
        const uint8_t* qs = src + 16;
        for (int j = 0; j < 8; ++j) {  // sub-block j: the low (even j) or high nibbles of 32 bytes
          int scj = 0, mj = 0;
          q4kScaleMin(scales, j, &scj, &mj);
          const int64_t b = s * 8 + j;
          sc[b] = d * float(scj);
          off[b] = -dmin * float(mj);
          const uint8_t* q = qs + (j / 2) * 32;
          for (int l = 0; l < 32; ++l) v[l] = j % 2 == 0 ? q[l] & 15 : q[l] >> 4;
          packNibbles(v, vals + b * 16, 32);
        }
      }
      break;
    case TensorType::kQ6_K:
      for (int64_t s = 0; s < w.blocks / 16; ++s, src += 210) {
        const uint8_t* ql = src;
        const uint8_t* qh = src + 128;
        const int8_t* scales = reinterpret_cast<const int8_t*>(src + 192);
        const float d = half(src + 208);
        int8_t* out = reinterpret_cast<int8_t*>(vals + s * 256);
        for (int h = 0; h < 2; ++h) {  // two halves of 128 values
          const uint8_t* l0 = ql + 64 * h;
          const uint8_t* h0 = qh + 32 * h;
          int8_t* y = out + 128 * h;
          for (int l = 0; l < 32; ++l) {
            y[l] = int8_t(((l0[l] & 15) | ((h0[l] & 3) << 4)) - 32);
            y[l + 32] = int8_t(((l0[l + 32] & 15) | (((h0[l] >> 2) & 3) << 4)) - 32);
            y[l + 64] = int8_t(((l0[l] >> 4) | (((h0[l] >> 4) & 3) << 4)) - 32);
            y[l + 96] = int8_t(((l0[l + 32] >> 4) | (((h0[l] >> 6) & 3) << 4)) - 32);
          }
        }
        for (int j = 0; j < 16; ++j) sc[s * 16 + j] = d * float(scales[j]);
      }
      break;
    default: break;
  }
}

Status checkRows(const Tensor& t, const std::vector<int64_t>& row_of, int64_t rows) {
  if (!row_of.empty() && int64_t(row_of.size()) != rows) {
    return makeError(StatusCode::kInvalidModel, "GGUF tensor '", t.name, "' has ", rows, " rows, not the ", row_of.size(),
                     " its heads need");
  }
  for (int64_t r : row_of) {
    if (r < 0 || r >= rows) return makeError(StatusCode::kInternal, "row permutation of '", t.name, "' out of range");
  }
  return Status::Ok();
}

}  // namespace

bool isBlockQuantType(uint32_t type) {
  switch (TensorType(type)) {
    case TensorType::kQ4_0: case TensorType::kQ4_1: case TensorType::kQ8_0: case TensorType::kQ4_K: case TensorType::kQ6_K:
      return true;
    default: return false;
  }
}

// `n` values of T from the arena, or an error naming the tensor.
template <class T> StatusOr<ArenaArray<T>> arenaArray(HugePageArena& arena, size_t n, const std::string& name) {
  uint8_t* p = arena.allocate(n * sizeof(T));
  if (!p) return makeError(StatusCode::kDeviceError, "out of memory converting GGUF tensor '", name, "' (", n * sizeof(T), " bytes)");
  return ArenaArray<T>{reinterpret_cast<T*>(p), n};
}

StatusOr<BlockWeight> blockLayout(const Tensor& t, int64_t rows, const std::shared_ptr<HugePageArena>& arena) {
  if (!isBlockQuantType(t.type)) {
    return makeError(StatusCode::kUnsupported, "GGUF tensor '", t.name, "' is ", tensorTypeName(t.type),
                     "; gkrt converts F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K (requantize the file with llama.cpp's "
                     "llama-quantize to one of them)");
  }
  if (t.dims.size() != 2) {
    return makeError(StatusCode::kInvalidModel, "GGUF tensor '", t.name, "' has ", t.dims.size(), " dims; a weight matrix has 2");
  }
  BlockWeight w;
  w.K = t.dims[0];
  w.N = rows;
  const TensorType type = TensorType(t.type);
  w.block = type == TensorType::kQ6_K ? 16 : 32;
  w.to = type == TensorType::kQ4_0 ? DType::kInt4 : (type == TensorType::kQ4_1 || type == TensorType::kQ4_K) ? DType::kUInt4
                                                                                                                : DType::kInt8;
  w.blocks = w.K / w.block;
  w.blob = w.to == DType::kInt8 ? w.block : w.block / 2;
  w.arena = arena;
  ASSIGN_OR_RETURN(w.values, arenaArray<uint8_t>(*arena, size_t(w.N * w.blocks * w.blob), t.name));
  ASSIGN_OR_RETURN(w.scales, arenaArray<float>(*arena, size_t(w.N * w.blocks), t.name));
  if (type == TensorType::kQ4_1 || type == TensorType::kQ4_K) {
    ASSIGN_OR_RETURN(w.offsets, arenaArray<float>(*arena, w.scales.size(), t.name));
  }
  return w;
}

Status convertBlockRows(const Tensor& t, const std::vector<int64_t>& row_of, BlockWeight& w, int64_t first) {
  const int64_t rows = t.dims.size() == 2 ? t.dims[1] : 0;
  RETURN_IF_ERROR(checkRows(t, row_of, rows));
  if (t.dims.size() != 2 || t.dims[0] != w.K || first < 0 || first + rows > w.N) {
    return makeError(StatusCode::kInternal, "GGUF tensor '", t.name, "' does not fit the weight it is converted into");
  }
  int64_t block_values = 0, block_bytes = 0;
  tensorTypeBlock(t.type, &block_values, &block_bytes);
  const int64_t row_bytes = w.K / block_values * block_bytes;
  // One thread: on 2 cores two took as long (the page faults of fresh memory serialise),
  // and when the other core was busy a run waited 90-190 ms at the join.
  for (int64_t n = 0; n < rows; ++n) {
    convertRow(t.type, t.data + (row_of.empty() ? n : row_of[size_t(n)]) * row_bytes, w, first + n);
  }
  return Status::Ok();
}

StatusOr<BlockWeight> blockWeight(const Tensor& t, const std::shared_ptr<HugePageArena>& arena, const std::vector<int64_t>& row_of) {
  ASSIGN_OR_RETURN(BlockWeight w, blockLayout(t, t.dims.size() == 2 ? t.dims[1] : 0, arena));
  RETURN_IF_ERROR(convertBlockRows(t, row_of, w, 0));
  return w;
}

StatusOr<BlockWeight> valuesPerByte(const BlockWeight& w) {
  if (w.to == DType::kInt8) return w;
  BlockWeight o = w;
  o.to = DType::kInt8;
  o.blob = w.block;
  ASSIGN_OR_RETURN(o.values, arenaArray<uint8_t>(*w.arena, size_t(w.N * w.blocks * w.block), "(one value a byte)"));
  const bool sign = w.to == DType::kInt4;
  for (size_t i = 0; i < w.values.size(); ++i) {
    for (int h = 0; h < 2; ++h) {
      const int u = (w.values[i] >> (4 * h)) & 15;
      o.values[2 * i + size_t(h)] = uint8_t(int8_t(sign && u >= 8 ? u - 16 : u));
    }
  }
  return o;
}

StatusOr<std::vector<float>> floatValues(const Tensor& t, const std::vector<int64_t>& row_of) {
  const TensorType type = TensorType(t.type);
  if (type != TensorType::kF32 && type != TensorType::kF16 && type != TensorType::kBF16) {
    return makeError(StatusCode::kUnsupported, "GGUF tensor '", t.name, "' is ", tensorTypeName(t.type),
                     isBlockQuantType(t.type) ? ", a block type where gkrt needs F32, F16 or BF16 (a norm or bias)"
                                              : "; gkrt converts F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K (requantize the "
                                                "file with llama.cpp's llama-quantize to one of them)");
  }
  const int64_t K = t.dims[0], rows = t.elements() / K;
  RETURN_IF_ERROR(checkRows(t, row_of, rows));
  std::vector<float> out(size_t(rows * K));
  const size_t es = type == TensorType::kF32 ? 4 : 2;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = t.data + (row_of.empty() ? r : row_of[size_t(r)]) * K * int64_t(es);
    float* dst = out.data() + r * K;
    if (type == TensorType::kF32) {
      std::memcpy(dst, src, size_t(K) * 4);
    } else {
      for (int64_t k = 0; k < K; ++k) {
        uint16_t h;
        std::memcpy(&h, src + 2 * k, 2);
        dst[k] = type == TensorType::kF16 ? halfToFloat(h) : bfloat16ToFloat(h);
      }
    }
  }
  return out;
}

std::vector<int64_t> unpermuteRotaryRows(int64_t heads, int64_t head_dim) {
  std::vector<int64_t> row_of(size_t(heads * head_dim));
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t i = 0; i < half; ++i) row_of[size_t(h * head_dim + s * half + i)] = h * head_dim + 2 * i + s;
  return row_of;
}

}  // namespace gkrt::gguf
