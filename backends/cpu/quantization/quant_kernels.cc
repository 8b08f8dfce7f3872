#include "backends/cpu/quantization/quant_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/nn/pool_kernel.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

bool isInt8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
bool oneElement(const ir::Graph& g, int t) { return t < 0 || numElements(g.tensors[t].shape) == 1; }
int inputAt(const ir::Node& n, size_t k) { return k < n.inputs.size() ? n.inputs[k] : -1; }

float scaleOf(const TensorView& s) { return s.as<float>()[0]; }
int zeroPointOf(const std::vector<TensorView>& in, size_t k) {
  return k < in.size() && in[k].present() ? static_cast<int>(ops::loadIndex(in[k], 0)) : 0;
}

template <class T> void quantize(const float* __restrict x, float s, int zp, T* __restrict y, int64_t n) {
#ifdef __SSE2__
  const __m128 s4 = _mm_set1_ps(s);
  const auto vec = [&](int64_t i) { return _mm_div_ps(_mm_loadu_ps(x + i), s4); };
#else
  const auto vec = [](int64_t) { return 0; };
#endif
  saturateRow(vec, [&](int64_t i) { return x[i] / s; }, zp, y, n);
}
template <class T> void dequantize(const T* __restrict x, float s, int zp, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int>(x[i]) - zp) * s;
}
// QLinearAdd / QLinearMul over rows of y's last dim; each operand is read through its
// broadcast strides (`sa`, `sb` over y's dims), along a row contiguously or as one
// repeated value.
template <class T, bool kMul> struct QBinary {
  const T *a, *b;
  float ra, rb;
  int az, bz, cz;
  T* y;
  const Shape& dims;
  const std::vector<int64_t>&sa, &sb;
  // The float values in a stack buffer (vectorised by the compiler), then saturated.
  template <int kSa, int kSb> void row(const T* __restrict pa, const T* __restrict pb, T* __restrict py, int64_t len) const {
    constexpr int64_t kChunk = 256;
    alignas(16) float v[kChunk];
    for (int64_t c = 0; c < len; c += kChunk) {
      const int64_t m = std::min(kChunk, len - c);
      for (int64_t i = 0; i < m; ++i) {
        const float fa = static_cast<float>(static_cast<int>(pa[(c + i) * kSa]) - az);
        const float fb = static_cast<float>(static_cast<int>(pb[(c + i) * kSb]) - bz);
        v[i] = kMul ? fa * fb * ra : fa * ra + fb * rb;
      }
#ifdef __SSE2__
      const auto vec = [&](int64_t i) { return _mm_load_ps(v + i); };
#else
      const auto vec = [](int64_t) { return 0; };
#endif
      saturateRow(vec, [&](int64_t i) { return v[i]; }, cz, py + c, m);
    }
  }
  void run(int64_t begin_row, int64_t end_row) const {
    const size_t r = dims.size();
    const int64_t len = dims[r - 1];
    for (int64_t row_index = begin_row; row_index < end_row; ++row_index) {
      int64_t rem = row_index, oa = 0, ob = 0;
      for (size_t d = r - 1; d-- > 0;) {
        const int64_t i = rem % dims[d];
        rem /= dims[d];
        oa += i * sa[d];
        ob += i * sb[d];
      }
      const T* pa = a + oa;
      const T* pb = b + ob;
      T* py = y + row_index * len;
      const bool ca = sa[r - 1] != 0, cb = sb[r - 1] != 0;  // a repeated value: stride 0
      if (ca && cb) row<1, 1>(pa, pb, py, len);
      else if (ca) row<1, 0>(pa, pb, py, len);
      else if (cb) row<0, 1>(pa, pb, py, len);
      else row<0, 0>(pa, pb, py, len);
    }
  }
};

// DynamicQuantizeLinear's range: max(0, max x) and min(0, min x), NaN ignored (the
// reference's std::max / std::min order; maxps(v, m) keeps m where v is NaN).
void dynamicRange(const float* x, int64_t n, float* maxx, float* minx) {
  float hi = 0.0f, lo = 0.0f;
  int64_t i = 0;
#ifdef __SSE2__
  __m128 h0 = _mm_setzero_ps(), h1 = h0, l0 = h0, l1 = h0;
  for (; i + 8 <= n; i += 8) {
    const __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
    h0 = _mm_max_ps(a, h0);
    h1 = _mm_max_ps(b, h1);
    l0 = _mm_min_ps(a, l0);
    l1 = _mm_min_ps(b, l1);
  }
  alignas(16) float hv[4], lv[4];
  _mm_store_ps(hv, _mm_max_ps(h0, h1));
  _mm_store_ps(lv, _mm_min_ps(l0, l1));
  for (int k = 0; k < 4; ++k) {
    hi = std::max(hi, hv[k]);
    lo = std::min(lo, lv[k]);
  }
#endif
  for (; i < n; ++i) {
    hi = std::max(hi, x[i]);
    lo = std::min(lo, x[i]);
  }
  *maxx = hi;
  *minx = lo;
}

// y = sat(rint(x / scale) + zp) with NaN as 0 (not zp: the reference's rule for this op).
void dynamicQuantize(const float* __restrict x, float scale, int zp, uint8_t* __restrict y, int64_t n) {
#ifdef __SSE2__
  const __m128 s4 = _mm_set1_ps(scale), low = _mm_set1_ps(-kQuantClamp);
  const auto vec = [&](int64_t i) {
    const __m128 v = _mm_div_ps(_mm_loadu_ps(x + i), s4), ord = _mm_cmpord_ps(v, v);
    return _mm_or_ps(_mm_and_ps(ord, v), _mm_andnot_ps(ord, low));
  };
#else
  const auto vec = [](int64_t) { return 0; };
#endif
  saturateRow(vec, [&](int64_t i) { const float v = x[i] / scale; return v == v ? v : -kQuantClamp; }, zp, y, n);
}

#ifdef GKRT_X86_TIERS
// GCC 12's AVX-512 intrinsics start from `__m512 __Y = __Y;` (an undefined vector), which
// its -Wuninitialized reports once they are inlined here: a false alarm, silenced for these two.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// dynamicRange and dynamicQuantize 16 values a step, the same results: max/min with the
// running value second (a NaN keeps it), x / scale divided (not multiplied by 1 / scale),
// NaN as -kQuantClamp, rounding to nearest even, zp added, saturated to 0..255.
GKRT_TARGET_AVX512 void dynamicRangeAvx512(const float* x, int64_t n, float* maxx, float* minx) {
  __m512 h = _mm512_setzero_ps(), l = h;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    h = _mm512_max_ps(v, h);
    l = _mm512_min_ps(v, l);
  }
  float hi = _mm512_reduce_max_ps(h), lo = _mm512_reduce_min_ps(l);
  for (; i < n; ++i) {
    hi = std::max(hi, x[i]);
    lo = std::min(lo, x[i]);
  }
  *maxx = hi;
  *minx = lo;
}
GKRT_TARGET_AVX512 void dynamicQuantizeAvx512(const float* __restrict x, float scale, int zp, uint8_t* __restrict y, int64_t n) {
  const __m512 s = _mm512_set1_ps(scale), low = _mm512_set1_ps(-kQuantClamp), high = _mm512_set1_ps(kQuantClamp);
  const __m512i z = _mm512_set1_epi32(zp), zero = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), low, v);
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, low), high)), z);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtusepi32_epi8(_mm512_max_epi32(q, zero)));
  }
  for (; i < n; ++i) {
    const float v = x[i] / scale;
    y[i] = saturateQuant<uint8_t>(v == v ? v : -kQuantClamp, zp);
  }
}
#pragma GCC diagnostic pop
#endif

class QuantElementwiseKernel final : public Kernel {
 public:
  QuantElementwiseKernel(std::string op, ThreadPool& pool)
      : op_(std::move(op)), pool_(pool), range_(2 * static_cast<size_t>(pool.size())) {}
  // QLinearAdd / QLinearMul: y's dims and the operands' broadcast strides; operands that
  // are whole or one value run as one flat row.
  void setBroadcast(const Shape& a, const Shape& b, const Shape& y) {
    const int64_t n = numElements(y);
    const auto flat = [&](const Shape& s) { return numElements(s) == n || numElements(s) == 1; };
    if (flat(a) && flat(b)) {
      dims_ = {std::max<int64_t>(n, 1)};
      sa_ = {numElements(a) == 1 ? 0 : 1};
      sb_ = {numElements(b) == 1 ? 0 : 1};
      return;
    }
    dims_ = y.empty() ? Shape{1} : y;
    sa_ = y.empty() ? std::vector<int64_t>{0} : ops::broadcastStrides(a, y);
    sb_ = y.empty() ? std::vector<int64_t>{0} : ops::broadcastStrides(b, y);
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const MutableTensorView& y = out[0];
    const int64_t n = y.size();
    if (op_ == "DynamicQuantizeLinear") return dynamicQuantizeLinear(in[0], out);
    const bool s8 = (op_ == "QuantizeLinear" ? y.dtype : in[0].dtype) == DType::kInt8;
    if ((op_ == "QuantizeLinear" || op_ == "DequantizeLinear") && (int8_nhwc_ || float_block_ > 0)) {
      const float s = scaleOf(in[1]);
      const int zp = zeroPointOf(in, 2);
      if (op_ == "QuantizeLinear" && s8) convertLaidOut<int8_t, true>(in[0].data, y.data, s, zp);
      if (op_ == "QuantizeLinear" && !s8) convertLaidOut<uint8_t, true>(in[0].data, y.data, s, zp);
      if (op_ == "DequantizeLinear" && s8) convertLaidOut<int8_t, false>(in[0].data, y.data, s, zp);
      if (op_ == "DequantizeLinear" && !s8) convertLaidOut<uint8_t, false>(in[0].data, y.data, s, zp);
      return Status::Ok();
    }
    if (op_ == "QuantizeLinear" || op_ == "DequantizeLinear") {
      const float s = scaleOf(in[1]);
      const int zp = zeroPointOf(in, 2);
      const bool q = op_ == "QuantizeLinear";
      pool_.parallelFor(n, 64, kQuantMinPerThread, [&](int, int64_t b, int64_t e) {
        if (q && s8) quantize(in[0].as<float>() + b, s, zp, y.as<int8_t>() + b, e - b);
        if (q && !s8) quantize(in[0].as<float>() + b, s, zp, y.as<uint8_t>() + b, e - b);
        if (!q && s8) dequantize(in[0].as<int8_t>() + b, s, zp, y.as<float>() + b, e - b);
        if (!q && !s8) dequantize(in[0].as<uint8_t>() + b, s, zp, y.as<float>() + b, e - b);
      });
      return Status::Ok();
    }
    // as the reference: ratios in float32
    const bool mul = op_ == "QLinearMul";
    const float as = scaleOf(in[1]), bs = scaleOf(in[4]), cs = scaleOf(in[6]);
    const float ra = mul ? as * bs / cs : as / cs, rb = bs / cs;
    const int az = zeroPointOf(in, 2), bz = zeroPointOf(in, 5), cz = zeroPointOf(in, 7);
    const auto run = [&](auto op) {
      const int64_t len = dims_.back(), rows = n / len;
      pool_.parallelFor(rows, 1, std::max<int64_t>(1, kQuantMinPerThread / len), [&](int, int64_t b, int64_t e) { op.run(b, e); });
    };
    if (s8 && mul) run(QBinary<int8_t, true>{in[0].as<int8_t>(), in[3].as<int8_t>(), ra, rb, az, bz, cz, y.as<int8_t>(), dims_, sa_, sb_});
    if (s8 && !mul) run(QBinary<int8_t, false>{in[0].as<int8_t>(), in[3].as<int8_t>(), ra, rb, az, bz, cz, y.as<int8_t>(), dims_, sa_, sb_});
    if (!s8 && mul) run(QBinary<uint8_t, true>{in[0].as<uint8_t>(), in[3].as<uint8_t>(), ra, rb, az, bz, cz, y.as<uint8_t>(), dims_, sa_, sb_});
    if (!s8 && !mul) run(QBinary<uint8_t, false>{in[0].as<uint8_t>(), in[3].as<uint8_t>(), ra, rb, az, bz, cz, y.as<uint8_t>(), dims_, sa_, sb_});
    return Status::Ok();
  }
  std::string detail() const override {
    if (!int8_nhwc_ && float_block_ == 0) return "own int8 loop";
    const std::string f = float_block_ > 0 ? "nChw" + std::to_string(float_block_) + "c" : "nchw";
    const std::string i = int8_nhwc_ ? "nhwc" : "nchw";
    return "own int8 loop, " + (op_ == "QuantizeLinear" ? f + " to " + i : i + " to " + f);
  }
  // Q/DQ on a 4-D [N, C, H, W] tensor with these layouts.
  void setLayouts(const Shape& shape, bool int8_nhwc, int float_block) {
    dims_ = shape;
    int8_nhwc_ = int8_nhwc;
    float_block_ = float_block;
  }

 private:
  // One (image, group of B channels) a task, B the float block (16 where the float side
  // is plain). In every layout the group is affine in (channel c, pixel p): offset =
  // base + c * cs + p * ps; NHWC and nChw{B}c both have cs = 1, so between them each
  // pixel moves one contiguous run of B values.
  template <class T, bool kQuantize> void convertLaidOut(const void* src, void* dst, float s, int zp) {
    const int64_t N = dims_[0], C = dims_[1], HW = dims_[2] * dims_[3];
    const int64_t B = float_block_ > 0 ? float_block_ : 16, groups = (C + B - 1) / B;
    pool_.parallelFor(N * groups, 1, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / groups, g = task % groups, c0 = g * B, cn = std::min(B, C - c0);
        // int8 side and float side: base offset, channel stride, pixel stride
        const int64_t ib = int8_nhwc_ ? n * HW * C + c0 : (n * C + c0) * HW, ics = int8_nhwc_ ? 1 : HW,
                      ips = int8_nhwc_ ? C : 1;
        const int64_t fb = float_block_ > 0 ? (n * groups + g) * HW * B : (n * C + c0) * HW,
                      fcs = float_block_ > 0 ? 1 : HW, fps = float_block_ > 0 ? B : 1;
        const T* qi = static_cast<const T*>(src) + ib;  // DQ's input
        T* qo = static_cast<T*>(dst) + ib;              // Q's output
        const float* fi = static_cast<const float*>(src) + fb;
        float* fo = static_cast<float*>(dst) + fb;
        if (ics == 1 && fcs == 1 && cn == B) {  // NHWC <-> nChw{B}c: B contiguous values a pixel
          if (B == 16) fastBlock<T, kQuantize, 16>(qi, qo, fi, fo, HW, ips, s, zp);
          else if (B == 8) fastBlock<T, kQuantize, 8>(qi, qo, fi, fo, HW, ips, s, zp);
          if (B == 16 || B == 8) continue;
        }
        alignas(16) float row[16];
        T q[16];
        for (int64_t p = 0; p < HW; ++p) {
          if constexpr (kQuantize) {
            for (int64_t c = 0; c < cn; ++c) row[c] = fi[c * fcs + p * fps];
            quantize(row, s, zp, q, cn);
            for (int64_t c = 0; c < cn; ++c) qo[c * ics + p * ips] = q[c];
          } else {
            for (int64_t c = 0; c < cn; ++c) q[c] = qi[c * ics + p * ips];
            dequantize(q, s, zp, row, cn);
            for (int64_t c = 0; c < cn; ++c) fo[c * fcs + p * fps] = row[c];
          }
        }
      }
    });
  }

  // One channel group between NHWC (pixel stride `ips`) and nChw{B}c, B a constant.
  template <class T, bool kQuantize, int B>
  static void fastBlock(const T* qi, T* qo, const float* fi, float* fo, int64_t HW, int64_t ips, float s, int zp) {
    if constexpr (kQuantize) {  // the group's run of floats is contiguous: quantized in long
      constexpr int64_t kChunk = 256;  // stretches (one call per B values cost 4x), then B bytes a pixel
      alignas(16) T buf[kChunk * B];
      for (int64_t p0 = 0; p0 < HW; p0 += kChunk) {
        const int64_t np = std::min(kChunk, HW - p0);
        quantize(fi + p0 * B, s, zp, buf, np * B);
        for (int64_t p = 0; p < np; ++p) std::memcpy(qo + (p0 + p) * ips, buf + p * B, B * sizeof(T));
      }
    } else {
      for (int64_t p = 0; p < HW; ++p) {
        const T* a = qi + p * ips;
        float* o = fo + p * B;
        for (int c = 0; c < B; ++c) o[c] = static_cast<float>(static_cast<int>(a[c]) - zp) * s;
      }
    }
  }

  // The reference's formulas for scale and zero point, on the range from the threads.
  Status dynamicQuantizeLinear(const TensorView& x, const std::vector<MutableTensorView>& out) {
    const int64_t n = x.size();
    const int threads = pool_.size();
    std::fill(range_.begin(), range_.end(), 0.0f);
    pool_.parallelFor(n, 64, kQuantMinPerThread, [&](int t, int64_t b, int64_t e) {
      float hi, lo;
#ifdef GKRT_X86_TIERS
      if (avx512_) dynamicRangeAvx512(x.as<float>() + b, e - b, &hi, &lo);
      else
#endif
        dynamicRange(x.as<float>() + b, e - b, &hi, &lo);
      range_[2 * t] = std::max(range_[2 * t], hi);
      range_[2 * t + 1] = std::min(range_[2 * t + 1], lo);
    });
    float maxx = 0.0f, minx = 0.0f;
    for (int t = 0; t < threads; ++t) {
      maxx = std::max(maxx, range_[2 * t]);
      minx = std::min(minx, range_[2 * t + 1]);
    }
    const float scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
    const float initial_zp = 0.0f - minx / scale;
    const float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
    pool_.parallelFor(n, 64, kQuantMinPerThread, [&](int, int64_t b, int64_t e) {
#ifdef GKRT_X86_TIERS
      if (avx512_) return dynamicQuantizeAvx512(x.as<float>() + b, scale, static_cast<int>(zp), out[0].as<uint8_t>() + b, e - b);
#endif
      dynamicQuantize(x.as<float>() + b, scale, static_cast<int>(zp), out[0].as<uint8_t>() + b, e - b);
    });
    out[1].as<float>()[0] = scale;
    out[2].as<uint8_t>()[0] = static_cast<uint8_t>(zp);
    return Status::Ok();
  }

  std::string op_;
  ThreadPool& pool_;
  std::vector<float> range_;  // per thread: max, min
  const bool avx512_ = cpuTier().has(CpuIsa::kAvx512);
  Shape dims_;
  std::vector<int64_t> sa_, sb_;
  bool int8_nhwc_ = false;
  int float_block_ = 0;
};

}  // namespace

bool canRunQuantElementwise(const ir::Graph& g, const ir::Node& node) {
  if (node.subgraph || !node.op) return false;
  const std::string op = node.op->name;
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  if (op == "QuantizeLinear" || op == "DequantizeLinear") {
    const auto& a = node.attrs.get<QuantAttrs>();
    const ir::Tensor& scale = g.tensors[node.inputs[1]];
    const bool types = op == "QuantizeLinear" ? x.dtype == DType::kFloat32 && isInt8(y.dtype) && a.precision == DType::kFloat32
                                              : isInt8(x.dtype) && y.dtype == DType::kFloat32;
    return types && scale.dtype == DType::kFloat32 && oneElement(g, node.inputs[1]) && oneElement(g, inputAt(node, 2));
  }
  if (op == "DynamicQuantizeLinear") {
    return x.dtype == DType::kFloat32 && node.outputs.size() == 3 && g.tensors[node.outputs[1]].dtype == DType::kFloat32;
  }
  if (op == "QLinearAdd" || op == "QLinearMul") {
    const ir::Tensor& b = g.tensors[node.inputs[3]];
    for (size_t k : {1, 4, 6}) if (g.tensors[node.inputs[k]].dtype != DType::kFloat32) return false;
    return isInt8(x.dtype) && broadcastsTo(x.shape, y.shape) && broadcastsTo(b.shape, y.shape) && isStatic(y.shape);
  }
  return false;
}

bool quantTakesLayouts(const ir::Graph& g, const ir::Node& node) {
  if (!canRunQuantElementwise(g, node)) return false;
  const std::string op = node.op->name;
  const Shape& x = g.tensors[node.inputs[0]].shape;
  return (op == "QuantizeLinear" || op == "DequantizeLinear") && x.size() == 4 && isStatic(x) && node.outputs.size() == 1;
}

StatusOr<std::unique_ptr<Kernel>> compileQuantElementwise(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                          bool int8_nhwc, int float_block) {
  auto k = std::make_unique<QuantElementwiseKernel>(node.op->name, pool);
  const std::string op = node.op->name;
  if (int8_nhwc || float_block > 0) {
    if (!quantTakesLayouts(g, node)) return makeError(StatusCode::kInternal, "cpu: ", node.name, " takes plain layouts only");
    k->setLayouts(g.tensors[node.inputs[0]].shape, int8_nhwc, float_block);
  }
  if (op == "QLinearAdd" || op == "QLinearMul") {
    k->setBroadcast(g.tensors[node.inputs[0]].shape, g.tensors[node.inputs[3]].shape, g.tensors[node.outputs[0]].shape);
  }
  return std::unique_ptr<Kernel>(std::move(k));
}

namespace {
#ifdef GKRT_X86_TIERS
// 64 bytes a step: the table's halves (bit 7 of the index) each two 64-byte registers
// that vpermi2b indexes by the low 7 bits; the byte's sign bit picks the half.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lookupVbmi(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}
#endif

class ByteLookupKernel final : public Kernel {
 public:
  ByteLookupKernel(const uint8_t* table, ThreadPool& pool) : pool_(pool) { std::copy(table, table + 256, table_); }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const uint8_t* x = static_cast<const uint8_t*>(in[1].data);  // int8 bytes index as 0..255: -1 is entry 255
    uint8_t* y = static_cast<uint8_t*>(out[0].data);
    pool_.parallelFor(out[0].size(), 64, kQuantMinPerThread, [&](int, int64_t b, int64_t e) {
#ifdef GKRT_X86_TIERS
      if (vbmi_) return lookupVbmi(table_, x + b, y + b, e - b);
#endif
      for (int64_t i = b; i < e; ++i) y[i] = table_[x[i]];
    });
    return Status::Ok();
  }
  std::string detail() const override { return vbmi_ ? "own 256-entry int8 lookup, avx512_vbmi" : "own 256-entry int8 lookup"; }

 private:
  uint8_t table_[256];
  ThreadPool& pool_;
  bool vbmi_ = cpuTier().avx512_vbmi;
};
}  // namespace

bool canRunByteLookup(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || std::string(node.op->name) != "Gather" || node.subgraph || node.inputs.size() != 2) return false;
  if (node.inputs[0] < 0 || node.inputs[1] < 0 || node.attrs.get<AxisAttrs>().axis != 0) return false;
  const ir::Tensor &table = g.tensors[node.inputs[0]], &x = g.tensors[node.inputs[1]];
  return table.isConstant() && table.shape == Shape{256} && dtypeSize(table.dtype) == 1 && isInt8(x.dtype) &&
         isStatic(x.shape);
}

StatusOr<std::unique_ptr<Kernel>> compileByteLookup(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  if (!canRunByteLookup(g, node)) return makeError(StatusCode::kInternal, "cpu: ", node.name, " is not a byte lookup");
  return std::unique_ptr<Kernel>(new ByteLookupKernel(g.tensors[node.inputs[0]].constant->data, pool));
}

bool canRunBytePool(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || std::string(node.op->name) != "MaxPool" || node.subgraph || node.inputs.size() != 1 ||
      node.outputs.size() != 1 || node.inputs[0] < 0 || node.outputs[0] < 0) {
    return false;
  }
  const ir::Tensor &x = g.tensors[node.inputs[0]], &y = g.tensors[node.outputs[0]];
  if (!isInt8(x.dtype) || y.dtype != x.dtype || x.shape.size() != 4 || y.shape.size() != 4 || !isStatic(x.shape) ||
      !isStatic(y.shape) || y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) {
    return false;
  }
  const auto& a = node.attrs.get<PoolAttrs>();
  if (a.kernel.size() != 2 || a.strides.size() != 2 || a.pads.size() != 4) return false;
  for (int64_t d : a.dilations) if (d != 1) return false;
  for (int k = 0; k < 2; ++k) {  // every window meets the input
    if (a.kernel[k] < 1 || a.strides[k] < 1 || a.pads[k] < 0 || a.pads[k] >= a.kernel[k]) return false;
    if ((y.shape[2 + k] - 1) * a.strides[k] - a.pads[k] >= x.shape[2 + k]) return false;
  }
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileBytePool(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, bool nhwc) {
  if (!canRunBytePool(g, node)) return makeError(StatusCode::kInternal, "cpu: ", node.name, " is not an int8 max pool");
  return makePoolKernel(node, g.tensors[node.inputs[0]].dtype, true, nhwc, pool);
}

}  // namespace gkrt::cpu
