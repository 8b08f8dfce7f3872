// The cpu backend's own int8 GEMM: the integer matmuls where oneDNN is absent (boards,
// minimal builds) or refuses the case, and QuantBatchMatMul everywhere:
//   MatMulInteger     int32 = (A - azp) @ (B - bzp)
//   QLinearMatMul     y = sat(rint(acc * float(float(as*bs)/ys)) + yzp)
//   QuantBatchMatMul  float32 = float(acc + bias) * float(as*bs)
// A: int8/uint8 [..., M, K] with a per-tensor zero point (a run-time scalar too: the
// DynamicQuantizeLinear of a dynamically quantized model); B: a constant int8/uint8
// [K, N] with per-tensor or per-column zero point and scale, packed once at compile as
// int16 (b - bzp) panels of 16 columns. The int32 sums are exact and the rescale is the
// reference kernel's (runtime/ir/ops/quant_linear.cc), so the results are bit-identical.
// The inner loop widens int16 products into int32 lanes: the compiler's vector MACs
// (NEON smlal); on aarch64 cores with the dot-product instructions SDOT instead
// (int8_gemm_dotprod.cc, picked at run time), rows over the threads; at the AVX2 tier
// vpmaddwd on k pairs (16 products an instruction, exact), 16-column panels over the
// threads with every row of a against a panel while it is in cache.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/quantization/int8_gemm_dotprod.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

constexpr int64_t kInt8PanelWidth = 16;

struct PackedInt8B {
  int64_t K = 0, N = 0;
  std::vector<int16_t> panels;  // ceil(N / 16) panels of K x 16 (b - bzp), zero-padded columns
  bool dot = false;             // aarch64 SDOT path: the CPU has it and every b - bzp fits int8
  DotProdB dot_b;
  // x86 AVX2 path (the tier has it): ceil(N / 16) panels of ceil(K / 2) x 16 pairs
  // (b[2k][j], b[2k+1][j]) - bzp, for vpmaddwd: exact int16 products summed in pairs.
  std::vector<int16_t> pairs;
};

// b: K x N row-major of `type` (int8 or uint8); bzp: one value or N.
void packInt8B(const void* b, DType type, int64_t K, int64_t N, const std::vector<int32_t>& bzp, PackedInt8B* out);

// Per-thread buffers of int8Gemm, sized once at compile (a launch allocates nothing).
struct Int8GemmScratch {
  std::vector<std::vector<int16_t>> a16;    // portable path: a block of rows of a - azp
  std::vector<std::vector<int8_t>> a_pack;  // SDOT path: one row group of a, packed
  std::vector<int16_t> a_pairs;             // AVX2 path: every row of a - azp, K padded to even
};
// `M`: the rows int8Gemm will be given (the AVX2 path converts them all at once).
Int8GemmScratch makeInt8GemmScratch(const PackedInt8B& b, int threads, int64_t M);

// c (M x N, ldc = N) = (a - azp) @ B'; a: M x K row-major of `type`. `scratch` from
// makeInt8GemmScratch(b, pool.size()).
void int8Gemm(int64_t M, const void* a, DType type, int32_t azp, const PackedInt8B& b, int32_t* c, ThreadPool& pool,
              Int8GemmScratch& scratch);

bool canRunInt8Gemm(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileInt8Gemm(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
