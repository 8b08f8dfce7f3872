#include "backends/cpu/quantization/onednn_int8.h"

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/cpu_tier.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

#ifdef GKRT_HAVE_DNNL
#include <dnnl.hpp>

#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/cpu/onednn/onednn_post_ops.h"
#include "backends/cpu/quantization/conv_zero_points.h"
#include "backends/cpu/quantization/quant_kernels.h"
#endif

namespace gkrt::cpu {

#ifdef GKRT_HAVE_DNNL
namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

// Where the operands of each op are (ONNX input order).
struct Int8Op {
  bool conv = false, requant = false;
  int x = 0, w = 1, xzp = 2, wzp = 3, xs = -1, ws = -1, ys = -1, yzp = -1, bias = -1;
  // MatMulIntegerToFloat[Relu|Gelu]: float32 y = acc * float(xs*ws[j]) + bias[j], then
  // the activation; the scales are run-time inputs (oneDNN's run-time output scales).
  bool to_float = false;
  dnnl::algorithm act = dnnl::algorithm::undef;
  // QuantBatchMatMul: float32 y = (acc + B[j]) * float(xs*ws[j]) with an int32 bias B, run
  // as acc * s[j] + B[j] * s[j] (the second term made at launch: the scales are inputs).
  bool int_bias = false;
};
bool int8Op(const ir::Node& n, Int8Op* o) {
  const std::string op = n.op->name;
  if (op == "QLinearConv" || op == "QLinearMatMul") {
    *o = {op == "QLinearConv", true, 0, 3, 2, 5, 1, 4, 6, 7, op == "QLinearConv" ? 8 : -1};
    return true;
  }
  if (op == "ConvInteger" || op == "MatMulInteger") {
    *o = {op == "ConvInteger", false};
    return true;
  }
  if (op == "QuantBatchMatMul") {  // (a, as, azp, b, bs, bzp, bias_int32?)
    *o = {false, false, 0, 3, 2, 5, 1, 4, -1, -1, 6, true};
    o->int_bias = true;
    return true;
  }
  if (op.rfind("MatMulIntegerToFloat", 0) == 0) {
    *o = {false, false, 0, 1, 4, 5, 2, 3, -1, -1, 6, true};
    if (op == "MatMulIntegerToFloatRelu") o->act = dnnl::algorithm::eltwise_relu;
    if (op == "MatMulIntegerToFloatGelu") {
      o->act = n.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone ? dnnl::algorithm::eltwise_gelu_erf
                                                                          : dnnl::algorithm::eltwise_gelu_tanh;
    }
    return true;
  }
  return false;
}

int input(const ir::Node& n, int k) { return k >= 0 && k < static_cast<int>(n.inputs.size()) ? n.inputs[k] : -1; }
const ir::Tensor* tensorAt(const ir::Graph& g, const ir::Node& n, int k) {
  const int t = input(n, k);
  return t >= 0 ? &g.tensors[t] : nullptr;
}
dt dnnlType(DType t) {
  return t == DType::kInt8 ? dt::s8 : t == DType::kUInt8 ? dt::u8 : t == DType::kFloat32 ? dt::f32 : dt::s32;
}

// Element i (or 0 for a one-element tensor) of a constant, as a double.
double constAt(const ir::Tensor& t, int64_t i) {
  const int64_t n = numElements(t.shape);
  return ops::loadF(t.constant->data, t.dtype, n == 1 ? 0 : i);
}
bool allZero(const ir::Tensor* t) {
  if (!t) return true;
  if (!t->isConstant()) return false;
  for (int64_t i = 0; i < numElements(t->shape); ++i) if (constAt(*t, i) != 0.0) return false;
  return true;
}

// oneDNN's u8 x s8 kernels on CPUs without VNNI (AVX2, AVX-512 before Cascade Lake) add
// pairs of products in int16 with saturation (vpmaddubsw): 255 * 127 * 2 > 32767, so a
// layer of large activations and weights comes out wrong (onnxruntime's MLAS does the
// same there). gkrt uses them only where the CPU has VNNI (products summed straight into
// int32), or when GKRT_CPU_INT8=saturating asks for onnxruntime's behaviour; elsewhere
// the integer operands run as float32 in oneDNN (exact while |sum| < 2^24; past that,
// float32's rounding, 6e-8 relative) and gkrt requantizes.
bool int8WithoutSaturation() { return cpuTier().has(CpuIsa::kAvx512Vnni) || cpuTier().avx_vnni; }
bool useNativeInt8(Int8Path path) {
  static const bool exact = int8WithoutSaturation();
  return path == Int8Path::kSaturating || (path == Int8Path::kAuto && exact);
}

// A matrix of shape s read as `rank` dims (leading ones), row-major.
dnnl::memory::desc matDesc(const Shape& s, size_t rank, dt type) {
  dims d(rank, 1);
  for (size_t k = 0; k < s.size(); ++k) d[rank - s.size() + k] = s[k];
  dims strides(rank, 1);
  for (size_t k = rank - 1; k-- > 0;) strides[k] = strides[k + 1] * d[k + 1];
  return dnnl::memory::desc(d, type, strides);
}

template <class T> void toFloat(const T* __restrict x, float z, float* __restrict f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(x[i]) - z;
}
template <class T> void toFloatColumns(const T* __restrict x, const float* __restrict z, float* __restrict f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(x[i]) - z[i];
}

class OneDnnInt8Kernel final : public Kernel {
 public:
  OneDnnInt8Kernel(const ir::Graph& g, const ir::Node& n, const Int8Op& op, Int8Path path, ThreadPool& pool, bool x_nhwc,
                   bool y_nhwc)
      : op_(op), stream_(oneDnnEngine()), pool_(pool), x_nhwc_(x_nhwc), y_nhwc_(y_nhwc) {
    const ir::Tensor& x = *tensorAt(g, n, op.x);
    const ir::Tensor& w = *tensorAt(g, n, op.w);
    const ir::Tensor& y = g.tensors[n.outputs[0]];
    const ir::Tensor* xzp = tensorAt(g, n, op.xzp);
    const ir::Tensor* wzp = tensorAt(g, n, op.wzp);
    // u8 matmul weights (attention's activation x activation matmuls) run as s8: w ^ 0x80
    // = w - 128, with the weight zero point moved by -128 (oneDNN takes one on a matmul).
    const bool shiftable = !op.conv && w.dtype == DType::kUInt8 && (!wzp || (wzp->isConstant() && numElements(wzp->shape) == 1));
    // ConvInteger with u8 weights or weight zero points (oneDNN's convolutions take none):
    // the weights run as s8 and the zero point's term is taken off after (conv_zero_points.h).
    const bool conv_fold = op.conv && !op.requant && w.isConstant() && (!wzp || wzp->isConstant()) &&
                           (w.dtype == DType::kUInt8 || !allZero(wzp));
    native_ = useNativeInt8(path) && (w.dtype == DType::kInt8 || shiftable || conv_fold);  // else the float path
    w_shift_ = native_ && w.dtype == DType::kUInt8;
    if (native_ && conv_fold) {
      wz_.resize(w.shape[0]);
      for (int64_t o = 0; o < w.shape[0]; ++o) {
        wz_[o] = (wzp ? static_cast<int32_t>(constAt(*wzp, numElements(wzp->shape) == 1 ? 0 : o)) : 0) - (w_shift_ ? 128 : 0);
      }
    }
    channels_ = op.conv ? w.shape[0] : w.shape.back();
    inner_ = op.conv ? y.shape[2] * y.shape[3] : 1;
    y_dtype_ = y.dtype;
    if (op.requant) {  // y = sat(rint(acc * xs*ws[o]/ys) + yzp)
      const ir::Tensor &xs = *tensorAt(g, n, op.xs), &ws = *tensorAt(g, n, op.ws), &ys = *tensorAt(g, n, op.ys);
      const int64_t nw = numElements(ws.shape);
      scales_.resize(nw);
      for (int64_t o = 0; o < nw; ++o) {  // in float32 step by step, as the reference kernels
        scales_[o] = static_cast<float>(constAt(xs, 0)) * static_cast<float>(constAt(ws, o)) / static_cast<float>(constAt(ys, 0));
      }
      yzp_ = static_cast<int32_t>(constAt(*tensorAt(g, n, op.yzp), 0));
      // oneDNN adds the output zero point before it rounds (rint(v + z)); ONNX rounds first
      // (rint(v) + z). With z odd the two differ at exact halves (round half to even), so
      // then oneDNN writes float32 and gkrt's loop requantizes, as the float path does.
      f32_out_ = native_ && yzp_ % 2 != 0;
    }
    if (xzp) {
      runtime_xzp_ = !xzp->isConstant();
      if (!runtime_xzp_) xzp_value_ = static_cast<int32_t>(constAt(*xzp, 0));
    }
    dnnl::primitive_attr attr;
    if (native_) nativeAttr(op, y, wzp, &attr);
    if (op.to_float) toFloatAttr(g, n, y, &attr);
    const dt xt = native_ ? dnnlType(x.dtype) : dt::f32, yt = native_ && !f32_out_ ? dnnlType(y.dtype) : dt::f32;
    if (!native_) x_float_.resize(numElements(x.shape));
    if ((!native_ || f32_out_) && !op.to_float) y_float_.resize(numElements(y.shape));  // to_float: oneDNN writes y itself
    serial_ = !op.conv && numElements(y.shape) * x.shape.back() < kSerialMatMulMacs;
    std::optional<OneThreadScope> serial;  // made for the thread count it runs on
    if (serial_) serial.emplace();
    if (op.conv) buildConv(g, n, x, w, y, wzp, xt, yt, attr);
    else buildMatMul(x, w, y, wzp, xt, yt, attr);
    if (native_ && runtime_xzp_) zp_mem_ = dnnl::memory({{1}, dt::s32, tag::x}, oneDnnEngine(), &xzp_value_);
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    if (runtime_xzp_) xzp_value_ = static_cast<int32_t>(ops::loadIndex(in[op_.xzp], 0));
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_WEIGHTS, w_mem_}};
    if (op_.to_float) {  // float(xs * ws[j]), rounded as the unfused Mul rounds it
      const double xs = ops::loadF(in[op_.xs].data, in[op_.xs].dtype, 0);
      const TensorView& ws = in[op_.ws];
      for (size_t j = 0; j < scales_.size(); ++j) scales_[j] = static_cast<float>(xs * ops::loadF(ws.data, ws.dtype, j));
      for (size_t j = 0; j < int_bias_f_.size(); ++j) {
        int_bias_f_[j] = static_cast<float>(int_bias_[j]) * scales_[scales_.size() == 1 ? 0 : j];
      }
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = scales_mem_;
      if (bias_mem_) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] = bias_mem_;
      y_mem_.set_data_handle(out[0].data);
    }
    if (native_) {
      x_mem_.set_data_handle(const_cast<void*>(in[op_.x].data));
      if (!f32_out_) y_mem_.set_data_handle(out[0].data);
      if (runtime_xzp_) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zp_mem_;
    } else {  // x - x_zp as float32, one pass over the threads
      const TensorView& x = in[op_.x];
      const float z = static_cast<float>(xzp_value_);
      float* f = x_float_.data();
      pool_.parallelFor(static_cast<int64_t>(x_float_.size()), 64, kQuantMinPerThread, [&](int, int64_t b, int64_t e) {
        if (x.dtype == DType::kUInt8) toFloat(x.as<uint8_t>() + b, z, f + b, e - b);
        else toFloat(x.as<int8_t>() + b, z, f + b, e - b);
      });
    }
    if (!w_const_ && native_ && !w_shift_) w_mem_.set_data_handle(const_cast<void*>(in[op_.w].data));
    if (!w_const_ && w_shift_) {  // u8 -> s8, w - 128
      const uint8_t* w = in[op_.w].as<uint8_t>();
      uint8_t* s = w_s8_.data();
      pool_.parallelFor(static_cast<int64_t>(w_s8_.size()), 64, kQuantMinPerThread, [&](int, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) s[i] = w[i] ^ 0x80;
      });
    }
    if (!w_const_ && !native_) {  // w - w_zp[column] as float32, rows of `channels_`
      const TensorView& w = in[op_.w];
      const int64_t rows = static_cast<int64_t>(w_float_.size()) / channels_;
      pool_.parallelFor(rows, 1, std::max<int64_t>(1, kQuantMinPerThread / channels_), [&](int, int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          if (w_signed_) toFloatColumns(w.as<int8_t>() + r * channels_, w_zp_.data(), w_float_.data() + r * channels_, channels_);
          else toFloatColumns(w.as<uint8_t>() + r * channels_, w_zp_.data(), w_float_.data() + r * channels_, channels_);
        }
      });
    }
    if (b_mem_) args[DNNL_ARG_BIAS] = b_mem_;
    if (x_reorder_) {
      x_reorder_.execute(stream_, x_mem_, x_prim_);
      args[DNNL_ARG_SRC] = x_prim_;
    } else {
      args[DNNL_ARG_SRC] = x_mem_;
    }
    args[DNNL_ARG_DST] = y_reorder_ || y_block_ ? y_prim_ : y_mem_;
    {
      std::optional<OneThreadScope> serial;
      if (serial_) serial.emplace();
      prim_.execute(stream_, args);
      if (y_reorder_) y_reorder_.execute(stream_, y_prim_, y_mem_);
      stream_.wait();
    }
    if (fold_) fold_->apply(in[op_.x], xzp_value_, out[0], pool_);
    if (op_.to_float) return Status::Ok();
    if ((!native_ || f32_out_) && y_block_) requantizeBlocked(static_cast<const float*>(y_prim_.get_data_handle()), out[0]);
    else if (!native_ || f32_out_) requantize(y_float_.data(), out[0]);
    return Status::Ok();
  }
  std::string detail() const override {
    return std::string(native_ ? "oneDNN int8 " : "oneDNN f32 on int8 values ") + impl_ + (x_nhwc_ || y_nhwc_ ? ", nhwc" : "") +
           (wz_.empty() ? "" : w_shift_ ? ", u8 weights as s8, zero point folded" : ", weight zero point folded") +
           (x_reorder_ || y_reorder_ ? ", layout reorders" : "") + (op_.to_float ? ", float32 out with bias/activation post-ops" : "") +
           (f32_out_ ? ", float32 out requantized by gkrt (odd output zero point)" : "") + (y_block_ ? ", requantized from nChw" + std::to_string(y_block_) + "c" : "");
  }
  int reorders() const override { return (x_reorder_ ? 1 : 0) + (y_reorder_ ? 1 : 0); }

 private:
  // MatMulIntegerToFloat, QuantBatchMatMul: the scales float(xs*ws[j]) as a binary multiply post-op (one
  // value, or one per column, written at launch: oneDNN 2.6 has only its slower gemm:jit
  // for run-time output scales, its brgemm takes binary post-ops), the bias as a binary
  // add, the activation as an eltwise post-op.
  void toFloatAttr(const ir::Graph& g, const ir::Node& n, const ir::Tensor& y, dnnl::primitive_attr* attr) {
    const ir::Tensor& ws = *tensorAt(g, n, op_.ws);
    const int64_t count = numElements(ws.shape);
    scales_.assign(count, 1.0f);
    const auto s_md = binaryDesc(count == 1 ? Shape{1} : Shape{count}, y.shape.size());
    scales_mem_ = dnnl::memory(s_md, oneDnnEngine(), scales_.data());
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_mul, s_md);
    if (const ir::Tensor* bias = tensorAt(g, n, op_.bias)) {
      if (!bias->isConstant()) throw std::runtime_error(std::string(n.op->name) + " on oneDNN takes a constant bias");
      if (op_.int_bias && (bias->dtype != DType::kInt32 || numElements(bias->shape) != y.shape.back())) {
        throw std::runtime_error("QuantBatchMatMul on oneDNN takes an int32 bias per column");
      }
      const auto md = binaryDesc(op_.int_bias ? Shape{y.shape.back()} : bias->shape, y.shape.size());
      po.append_binary(dnnl::algorithm::binary_add, md);
      if (op_.int_bias) {
        int_bias_ = reinterpret_cast<const int32_t*>(bias->constant->data);
        int_bias_f_.assign(static_cast<size_t>(y.shape.back()), 0.0f);
        bias_mem_ = dnnl::memory(md, oneDnnEngine(), int_bias_f_.data());
      } else {
        bias_mem_ = dnnl::memory(md, oneDnnEngine(), const_cast<uint8_t*>(bias->constant->data));
      }
    }
    if (op_.act != dnnl::algorithm::undef) po.append_eltwise(1.0f, op_.act, 0.0f, 0.0f);
    attr->set_post_ops(po);
  }

  void nativeAttr(const Int8Op& op, const ir::Tensor& y, const ir::Tensor* wzp, dnnl::primitive_attr* attr) {
    if (op.requant && !f32_out_) {
      const int mask = scales_.size() == 1 ? 0 : op.conv ? 1 << 1 : 1 << (y.shape.size() - 1);
      attr->set_output_scales(mask, scales_);
      if (yzp_ != 0) attr->set_zero_points(DNNL_ARG_DST, 0, {yzp_});
    }
    if (runtime_xzp_) attr->set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    else if (xzp_value_ != 0) attr->set_zero_points(DNNL_ARG_SRC, 0, {xzp_value_});
    if ((!allZero(wzp) || w_shift_) && wz_.empty()) {
      if (op.conv || (wzp && (!wzp->isConstant() || numElements(wzp->shape) != 1))) {
        throw std::runtime_error("oneDNN int8: weight zero points other than one constant on a matmul");
      }
      const int32_t wz = (wzp ? static_cast<int32_t>(constAt(*wzp, 0)) : 0) - (w_shift_ ? 128 : 0);
      if (wz != 0) attr->set_zero_points(DNNL_ARG_WEIGHTS, 0, {wz});
    }
  }

  // Float path: y = sat(rint(acc * scale[o]) + yzp), or the int32 sum; acc plain
  // (conv: N x C x inner; matmul: rows x C), split over the threads by rows.
  void requantize(const float* acc, const MutableTensorView& y) {
    const int64_t n = static_cast<int64_t>(y_float_.size());
    if (!op_.requant) {
      pool_.parallelFor(n, 64, kQuantMinPerThread, [&](int, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y.as<int32_t>()[i] = static_cast<int32_t>(std::lrint(acc[i]));
      });
      return;
    }
    const int64_t row = op_.conv && !y_nhwc_ ? inner_ : channels_, rows = n / row;
    pool_.parallelFor(rows, 1, std::max<int64_t>(1, kQuantMinPerThread / row), [&](int, int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float* a = acc + r * row;
        if (y_dtype_ == DType::kInt8) requantRow(a, r, row, y.as<int8_t>() + r * row);
        else requantRow(a, r, row, y.as<uint8_t>() + r * row);
      }
    });
  }
  template <class T> void requantRow(const float* __restrict a, int64_t r, int64_t len, T* __restrict y) const {
    if (scales_.size() == 1 || (op_.conv && !y_nhwc_)) {
      requantizeRow(a, nullptr, scales_.size() == 1 ? scales_[0] : scales_[r % channels_], yzp_, y, len);
    } else {
      requantizeRow(a, scales_.data(), 0.0f, yzp_, y, len);
    }
  }
  // The convolution's nChw{B}c accumulator straight into plain y (no reorder pass): one
  // (image, channel block) a task.
  void requantizeBlocked(const float* acc, const MutableTensorView& y) {
    const int64_t B = y_block_, blocks = (channels_ + B - 1) / B, N = static_cast<int64_t>(y_float_.size()) / (channels_ * inner_);
    pool_.parallelFor(N * blocks, 1, 1, [&](int, int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        if (!op_.requant) sumBlock(acc, t, blocks, y.as<int32_t>());
        else if (y_dtype_ == DType::kInt8) requantBlock(acc, t, blocks, y.as<int8_t>());
        else requantBlock(acc, t, blocks, y.as<uint8_t>());
      }
    });
  }
  // ConvInteger: the int32 sums themselves (exact integers in float32), unblocked.
  void sumBlock(const float* acc, int64_t t, int64_t blocks, int32_t* y) const {
    const int64_t B = y_block_, img = t / blocks, c0 = (t % blocks) * B, cn = std::min<int64_t>(B, channels_ - c0);
    const float* a = acc + t * inner_ * B;
    int32_t* yo = y + (img * channels_ + c0) * inner_;
    for (int64_t c = 0; c < cn; ++c) {
      for (int64_t p = 0; p < inner_; ++p) yo[c * inner_ + p] = static_cast<int32_t>(std::lrint(a[p * B + c]));
    }
  }
  template <class T> void requantBlock(const float* acc, int64_t t, int64_t blocks, T* y) const {
    const int64_t B = y_block_, img = t / blocks, cb = t % blocks, c0 = cb * B, cn = std::min<int64_t>(B, channels_ - c0);
    const float* a = acc + t * inner_ * B;
    T* yo = y + (img * channels_ + c0) * inner_;
    float s[16];
    for (int64_t c = 0; c < cn; ++c) s[c] = scales_.size() == 1 ? scales_[0] : scales_[c0 + c];
    for (int64_t p = 0; p < inner_; ++p) {
      T q[16];
      requantizeRow(a + p * B, s, 0.0f, yzp_, q, cn);
      for (int64_t c = 0; c < cn; ++c) yo[c * inner_ + p] = q[c];
    }
  }


  // Weights as float32 (w - w_zp) for the float path; `per_row`: zero points by the
  // outer index (conv output channel), else by the last (matmul column).
  std::vector<float> floatWeights(const ir::Tensor& w, const ir::Tensor* wzp, bool per_row) const {
    const int64_t n = numElements(w.shape), inner = n / channels_;
    std::vector<float> f(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = per_row ? i / inner : i % channels_;
      const float v = w.dtype == DType::kUInt8 ? static_cast<float>(w.constant->data[i])
                                               : static_cast<float>(reinterpret_cast<const int8_t*>(w.constant->data)[i]);
      f[i] = v -
             static_cast<float>(wzp ? constAt(*wzp, numElements(wzp->shape) == 1 ? 0 : c) : 0.0);
    }
    return f;
  }

  void buildConv(const ir::Graph& g, const ir::Node& n, const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& y,
                 const ir::Tensor* wzp, dt xt, dt yt, const dnnl::primitive_attr& attr) {
    const auto& a = n.attrs.get<Conv2DAttrs>();
    if (!w.isConstant()) throw std::runtime_error("oneDNN int8 convolution needs constant weights");
    const Shape &xs = x.shape, &ys = y.shape, &ws = w.shape;
    const int64_t G = a.groups;
    const dt wt = native_ ? dt::s8 : dt::f32, bt = native_ ? dt::s32 : dt::f32;
    const dims w_dims = G == 1 ? dims{ws[0], ws[1], ws[2], ws[3]} : dims{G, ws[0] / G, ws[1], ws[2], ws[3]};
    const dnnl::memory::desc x_md({xs[0], xs[1], xs[2], xs[3]}, xt, x_nhwc_ ? tag::nhwc : tag::nchw);
    const dnnl::memory::desc y_md({ys[0], ys[1], ys[2], ys[3]}, yt, y_nhwc_ ? tag::nhwc : tag::nchw);
    const dnnl::memory::desc x_any({xs[0], xs[1], xs[2], xs[3]}, xt, tag::any);
    const dnnl::memory::desc y_any({ys[0], ys[1], ys[2], ys[3]}, yt, tag::any);
    const dnnl::memory::desc w_plain(w_dims, wt, G == 1 ? tag::oihw : tag::goihw);
    const dnnl::memory::desc w_any(w_dims, wt, tag::any);
    const dims strides{a.strides[0], a.strides[1]}, dil{a.dilations[0] - 1, a.dilations[1] - 1};
    const dims pad_l{a.pads[0], a.pads[1]}, pad_r{a.pads[2], a.pads[3]};
    if (!wz_.empty()) {
      const ConvGeometry geo{xs[0], xs[1], xs[2], xs[3], G, ys[1], ys[2], ys[3], ws[2], ws[3], a.strides[0], a.strides[1],
                             a.pads[0], a.pads[1], a.dilations[0], a.dilations[1]};
      fold_ = std::make_unique<ConvWeightZeroPoints>(geo, wz_, x_nhwc_, y_nhwc_);
    }
    const ir::Tensor* bias = tensorAt(g, n, op_.bias);
    const dnnl::memory::desc b_md({channels_}, bt, tag::x);
    auto desc = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, x_any, w_any, b_md, y_any,
                                                       strides, dil, pad_l, pad_r)
                     : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, x_any, w_any, y_any,
                                                       strides, dil, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, attr, oneDnnEngine());
    impl_ = pd.impl_info_str();
    if (impl_.rfind("ref", 0) == 0) throw std::runtime_error("oneDNN has only its reference convolution for this case");
    prim_ = dnnl::convolution_forward(pd);
    x_mem_ = native_ ? dnnl::memory(x_md, oneDnnEngine(), DNNL_MEMORY_NONE) : dnnl::memory(x_md, oneDnnEngine(), x_float_.data());
    y_mem_ = native_ && !f32_out_ ? dnnl::memory(y_md, oneDnnEngine(), DNNL_MEMORY_NONE)
                                  : dnnl::memory(y_md, oneDnnEngine(), y_float_.data());
    if (pd.src_desc() != x_md) {  // buffers made here, at compile
      x_prim_ = dnnl::memory(pd.src_desc(), oneDnnEngine());
      x_reorder_ = dnnl::reorder(x_mem_, x_prim_);
    }
    if (pd.dst_desc() != y_md) {
      y_prim_ = dnnl::memory(pd.dst_desc(), oneDnnEngine());
      const dims yd{ys[0], ys[1], ys[2], ys[3]};
      const bool f32 = !native_ || f32_out_;
      if (f32 && !y_nhwc_ && pd.dst_desc() == dnnl::memory::desc(yd, dt::f32, tag::nChw8c)) y_block_ = 8;
      else if (f32 && !y_nhwc_ && pd.dst_desc() == dnnl::memory::desc(yd, dt::f32, tag::nChw16c)) y_block_ = 16;
      else y_reorder_ = dnnl::reorder(y_prim_, y_mem_);
    }
    if (native_ && w_shift_) {  // u8 -> s8, w - 128 (the 128 is in wz_)
      std::vector<uint8_t> s8(numElements(ws));
      for (size_t i = 0; i < s8.size(); ++i) s8[i] = w.constant->data[i] ^ 0x80;
      reorderWeights(w_plain, pd.weights_desc(), s8.data());
    } else if (native_) {
      reorderWeights(w_plain, pd.weights_desc(), w.constant->data);
    } else {
      std::vector<float> wf = floatWeights(w, wzp, true);
      reorderWeights(w_plain, pd.weights_desc(), wf.data());
    }
    if (bias) {
      if (!bias->isConstant()) throw std::runtime_error("oneDNN int8 convolution needs a constant bias");
      b_mem_ = dnnl::memory(b_md, oneDnnEngine());
      const int32_t* b = reinterpret_cast<const int32_t*>(bias->constant->data);
      if (native_) std::memcpy(b_mem_.get_data_handle(), b, channels_ * sizeof(int32_t));
      else for (int64_t o = 0; o < channels_; ++o) static_cast<float*>(b_mem_.get_data_handle())[o] = static_cast<float>(b[o]);
    }
  }

  void buildMatMul(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& y, const ir::Tensor* wzp, dt xt, dt yt,
                   const dnnl::primitive_attr& attr) {
    const size_t rank = y.shape.size();
    if (rank < 2 || rank > 6) throw std::runtime_error("oneDNN matmul takes ranks 2 to 6");
    const dt wt = native_ ? dt::s8 : dt::f32;
    const auto x_md = matDesc(x.shape, rank, xt), y_md = matDesc(y.shape, rank, yt);
    const auto w_md = matDesc(w.shape, rank, wt);
    w_const_ = w.isConstant();
    if (!native_ && !w_const_) {  // converted at each launch, like x
      if (wzp && !wzp->isConstant()) throw std::runtime_error("the float path takes constant weight zero points");
      w_zp_.assign(channels_, 0.0f);
      for (int64_t j = 0; j < channels_ && wzp; ++j) w_zp_[j] = static_cast<float>(constAt(*wzp, numElements(wzp->shape) == 1 ? 0 : j));
      w_float_.resize(numElements(w.shape));
      w_signed_ = w.dtype == DType::kInt8;
    }
    const auto w_use = w_const_ ? dnnl::memory::desc(w_md.dims(), wt, tag::any) : w_md;
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x_md, w_use, y_md), attr, oneDnnEngine());
    impl_ = pd.impl_info_str();
    if (impl_.rfind("ref", 0) == 0) throw std::runtime_error("oneDNN has only its reference matmul for this case");
    prim_ = dnnl::matmul(pd);
    x_mem_ = native_ ? dnnl::memory(x_md, oneDnnEngine(), DNNL_MEMORY_NONE) : dnnl::memory(x_md, oneDnnEngine(), x_float_.data());
    y_mem_ = (native_ && !f32_out_) || op_.to_float ? dnnl::memory(y_md, oneDnnEngine(), DNNL_MEMORY_NONE)
                                                    : dnnl::memory(y_md, oneDnnEngine(), y_float_.data());
    if (w_shift_) {
      w_s8_.resize(numElements(w.shape));
      if (w_const_) for (size_t i = 0; i < w_s8_.size(); ++i) w_s8_[i] = w.constant->data[i] ^ 0x80;
    }
    if (!w_const_) {
      w_mem_ = !native_ ? dnnl::memory(w_md, oneDnnEngine(), w_float_.data())
               : w_shift_ ? dnnl::memory(w_md, oneDnnEngine(), w_s8_.data())
                          : dnnl::memory(w_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    } else if (native_) {
      reorderWeights(w_md, pd.weights_desc(), w_shift_ ? static_cast<const void*>(w_s8_.data()) : w.constant->data);
    } else {
      std::vector<float> wf = floatWeights(w, wzp, false);
      reorderWeights(w_md, pd.weights_desc(), wf.data());
    }
  }

  void reorderWeights(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen, const void* data) {
    dnnl::memory src(plain, oneDnnEngine(), const_cast<void*>(data));
    w_mem_ = dnnl::memory(chosen, oneDnnEngine());
    dnnl::reorder(src, w_mem_).execute(stream_, src, w_mem_);
    stream_.wait();
    w_const_ = true;
  }

  Int8Op op_;
  bool native_ = false, w_shift_ = false;
  bool serial_ = false;  // a matmul under kSerialMatMulMacs: made and run on the calling thread
  bool f32_out_ = false;  // native int8 in, float32 out, requantized by requantize() (odd output zero point)
  std::vector<uint8_t> w_s8_;  // u8 weights as s8 (w ^ 0x80)
  std::vector<int32_t> wz_;  // ConvInteger: the weight zero point per output channel, folded after oneDNN (- 128 for u8)
  std::unique_ptr<ConvWeightZeroPoints> fold_;  // ConvInteger with wz_: the zero points' term taken off
  dnnl::stream stream_;
  ThreadPool& pool_;
  bool x_nhwc_ = false, y_nhwc_ = false;  // the int8 layout plan's NHWC activations (int8_layout.h)
  int64_t y_block_ = 0;  // float path: the accumulator is nChw{y_block_}c, requantized into plain y
  dnnl::primitive prim_;
  dnnl::memory x_mem_, w_mem_, y_mem_, b_mem_, x_prim_, y_prim_, zp_mem_, scales_mem_, bias_mem_;
  dnnl::reorder x_reorder_, y_reorder_;
  bool w_const_ = false, runtime_xzp_ = false;
  int32_t xzp_value_ = 0, yzp_ = 0;
  int64_t channels_ = 1, inner_ = 1;
  DType y_dtype_ = DType::kUInt8;
  std::vector<float> scales_;
  std::vector<float> x_float_, y_float_, w_float_, w_zp_;  // the float path's operands, made at compile
  const int32_t* int_bias_ = nullptr;  // QuantBatchMatMul's bias (a constant) and its float32 B[j] * s[j]
  std::vector<float> int_bias_f_;
  bool w_signed_ = true;
  std::string impl_;
};

}  // namespace

bool canRunOneDnnInt8(const ir::Graph& g, const ir::Node& node) {
  Int8Op op;
  if (node.subgraph || !int8Op(node, &op)) return false;
  const ir::Tensor* x = tensorAt(g, node, op.x);
  const ir::Tensor* w = tensorAt(g, node, op.w);
  if (!x || !w || (op.conv && x->shape.size() != 4)) return false;
  for (int k : {op.xs, op.ws, op.ys, op.yzp}) {  // MatMulIntegerToFloat reads its scales at launch
    if (k >= 0 && (!tensorAt(g, node, k) || (!op.to_float && !tensorAt(g, node, k)->isConstant()))) return false;
  }
  if (op.to_float && (!w->isConstant() || (tensorAt(g, node, op.bias) && !tensorAt(g, node, op.bias)->isConstant()))) {
    return false;
  }
  if (op.requant) {  // per-tensor activation and output scales
    for (int k : {op.xs, op.ys, op.yzp}) if (numElements(tensorAt(g, node, k)->shape) != 1) return false;
  }
  const ir::Tensor* xzp = tensorAt(g, node, op.xzp);
  return !xzp || numElements(xzp->shape) == 1;
}

StatusOr<std::unique_ptr<Kernel>> compileOneDnnInt8(const ir::Graph& g, const ir::Node& node, Int8Path path,
                                                    ThreadPool& pool, bool x_nhwc, bool y_nhwc) {
  Int8Op op;
  if (!int8Op(node, &op)) return makeError(StatusCode::kUnsupported, "oneDNN int8 does not take ", node.name);
  try {
    return std::unique_ptr<Kernel>(new OneDnnInt8Kernel(g, node, op, path, pool, x_nhwc, y_nhwc));
  } catch (const std::exception& e) {  // dnnl::error and the cases refused above
    if (path == Int8Path::kFloat) return makeError(StatusCode::kUnsupported, "oneDNN int8 for ", node.name, ": ", e.what());
  }
  try {  // oneDNN's int8 kernels refused the case (weight zero points, ...): the float path
    return std::unique_ptr<Kernel>(new OneDnnInt8Kernel(g, node, op, Int8Path::kFloat, pool, x_nhwc, y_nhwc));
  } catch (const std::exception& e) {
    return makeError(StatusCode::kUnsupported, "oneDNN int8 for ", node.name, ": ", e.what());
  }
}

#else  // no oneDNN in this build: the reference kernels (the own int8 GEMM: not written yet)

bool canRunOneDnnInt8(const ir::Graph&, const ir::Node&) { return false; }
StatusOr<std::unique_ptr<Kernel>> compileOneDnnInt8(const ir::Graph&, const ir::Node& node, Int8Path, ThreadPool&, bool, bool) {
  return makeError(StatusCode::kUnsupported, "this build has no oneDNN for ", node.name);
}

#endif

}  // namespace gkrt::cpu
