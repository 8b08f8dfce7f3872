// GGUF tensors in gkrt's forms: the block-quantized ggml types as BlockQuantMatMul's
// weights (runtime/ir/ops/block_quant_matmul.h), kept in blocks of their own size, and
// the float types as float32.
//
//   Q4_0  32 values: half d, 16 bytes of nibbles (value j low, j + 16 high), w = (q - 8) d
//         -> kInt4 (the nibbles' top bit flipped), scale d
//   Q4_1  32 values: half d, half m, nibbles as Q4_0, w = q d + m -> kUInt4, scale d, offset m
//   Q8_0  32 values: half d, 32 int8, w = q d -> kInt8, scale d
//   Q4_K  256 values: half d, half dmin, 12 bytes of 6-bit scales and mins, 128 bytes of
//         nibbles (each 64 values: 32 bytes, low nibbles the first 32); w = q d sc - dmin m
//         per 32 -> kUInt4 in blocks of 32, scale d sc, offset -dmin m
//   Q6_K  256 values: 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 int8 scales,
//         half d; w = (q - 32) d sc per 16 -> kInt8 in blocks of 16, scale d sc
//
// 4-bit values are repacked to two a byte with the even k in the low nibble; the
// values themselves, scales and offsets are the file's (fp16 widened exactly).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/ir/dtype.h"
#include "runtime/ir/status.h"
#include "tools/gguf/gguf_file.h"
#include "runtime/base/huge_page_arena.h"

namespace gkrt::gguf {

// An array of T in a HugePageArena (not owned: the arena holds it).
template <class T> struct ArenaArray {
  T* ptr = nullptr;
  size_t count = 0;
  T* data() const { return ptr; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  T& operator[](size_t i) const { return ptr[i]; }
};

// A 2-D weight [N rows of K values] in blocks along K, its arrays in `arena`.
struct BlockWeight {
  int64_t N = 0, K = 0, block = 0, blocks = 0, blob = 0;
  DType to = DType::kInt8;        // kUInt4, kInt4 (two a byte) or kInt8
  std::shared_ptr<HugePageArena> arena;
  ArenaArray<uint8_t> values;  // [N, blocks, blob]
  ArenaArray<float> scales;    // [N, blocks]
  ArenaArray<float> offsets;   // [N, blocks], or empty
};

// True for the types blockWeight converts.
bool isBlockQuantType(uint32_t type);
// A 2-D tensor of a block type; `row_of[n]` (when not empty) is the file's row that
// becomes row n (the Q/K rotary permutation undone).
StatusOr<BlockWeight> blockWeight(const Tensor& t, const std::shared_ptr<HugePageArena>& arena,
                                  const std::vector<int64_t>& row_of = {});
// The pieces of blockWeight, for weights made of several tensors' rows (Q/K/V as one):
// the layout of `rows` rows of t's type and row length (values, scales and offsets
// allocated), and t's rows converted into rows first.. of it (on the cores there are).
StatusOr<BlockWeight> blockLayout(const Tensor& t, int64_t rows, const std::shared_ptr<HugePageArena>& arena);
Status convertBlockRows(const Tensor& t, const std::vector<int64_t>& row_of, BlockWeight& w, int64_t first);
// The same values one a byte (int8: a nibble's value, 0..15 for kUInt4, -8..7 for
// kInt4): a table rows are gathered from and then widened.
StatusOr<BlockWeight> valuesPerByte(const BlockWeight& w);

// F32, F16 or BF16 as float32, rows reordered as above (any rank: rows of dims[0]).
StatusOr<std::vector<float>> floatValues(const Tensor& t, const std::vector<int64_t>& row_of = {});

// llama.cpp's rotary row order undone (convert_hf_to_gguf's permute of attn_q/attn_k,
// for its interleaved rotary): row_of[n] for the rows of `heads` heads of `head_dim`.
std::vector<int64_t> unpermuteRotaryRows(int64_t heads, int64_t head_dim);

}  // namespace gkrt::gguf
