#include "backends/cpu/quantization/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/isa/vector_math.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

#ifdef GKRT_X86_TIERS
#include <immintrin.h>
#endif

namespace gkrt::cpu {
namespace {

// An AVX2 build picked by cpuTier() on x86-64 (integer math: any order gives the same sums).

constexpr int64_t kRows = 4;              // rows of A per micro-kernel call
constexpr int64_t kMaxK = 32768;          // |a - azp|, |b - bzp| <= 255: int32 sums cannot overflow

bool is(const ir::Node& n, const char* op) { return std::strcmp(n.op->name, op) == 0; }
bool int8Like(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

int32_t loadInt8(const void* p, DType t, int64_t i) {
  return t == DType::kInt8 ? static_cast<const int8_t*>(p)[i] : static_cast<const uint8_t*>(p)[i];
}

// c[r][0:cols] = sum_k a[r][k] * panel[k][0:16], for `rows` <= kRows rows of a (lda = K).
GKRT_INLINE_BODY void microKernelBody(const int16_t* a, int64_t rows, int64_t K, const int16_t* panel, int32_t* c,
                                      int64_t ldc, int64_t cols) {
  int32_t acc[kRows][kInt8PanelWidth] = {};
  for (int64_t k = 0; k < K; ++k) {
    const int16_t* bk = panel + k * kInt8PanelWidth;
    for (int64_t r = 0; r < kRows; ++r) {
      const int32_t av = r < rows ? a[r * K + k] : 0;
      for (int64_t j = 0; j < kInt8PanelWidth; ++j) acc[r][j] += av * bk[j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, acc[r], static_cast<size_t>(cols) * sizeof(int32_t));
}
GKRT_TIERED_AVX2(void, microKernel,
                 (const int16_t* a, int64_t rows, int64_t K, const int16_t* panel, int32_t* c, int64_t ldc,
                  int64_t cols),
                 (a, rows, K, panel, c, ldc, cols), "avx2")

// y[j] = clamp(rint(acc[j] * scale[j]) + yzp, lo, hi), rint half to even, NaN as 0: the
// reference kernel's rounding. The product is clamped to [lo - yzp, hi - yzp] before it is
// rounded (the same for integer bounds) and rounded by adding and taking away 1.5 * 2^52
// (round to nearest even in the default rounding mode): no libm call, and the loop
// vectorises.
template <class T>
void requantizeRow(const int32_t* acc, const double* scale, int64_t n, int64_t yzp, int64_t lo, int64_t hi, T* y) {
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const double dlo = static_cast<double>(lo - yzp), dhi = static_cast<double>(hi - yzp);
  for (int64_t j = 0; j < n; ++j) {
    double v = static_cast<double>(acc[j]) * scale[j];
    v = v == v ? v : 0.0;
    v = v < dlo ? dlo : v;
    v = v > dhi ? dhi : v;
    const double r = (v + kRound) - kRound;
    y[j] = static_cast<T>(static_cast<int32_t>(r) + static_cast<int32_t>(yzp));
  }
}

#ifdef GKRT_X86_TIERS
// c[r][0:cols] = sum_k a[r][k] * b[k][0:16] for ROWS <= kRows rows: a as int16 pairs
// (lda = Kp, even), the panel as pairs (packInt8B), vpmaddwd into 8 int32 lanes twice.
// The row count is a template argument so each count's loop is fully unrolled.
template <int64_t ROWS>
GKRT_TARGET_AVX2 void pairKernelAvx2(const int16_t* a, int64_t Kp, const int16_t* panel, int32_t* c, int64_t ldc,
                                     int64_t cols) {
  __m256i acc[ROWS][2];
  for (int64_t r = 0; r < ROWS; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t k = 0; k < Kp / 2; ++k) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + k * 32));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + k * 32 + 16));
    for (int64_t r = 0; r < ROWS; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * Kp + 2 * k, sizeof(pair));
      const __m256i av = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int64_t r = 0; r < ROWS; ++r) {
    alignas(32) int32_t out[kInt8PanelWidth];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), acc[r][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), acc[r][1]);
    std::memcpy(c + r * ldc, out, static_cast<size_t>(cols) * sizeof(int32_t));
  }
}

void pairKernelRows(const int16_t* a, int64_t rows, int64_t Kp, const int16_t* panel, int32_t* c, int64_t ldc,
                    int64_t cols) {
  static_assert(kRows == 4, "one instantiation per row count below");
  switch (rows) {
    case 4: return pairKernelAvx2<4>(a, Kp, panel, c, ldc, cols);
    case 3: return pairKernelAvx2<3>(a, Kp, panel, c, ldc, cols);
    case 2: return pairKernelAvx2<2>(a, Kp, panel, c, ldc, cols);
    default: return pairKernelAvx2<1>(a, Kp, panel, c, ldc, cols);
  }
}
#endif

}  // namespace

void packInt8B(const void* b, DType type, int64_t K, int64_t N, const std::vector<int32_t>& bzp, PackedInt8B* out) {
  out->K = K;
  out->N = N;
  const int64_t panels = (N + kInt8PanelWidth - 1) / kInt8PanelWidth;
  out->panels.clear();
  out->pairs.clear();
  std::vector<int8_t> shifted(static_cast<size_t>(K * N));
  bool fits = true;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t col = 0; col < N; ++col) {
      const int32_t v = loadInt8(b, type, k * N + col) - (bzp.size() == 1 ? bzp[0] : bzp[col]);
      fits = fits && v >= -128 && v <= 127;
      shifted[static_cast<size_t>(k * N + col)] = static_cast<int8_t>(v);
    }
  }
  out->dot = fits && cpuHasDotProd();
  if (out->dot) packDotProdB(shifted.data(), K, N, &out->dot_b);
#ifdef GKRT_X86_TIERS
  if (cpuTier().has(CpuIsa::kAvx2)) {
    const int64_t pairs = (K + 1) / 2;
    out->pairs.assign(static_cast<size_t>(panels * pairs * 2 * kInt8PanelWidth), 0);
    for (int64_t p = 0; p < panels; ++p) {
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t j = 0; j < kInt8PanelWidth && p * kInt8PanelWidth + j < N; ++j) {
          const int64_t col = p * kInt8PanelWidth + j;
          const int32_t zp = bzp.size() == 1 ? bzp[0] : bzp[col];
          out->pairs[static_cast<size_t>(((p * pairs + k / 2) * kInt8PanelWidth + j) * 2 + k % 2)] =
              static_cast<int16_t>(loadInt8(b, type, k * N + col) - zp);
        }
      }
    }
    return;  // the pairs replace the int16 panels
  }
#endif
  out->panels.assign(static_cast<size_t>(panels * K * kInt8PanelWidth), 0);
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < kInt8PanelWidth && p * kInt8PanelWidth + j < N; ++j) {
        const int64_t col = p * kInt8PanelWidth + j;
        const int32_t zp = bzp.size() == 1 ? bzp[0] : bzp[col];
        out->panels[(p * K + k) * kInt8PanelWidth + j] = static_cast<int16_t>(loadInt8(b, type, k * N + col) - zp);
      }
    }
  }
}

Int8GemmScratch makeInt8GemmScratch(const PackedInt8B& b, int threads, int64_t M) {
  Int8GemmScratch s;
  const size_t n = static_cast<size_t>(std::max(threads, 1));
  if (b.dot) s.a_pack.assign(n, std::vector<int8_t>(static_cast<size_t>(16 * b.dot_b.k_groups)));
  else if (!b.pairs.empty()) s.a_pairs.assign(static_cast<size_t>(M * ((b.K + 1) / 2 * 2)), 0);
  else s.a16.assign(n, std::vector<int16_t>(static_cast<size_t>(kRows * b.K)));
  return s;
}

void int8Gemm(int64_t M, const void* a, DType type, int32_t azp, const PackedInt8B& b, int32_t* c, ThreadPool& pool,
              Int8GemmScratch& scratch) {
  const int64_t K = b.K, N = b.N, panels = (N + kInt8PanelWidth - 1) / kInt8PanelWidth;
#ifdef GKRT_X86_TIERS
  if (!b.pairs.empty()) {  // every row of a - azp once, then panels over the threads
    const int64_t Kp = (K + 1) / 2 * 2;
    int16_t* a16 = scratch.a_pairs.data();
    for (int64_t r = 0; r < M; ++r) {
      for (int64_t k = 0; k < K; ++k) a16[r * Kp + k] = static_cast<int16_t>(loadInt8(a, type, r * K + k) - azp);
      if (Kp > K) a16[r * Kp + K] = 0;
    }
    pool.parallelFor(panels, 1, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(M * K * kInt8PanelWidth, 1)),
                     [&](int, int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int16_t* panel = b.pairs.data() + p * (Kp / 2) * 2 * kInt8PanelWidth;
        const int64_t cols = std::min(kInt8PanelWidth, N - p * kInt8PanelWidth);
        for (int64_t r0 = 0; r0 < M; r0 += kRows) {
          pairKernelRows(a16 + r0 * Kp, std::min(kRows, M - r0), Kp, panel, c + r0 * N + p * kInt8PanelWidth, N, cols);
        }
      }
    });
    return;
  }
#endif
  const int64_t blocks = (M + kRows - 1) / kRows;
  const int64_t work_per_block = kRows * K * N;
  pool.parallelFor(blocks, 1, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(work_per_block, 1)),
                   [&](int thread, int64_t begin, int64_t end) {
    if (b.dot) {  // SDOT: a enters as int8 (uint8 shifted by 128), corrected by the column sums
      std::vector<int8_t>& a_pack = scratch.a_pack[static_cast<size_t>(thread)];
      const bool is_unsigned = type == DType::kUInt8;
      const int32_t correction = (is_unsigned ? 128 : 0) - azp;
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t r0 = blk * kRows, rows = std::min(kRows, M - r0);
        dotProdRows(static_cast<const uint8_t*>(a) + r0 * K, is_unsigned, rows, correction, b.dot_b, c + r0 * N,
                    a_pack.data());
      }
      return;
    }
    std::vector<int16_t>& a16 = scratch.a16[static_cast<size_t>(thread)];  // this range's rows of a - azp
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t r0 = blk * kRows, rows = std::min(kRows, M - r0);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < K; ++k) a16[r * K + k] = static_cast<int16_t>(loadInt8(a, type, (r0 + r) * K + k) - azp);
      }
      for (int64_t p = 0; p < panels; ++p) {
        microKernel(a16.data(), rows, K, b.panels.data() + p * K * kInt8PanelWidth, c + r0 * N + p * kInt8PanelWidth, N,
                    std::min(kInt8PanelWidth, N - p * kInt8PanelWidth));
      }
    }
  });
}

namespace {

enum class Int8Op { kMatMulInteger, kQLinearMatMul, kQuantBatchMatMul, kToFloat };
enum class Act { kNone, kRelu, kGeluErf, kGeluTanh };

struct Int8Inputs {  // input indices; -1 when the op has none
  int a = 0, as = -1, azp = -1, b = 1, bs = -1, bzp = -1, ys = -1, yzp = -1, bias = -1;
};

Int8Inputs inputsOf(Int8Op op) {
  if (op == Int8Op::kMatMulInteger) return {0, -1, 2, 1, -1, 3, -1, -1, -1};
  if (op == Int8Op::kQLinearMatMul) return {0, 1, 2, 3, 4, 5, 6, 7, -1};
  if (op == Int8Op::kToFloat) return {0, 2, 4, 1, 3, 5, -1, -1, 6};
  return {0, 1, 2, 3, 4, 5, -1, -1, 6};
}

const ir::Tensor* inputTensor(const ir::Graph& g, const ir::Node& n, int k) {
  return k >= 0 && k < static_cast<int>(n.inputs.size()) && n.inputs[k] >= 0 ? &g.tensors[n.inputs[k]] : nullptr;
}

class Int8GemmKernel final : public Kernel {
 public:
  Int8GemmKernel(const ir::Graph& g, const ir::Node& n, Int8Op op, ThreadPool& pool) : pool_(pool), op_(op), in_(inputsOf(op)) {
    const ir::Tensor& a = g.tensors[n.inputs[in_.a]];
    const ir::Tensor& b = *inputTensor(g, n, in_.b);
    a_type_ = a.dtype;
    K_ = b.shape[0];
    N_ = b.shape[1];
    M_ = numElements(a.shape) / K_;
    std::vector<int32_t> bzp = {0};
    if (const ir::Tensor* z = inputTensor(g, n, in_.bzp)) {
      bzp.resize(static_cast<size_t>(numElements(z->shape)));
      for (size_t j = 0; j < bzp.size(); ++j) bzp[j] = loadInt8(z->constant->data, z->dtype, static_cast<int64_t>(j));
    }
    packInt8B(b.constant->data, b.dtype, K_, N_, bzp, &packed_);
    scratch_ = makeInt8GemmScratch(packed_, pool_.size(), M_);
    if (op_ != Int8Op::kMatMulInteger) sums_.resize(static_cast<size_t>(M_ * N_)), scale_.resize(static_cast<size_t>(N_));
    const std::string name = n.op->name;
    if (name == "MatMulIntegerToFloatRelu") act_ = Act::kRelu;
    if (name == "MatMulIntegerToFloatGelu") {
      act_ = n.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone ? Act::kGeluErf : Act::kGeluTanh;
    }
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const int32_t azp = in_.azp >= 0 && static_cast<int>(in.size()) > in_.azp && in[in_.azp].present()
                            ? loadInt8(in[in_.azp].data, in[in_.azp].dtype, 0) : 0;
    int32_t* sums = op_ == Int8Op::kMatMulInteger ? static_cast<int32_t*>(out[0].data) : sums_.data();
    int8Gemm(M_, in[in_.a].data, a_type_, azp, packed_, sums, pool_, scratch_);
    if (op_ == Int8Op::kMatMulInteger) return Status::Ok();
    // The rescale per column, as the reference kernel rounds it (float32 scales).
    const TensorView &as = in[in_.as], &bs = in[in_.bs];
    std::vector<double>& scale = scale_;
    for (int64_t j = 0; j < N_; ++j) {
      const float ab = static_cast<float>(static_cast<double>(as.as<float>()[0]) * bs.as<float>()[bs.size() == 1 ? 0 : j]);
      scale[j] = op_ == Int8Op::kQLinearMatMul ? static_cast<double>(static_cast<float>(ab / in[in_.ys].as<float>()[0]))
                                                : static_cast<double>(ab);
    }
    if (op_ == Int8Op::kToFloat) {
      toFloat(in, sums, static_cast<float*>(out[0].data));
      return Status::Ok();
    }
    if (op_ == Int8Op::kQuantBatchMatMul) {
      const int32_t* bias = in_.bias < static_cast<int>(in.size()) && in[in_.bias].present() ? in[in_.bias].as<int32_t>()
                                                                                             : nullptr;
      float* y = static_cast<float*>(out[0].data);
      pool_.parallelFor(M_, 1, std::max<int64_t>(1, 8192 / std::max<int64_t>(N_, 1)), [&](int, int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t j = 0; j < N_; ++j) {
            const int64_t i = r * N_ + j;
            y[i] = static_cast<float>(static_cast<int64_t>(sums[i]) + (bias ? bias[j] : 0)) * static_cast<float>(scale[j]);
          }
        }
      });
      return Status::Ok();
    }
    const MutableTensorView& y = out[0];
    const int64_t yzp = loadInt8(in[in_.yzp].data, in[in_.yzp].dtype, 0);
    const int64_t lo = y.dtype == DType::kInt8 ? -128 : 0, hi = y.dtype == DType::kInt8 ? 127 : 255;
    pool_.parallelFor(M_, 1, std::max<int64_t>(1, 8192 / std::max<int64_t>(N_, 1)), [&](int, int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        if (y.dtype == DType::kInt8) {
          requantizeRow(sums + row * N_, scale.data(), N_, yzp, lo, hi, static_cast<int8_t*>(y.data) + row * N_);
        } else {
          requantizeRow(sums + row * N_, scale.data(), N_, yzp, lo, hi, static_cast<uint8_t*>(y.data) + row * N_);
        }
      }
    });
    return Status::Ok();
  }
  std::string detail() const override {
    return std::string("own int8 GEMM (") + (packed_.dot ? "sdot" : !packed_.pairs.empty() ? "avx2 pairs" : "portable") +
           "), K=" + std::to_string(K_) +
           " N=" + std::to_string(N_);
  }

 private:
  // MatMulIntegerToFloat: float(acc) * float(as*bs[j]) + bias[j], then the activation
  // (GeLU through the vectorised erf/tanh), rows over the threads.
  void toFloat(const std::vector<TensorView>& in, const int32_t* sums, float* y) {
    const float* bias = in_.bias < static_cast<int>(in.size()) && in[in_.bias].present() ? in[in_.bias].as<float>() : nullptr;
    const int64_t N = N_;
    pool_.parallelFor(M_, 1, std::max<int64_t>(1, 8192 / std::max<int64_t>(N, 1)), [&](int, int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* row = y + r * N;
        for (int64_t j = 0; j < N; ++j) {
          const float v = static_cast<float>(sums[r * N + j]) * static_cast<float>(scale_[j]);
          row[j] = bias ? v + bias[j] : v;
        }
        applyActivation(row, N);
      }
    });
  }
  void applyActivation(float* row, int64_t n) const {
    if (act_ == Act::kRelu) for (int64_t j = 0; j < n; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
    if (act_ != Act::kGeluErf && act_ != Act::kGeluTanh) return;
    float t[256];
    for (int64_t j0 = 0; j0 < n; j0 += 256) {
      const int64_t m = std::min<int64_t>(256, n - j0);
      float* v = row + j0;
      if (act_ == Act::kGeluErf) {
        for (int64_t j = 0; j < m; ++j) t[j] = v[j] * 0.70710678f;
        vecMath(VecFn::kErf, t, t, m);
      } else {
        for (int64_t j = 0; j < m; ++j) t[j] = 0.7978845608f * (v[j] + 0.044715f * v[j] * v[j] * v[j]);
        vecMath(VecFn::kTanh, t, t, m);
      }
      for (int64_t j = 0; j < m; ++j) v[j] = 0.5f * v[j] * (1.0f + t[j]);
    }
  }

  ThreadPool& pool_;
  Act act_ = Act::kNone;
  Int8Op op_;
  Int8Inputs in_;
  DType a_type_ = DType::kUInt8;
  int64_t M_ = 0, K_ = 0, N_ = 0;
  PackedInt8B packed_;
  Int8GemmScratch scratch_;
  std::vector<int32_t> sums_;
  std::vector<double> scale_;  // the rescale per column, recomputed each launch (scales are inputs)
};

bool opOf(const ir::Node& n, Int8Op* op) {
  if (is(n, "MatMulInteger")) *op = Int8Op::kMatMulInteger;
  else if (is(n, "QLinearMatMul")) *op = Int8Op::kQLinearMatMul;
  else if (is(n, "QuantBatchMatMul")) *op = Int8Op::kQuantBatchMatMul;
  else if (is(n, "MatMulIntegerToFloat") || is(n, "MatMulIntegerToFloatRelu") || is(n, "MatMulIntegerToFloatGelu")) {
    *op = Int8Op::kToFloat;
  }
  else return false;
  return true;
}

bool oneElement(const ir::Tensor* t) { return !t || (isStatic(t->shape) && numElements(t->shape) == 1); }

}  // namespace

bool canRunInt8Gemm(const ir::Graph& g, const ir::Node& node) {
  Int8Op op;
  if (!opOf(node, &op)) return false;
  const Int8Inputs in = inputsOf(op);
  const ir::Tensor* a = inputTensor(g, node, in.a);
  const ir::Tensor* b = inputTensor(g, node, in.b);
  if (!a || !b || !b->isConstant() || b->shape.size() != 2 || !int8Like(a->dtype) || !int8Like(b->dtype)) return false;
  if (!isStatic(a->shape) || a->shape.size() < 2 || a->shape.back() != b->shape[0] || b->shape[0] > kMaxK) return false;
  if (!isStatic(g.tensors[node.outputs[0]].shape)) return false;
  // zero points: a's per tensor (a run-time scalar is fine), b's constant per tensor or column
  if (!oneElement(inputTensor(g, node, in.azp))) return false;
  if (const ir::Tensor* z = inputTensor(g, node, in.bzp)) {
    if (!z->isConstant() || !int8Like(z->dtype) || (numElements(z->shape) != 1 && numElements(z->shape) != b->shape[1])) {
      return false;
    }
  }
  for (int k : {in.as, in.ys, in.yzp}) {  // per tensor; float32 scales
    const ir::Tensor* t = inputTensor(g, node, k);
    if (k >= 0 && (!t || !oneElement(t))) return false;
  }
  for (int k : {in.as, in.bs, in.ys}) {
    const ir::Tensor* t = inputTensor(g, node, k);
    if (t && t->dtype != DType::kFloat32) return false;
  }
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileInt8Gemm(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  Int8Op op;
  if (!opOf(node, &op)) return makeError(StatusCode::kInternal, "int8 GEMM: ", node.op->name, " is not an int8 matmul");
  return std::unique_ptr<Kernel>(new Int8GemmKernel(g, node, op, pool));
}

}  // namespace gkrt::cpu
