// Typed op attributes. Each attribute kind is one small struct; a Node holds one of
// them behind `Attrs`, and an op's definition names the kind it takes.
//
//   Attrs a = AxesAttrs{{1}, /*keep_dims=*/true};
//   const AxesAttrs& r = a.get<AxesAttrs>();
//   a.toString();  // "axes=[1] keep_dims=true"
//
// `fields(self, v)` lists the fields once; printing, equality, hashing and parsing
// from text all walk it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ir/dtype.h"
#include "runtime/ir/status.h"

namespace gkrt {

// Numbering matches the union order in schema/gkm.fbs.
enum class AttrKind : uint8_t {
  kNone = 0, kAxes, kAxis, kShape, kPerm, kMatMul, kGemm, kConv2D, kPool, kSlice,
  kStridedSlice, kPad, kNorm, kCast, kClip, kAlpha, kSoftplus, kGelu, kResize, kSplit,
  kOneHot, kTile, kFormat, kCumSum, kDropout, kStandardNormal, kOptimizer, kReduction,
  kRounding, kRepeat, kRecurrent, kLoop, kScan, kGatherND, kScatter, kTopK, kConvTranspose, kQuant,
  kSliceAtRun,
  kAttention, kIf,
};
constexpr int kNumAttrKinds = 41;
const char* attrKindName(AttrKind k);

enum class PadMode : uint8_t { kConstant = 0, kReflect, kEdge };
enum class ResizeMode : uint8_t { kNearest = 0, kLinear, kCubic };
enum class CoordTransform : uint8_t { kHalfPixel = 0, kAsymmetric, kAlignCorners, kPytorchHalfPixel };
enum class NearestMode : uint8_t { kRoundPreferFloor = 0, kRoundPreferCeil, kFloor, kCeil };
enum class GeluApprox : uint8_t { kTanh = 0, kNone };
enum class DataFormat : uint8_t { kNCHW = 0, kNHWC };
enum class Reduction : uint8_t { kNone = 0, kSum, kMean };
enum class RoundingMode : uint8_t { kTrunc = 0, kFloor };
enum class RnnDirection : uint8_t { kForward = 0, kReverse, kBidirectional };
// The activation functions ONNX lists for LSTM/GRU/RNN, in ONNX's spelling.
enum class RnnActivation : uint8_t {
  kRelu = 0, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign,
  kSoftplus,
};
enum class ScatterReduction : uint8_t { kNone = 0, kAdd, kMul, kMax, kMin };
enum class AttentionLayout : uint8_t { kBNSD = 0, kBSND, kBSH };

// Names of each enum's values, in numbering order (used by printing and parsing).
template <typename E> struct EnumNames;
#define GKRT_ENUM_NAMES(E, ...)                                  \
  template <> struct EnumNames<E> {                              \
    static constexpr const char* names[] = {__VA_ARGS__};        \
    static constexpr int count = sizeof(names) / sizeof(names[0]); \
  }
GKRT_ENUM_NAMES(PadMode, "constant", "reflect", "edge");
GKRT_ENUM_NAMES(ResizeMode, "nearest", "linear", "cubic");
GKRT_ENUM_NAMES(CoordTransform, "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel");
GKRT_ENUM_NAMES(NearestMode, "round_prefer_floor", "round_prefer_ceil", "floor", "ceil");
GKRT_ENUM_NAMES(GeluApprox, "tanh", "none");
GKRT_ENUM_NAMES(DataFormat, "NCHW", "NHWC");
GKRT_ENUM_NAMES(Reduction, "none", "sum", "mean");
GKRT_ENUM_NAMES(RoundingMode, "trunc", "floor");
GKRT_ENUM_NAMES(RnnDirection, "forward", "reverse", "bidirectional");
GKRT_ENUM_NAMES(RnnActivation, "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
                "HardSigmoid", "Elu", "Softsign", "Softplus");
GKRT_ENUM_NAMES(ScatterReduction, "none", "add", "mul", "max", "min");
GKRT_ENUM_NAMES(AttentionLayout, "BNSD", "BSND", "BSH");
GKRT_ENUM_NAMES(E8M0Rounding, "up", "down", "nearest");
#undef GKRT_ENUM_NAMES

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

#define GKRT_ATTR(Name, Kind) static constexpr AttrKind kKind = AttrKind::Kind; \
  static constexpr const char* kName = Name

// Reductions (empty axes = all), Squeeze/ExpandDims.
struct AxesAttrs { GKRT_ATTR("Axes", kAxes);
  Ints axes; bool keep_dims = false;
  template <class S, class V> static void fields(S& s, V& v) { v("axes", s.axes); v("keep_dims", s.keep_dims); }
};
// Softmax-like ops, Concat, Gather, ArgMax/ArgMin.
struct AxisAttrs { GKRT_ATTR("Axis", kAxis);
  int64_t axis = 0; bool keep_dims = false;
  template <class S, class V> static void fields(S& s, V& v) { v("axis", s.axis); v("keep_dims", s.keep_dims); }
};
// Reshape (one -1 inferred), BroadcastTo, FillV2.
struct ShapeAttrs { GKRT_ATTR("Shape", kShape);
  Ints shape;
  template <class S, class V> static void fields(S& s, V& v) { v("shape", s.shape); }
};
struct PermAttrs { GKRT_ATTR("Perm", kPerm);
  Ints perm;
  template <class S, class V> static void fields(S& s, V& v) { v("perm", s.perm); }
};
struct MatMulAttrs { GKRT_ATTR("MatMul", kMatMul);
  bool transpose_a = false; bool transpose_b = false;
  template <class S, class V> static void fields(S& s, V& v) { v("transpose_a", s.transpose_a); v("transpose_b", s.transpose_b); }
};
// Y = alpha * op(A) op(B) + beta * C.
struct GemmAttrs { GKRT_ATTR("Gemm", kGemm);
  float alpha = 1.0f; float beta = 1.0f; bool transpose_a = false; bool transpose_b = false;
  template <class S, class V> static void fields(S& s, V& v) {
    v("alpha", s.alpha); v("beta", s.beta); v("transpose_a", s.transpose_a); v("transpose_b", s.transpose_b);
  }
};
// NCHW input, OIHW weights; pads are {top, left, bottom, right}.
struct Conv2DAttrs { GKRT_ATTR("Conv2D", kConv2D);
  Ints strides{1, 1}; Ints pads{0, 0, 0, 0}; Ints dilations{1, 1}; int64_t groups = 1;
  template <class S, class V> static void fields(S& s, V& v) {
    v("strides", s.strides); v("pads", s.pads); v("dilations", s.dilations); v("groups", s.groups);
  }
};
// dilations: empty (all 1) for 2-D pooling; 3-D pooling (MaxPool3D, AvgPool3D) takes 3.
struct PoolAttrs { GKRT_ATTR("Pool", kPool);
  Ints kernel{1, 1}; Ints strides{1, 1}; Ints pads{0, 0, 0, 0}; bool ceil_mode = false; bool count_include_pad = false;
  Ints dilations;
  template <class S, class V> static void fields(S& s, V& v) {
    v("kernel", s.kernel); v("strides", s.strides); v("pads", s.pads);
    v("ceil_mode", s.ceil_mode); v("count_include_pad", s.count_include_pad); v("dilations", s.dilations);
  }
};
// MindSpore Slice: begin and size per axis (size -1 = to the end).
struct SliceAttrs { GKRT_ATTR("Slice", kSlice);
  Ints begins; Ints sizes;
  template <class S, class V> static void fields(S& s, V& v) { v("begins", s.begins); v("sizes", s.sizes); }
};
// ONNX Slice semantics: clamped [begin, end) with step on the listed axes.
struct StridedSliceAttrs { GKRT_ATTR("StridedSlice", kStridedSlice);
  Ints begins; Ints ends; Ints axes; Ints steps;
  template <class S, class V> static void fields(S& s, V& v) {
    v("begins", s.begins); v("ends", s.ends); v("axes", s.axes); v("steps", s.steps);
  }
};
// pads = {begin_0..begin_{r-1}, end_0..end_{r-1}} as in ONNX.
struct PadAttrs { GKRT_ATTR("Pad", kPad);
  Ints pads; PadMode mode = PadMode::kConstant; float value = 0.0f;
  template <class S, class V> static void fields(S& s, V& v) { v("pads", s.pads); v("mode", s.mode); v("value", s.value); }
};
// LayerNorm/RmsNorm normalise axes [axis, rank); BatchNorm uses axis as the channel axis.
struct NormAttrs { GKRT_ATTR("Norm", kNorm);
  int64_t axis = -1; float epsilon = 1e-5f;
  template <class S, class V> static void fields(S& s, V& v) { v("axis", s.axis); v("epsilon", s.epsilon); }
};
// `saturate` and `e8m0_rounding` only matter for casts to the narrow float types
// (runtime/ir/dtype.h: floatToNarrow).
struct CastAttrs { GKRT_ATTR("Cast", kCast);
  DType to = DType::kFloat32; bool saturate = true; E8M0Rounding e8m0_rounding = E8M0Rounding::kUp;
  template <class S, class V> static void fields(S& s, V& v) {
    v("to", s.to); v("saturate", s.saturate); v("e8m0_rounding", s.e8m0_rounding);
  }
};
struct ClipAttrs { GKRT_ATTR("Clip", kClip);
  float min = -3.402823466e38f; float max = 3.402823466e38f;
  template <class S, class V> static void fields(S& s, V& v) { v("min", s.min); v("max", s.max); }
};
// One scalar parameter: LeakyReLU/Elu alpha, HShrink lambda.
struct AlphaAttrs { GKRT_ATTR("Alpha", kAlpha);
  float alpha = 0.01f;
  template <class S, class V> static void fields(S& s, V& v) { v("alpha", s.alpha); }
};
struct SoftplusAttrs { GKRT_ATTR("Softplus", kSoftplus);
  float beta = 1.0f; float threshold = 20.0f;
  template <class S, class V> static void fields(S& s, V& v) { v("beta", s.beta); v("threshold", s.threshold); }
};
struct GeluAttrs { GKRT_ATTR("Gelu", kGelu);
  GeluApprox approximate = GeluApprox::kTanh;
  template <class S, class V> static void fields(S& s, V& v) { v("approximate", s.approximate); }
};
// NCHW; `sizes` is the output {H, W}.
struct ResizeAttrs { GKRT_ATTR("Resize", kResize);
  ResizeMode mode = ResizeMode::kNearest; CoordTransform coordinate_transformation = CoordTransform::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor; Ints sizes;
  float scale_h = 0, scale_w = 0;  // output/input scale when given; 0: sizes / input dims
  float cubic_coeff_a = -0.75f; bool exclude_outside = false;  // cubic mode (ONNX's attributes)
  template <class S, class V> static void fields(S& s, V& v) {
    v("mode", s.mode); v("coordinate_transformation", s.coordinate_transformation);
    v("nearest_mode", s.nearest_mode); v("sizes", s.sizes); v("scale_h", s.scale_h); v("scale_w", s.scale_w);
    v("cubic_coeff_a", s.cubic_coeff_a); v("exclude_outside", s.exclude_outside);
  }
};
struct SplitAttrs { GKRT_ATTR("Split", kSplit);
  int64_t axis = 0; Ints sizes;
  template <class S, class V> static void fields(S& s, V& v) { v("axis", s.axis); v("sizes", s.sizes); }
};
struct OneHotAttrs { GKRT_ATTR("OneHot", kOneHot);
  int64_t depth = 0; int64_t axis = -1; float on_value = 1.0f; float off_value = 0.0f;
  template <class S, class V> static void fields(S& s, V& v) {
    v("depth", s.depth); v("axis", s.axis); v("on_value", s.on_value); v("off_value", s.off_value);
  }
};
struct TileAttrs { GKRT_ATTR("Tile", kTile);
  Ints multiples;
  template <class S, class V> static void fields(S& s, V& v) { v("multiples", s.multiples); }
};
struct FormatAttrs { GKRT_ATTR("Format", kFormat);
  DataFormat format = DataFormat::kNCHW;
  template <class S, class V> static void fields(S& s, V& v) { v("format", s.format); }
};
struct CumSumAttrs { GKRT_ATTR("CumSum", kCumSum);
  int64_t axis = 0; bool exclusive = false; bool reverse = false;
  template <class S, class V> static void fields(S& s, V& v) { v("axis", s.axis); v("exclusive", s.exclusive); v("reverse", s.reverse); }
};
struct DropoutAttrs { GKRT_ATTR("Dropout", kDropout);
  float keep_prob = 0.5f; int64_t seed = 0;
  template <class S, class V> static void fields(S& s, V& v) { v("keep_prob", s.keep_prob); v("seed", s.seed); }
};
struct StandardNormalAttrs { GKRT_ATTR("StandardNormal", kStandardNormal);
  Ints shape; int64_t seed = 0;
  template <class S, class V> static void fields(S& s, V& v) { v("shape", s.shape); v("seed", s.seed); }
};
struct OptimizerAttrs { GKRT_ATTR("Optimizer", kOptimizer);
  bool use_nesterov = false;
  template <class S, class V> static void fields(S& s, V& v) { v("use_nesterov", s.use_nesterov); }
};
struct ReductionAttrs { GKRT_ATTR("Reduction", kReduction);
  Reduction reduction = Reduction::kMean;
  template <class S, class V> static void fields(S& s, V& v) { v("reduction", s.reduction); }
};
struct RoundingAttrs { GKRT_ATTR("Rounding", kRounding);
  RoundingMode mode = RoundingMode::kFloor;
  template <class S, class V> static void fields(S& s, V& v) { v("mode", s.mode); }
};
struct RepeatAttrs { GKRT_ATTR("Repeat", kRepeat);
  int64_t repeats = 1; int64_t axis = 0;
  template <class S, class V> static void fields(S& s, V& v) { v("repeats", s.repeats); v("axis", s.axis); }
};
// ONNX LSTM, GRU and RNN. `activations` holds, per direction (forward first), the
// op's functions in ONNX order (LSTM f, g, h; GRU f, g; RNN f), empty for the defaults;
// `activation_alpha` / `activation_beta` hold one value per listed function (unused
// ones 0). clip 0 = no clip.
struct RecurrentAttrs { GKRT_ATTR("Recurrent", kRecurrent);
  int64_t hidden_size = 0; RnnDirection direction = RnnDirection::kForward; int64_t layout = 0; float clip = 0.0f;
  bool input_forget = false; bool linear_before_reset = false; std::vector<RnnActivation> activations;
  Floats activation_alpha; Floats activation_beta;
  template <class S, class V> static void fields(S& s, V& v) {
    v("hidden_size", s.hidden_size); v("direction", s.direction); v("layout", s.layout); v("clip", s.clip);
    v("input_forget", s.input_forget); v("linear_before_reset", s.linear_before_reset);
    v("activations", s.activations); v("activation_alpha", s.activation_alpha); v("activation_beta", s.activation_beta);
  }
};
// Loop: the trip count when known at conversion (-1: none, the condition ends the
// loop; then the body has no scan outputs) and how many values the loop carries.
struct LoopAttrs { GKRT_ATTR("Loop", kLoop);
  int64_t trip_count = -1; int64_t num_carried = 0;
  template <class S, class V> static void fields(S& s, V& v) { v("trip_count", s.trip_count); v("num_carried", s.num_carried); }
};
// Scan (ONNX Scan-9+; `batched`: Scan-8, whose inputs and outputs lead with a batch
// axis). Empty axes/directions lists mean 0 for every scan input/output.
struct ScanAttrs { GKRT_ATTR("Scan", kScan);
  int64_t num_state = 0; int64_t num_scan_inputs = 0; Ints scan_input_axes; Ints scan_input_directions;
  Ints scan_output_axes; Ints scan_output_directions; bool batched = false;
  template <class S, class V> static void fields(S& s, V& v) {
    v("num_state", s.num_state); v("num_scan_inputs", s.num_scan_inputs); v("scan_input_axes", s.scan_input_axes);
    v("scan_input_directions", s.scan_input_directions); v("scan_output_axes", s.scan_output_axes);
    v("scan_output_directions", s.scan_output_directions); v("batched", s.batched);
  }
};
// GatherND: the leading `batch_dims` axes of data and indices are batch axes.
struct GatherNDAttrs { GKRT_ATTR("GatherND", kGatherND);
  int64_t batch_dims = 0;
  template <class S, class V> static void fields(S& s, V& v) { v("batch_dims", s.batch_dims); }
};
// ScatterElements (along `axis`) and ScatterND (axis unused): how updates combine
// with the data they land on.
struct ScatterAttrs { GKRT_ATTR("Scatter", kScatter);
  int64_t axis = 0; ScatterReduction reduction = ScatterReduction::kNone;
  template <class S, class V> static void fields(S& s, V& v) { v("axis", s.axis); v("reduction", s.reduction); }
};
// TopK: the k largest (or smallest) along axis; sorted or in input order.
struct TopKAttrs { GKRT_ATTR("TopK", kTopK);
  int64_t k = 1; int64_t axis = -1; bool largest = true; bool sorted = true;
  template <class S, class V> static void fields(S& s, V& v) {
    v("k", s.k); v("axis", s.axis); v("largest", s.largest); v("sorted", s.sorted);
  }
};
// ConvTranspose over 1 to 3 spatial axes (N, C, spatial... input; C/groups-major
// weights {C, M/groups, k...}); pads = {begin..., end...}; the output length per axis
// is stride (in - 1) + output_padding + dilation (k - 1) + 1 - pad_begin - pad_end.
struct ConvTransposeAttrs { GKRT_ATTR("ConvTranspose", kConvTranspose);
  Ints strides; Ints pads; Ints dilations; Ints output_padding; int64_t groups = 1;
  template <class S, class V> static void fields(S& s, V& v) {
    v("strides", s.strides); v("pads", s.pads); v("dilations", s.dilations);
    v("output_padding", s.output_padding); v("groups", s.groups);
  }
};
// QuantizeLinear / DequantizeLinear (ONNX): scale and zero point per tensor (one
// element), per axis (1-D along `axis`) or per block of `block_size` along `axis`.
// `to` is the output dtype; `precision` the dtype x / scale is computed in.
struct QuantAttrs { GKRT_ATTR("Quant", kQuant);
  int64_t axis = 1; int64_t block_size = 0; bool saturate = true; DType to = DType::kUInt8;
  DType precision = DType::kFloat32;
  template <class S, class V> static void fields(S& s, V& v) {
    v("axis", s.axis); v("block_size", s.block_size); v("saturate", s.saturate); v("to", s.to);
    v("precision", s.precision);
  }
};
// SliceAtRun: ONNX Slice whose starts and ends are tensors read at run (a loop's
// counter); on axes[j] (with steps[j], default 1) the output keeps sizes[j] elements,
// fixed when the model is made (ONNX ends - starts is a constant there).
struct SliceAtRunAttrs { GKRT_ATTR("SliceAtRun", kSliceAtRun);
  Ints axes; Ints steps; Ints sizes;
  template <class S, class V> static void fields(S& s, V& v) { v("axes", s.axes); v("steps", s.steps); v("sizes", s.sizes); }
};
// FlashAttention: softmax(scale * Q K^T + mask) V. Layout of Q, K, V and the output:
// BNSD [batch, heads, seq, head_dim]; BSND [batch, seq, heads, head_dim]; BSH
// [batch, seq, heads * head_dim] with `heads` given (the projections as they leave
// their matmuls). key_transposed: K is given as K^T (BNSD only: [batch, heads, dim, seq]).
struct AttentionAttrs { GKRT_ATTR("Attention", kAttention);
  float scale = 0.0f; AttentionLayout layout = AttentionLayout::kBNSD; int64_t heads = 0; bool key_transposed = false;
  template <class S, class V> static void fields(S& s, V& v) {
    v("scale", s.scale); v("layout", s.layout); v("heads", s.heads); v("key_transposed", s.key_transposed);
  }
};
// If: the branch (0 then, 1 else) that could not be built at the shapes the model was
// converted with, or -1. That branch is a placeholder; taking it is a run-time error.
// The loader gives If nodes of files from before this field IfAttrs{} (both built).
struct IfAttrs { GKRT_ATTR("If", kIf);
  int64_t unbuilt_branch = -1;
  template <class S, class V> static void fields(S& s, V& v) { v("unbuilt_branch", s.unbuilt_branch); }
};
#undef GKRT_ATTR

namespace detail {
struct AttrsHolderBase {
  virtual ~AttrsHolderBase() = default;
  virtual AttrKind kind() const = 0;
  virtual std::string toString() const = 0;
  virtual bool equals(const AttrsHolderBase& other) const = 0;
  virtual size_t hash() const = 0;
};
template <class T> struct AttrsHolder;  // defined in attrs_impl.h
}  // namespace detail

// One node's attributes: empty (kind kNone) or exactly one typed struct.
class Attrs {
 public:
  Attrs() = default;
  template <class T, class = decltype(T::kKind)>
  Attrs(T value);  // NOLINT: implicit, so `b.op("Softmax", {x}, AxisAttrs{1})` reads naturally

  AttrKind kind() const { return p_ ? p_->kind() : AttrKind::kNone; }
  // The typed struct; only call after checking kind() (the loader and builder do).
  template <class T> const T& get() const;
  std::string toString() const { return p_ ? p_->toString() : std::string(); }
  bool operator==(const Attrs& o) const;
  bool operator!=(const Attrs& o) const { return !(*this == o); }
  size_t hash() const { return p_ ? p_->hash() : 0; }

 private:
  std::shared_ptr<const detail::AttrsHolderBase> p_;
};

// Default-constructed attributes of a kind, with `fields` (name -> text) applied:
// ints "3", lists "1,2,3", floats "0.5", bools "true", enums and dtypes by name.
StatusOr<Attrs> makeAttrs(AttrKind kind, const std::map<std::string, std::string>& fields);

}  // namespace gkrt

#include "runtime/ir/attrs_impl.h"
