// The quantised norm pattern ops the Appendix 3 passes rms_norm_quant_fusion and
// add_rms_norm_quant_fusion make (fusion/passes/pattern_norm_passes.cc):
//   RmsNormQuant(x, gamma, scale, zero_point, beta?)        -> q
//   AddRmsNormQuant(x1, x2, gamma, scale, zero_point)       -> (q, x1 + x2)
// q = saturate(round_half_even(v / scale) + zero_point), v = RmsNorm(x) * gamma (+ beta),
// per-tensor scale (float32) and zero point (int8 or uint8, q's type). The reference
// kernels store every intermediate in x's type as the unfused ops do (RmsNorm's y, the
// Add with beta, QuantizeLinear in float32), so the fused and unfused results are equal.
#include <algorithm>
#include <cmath>

#include "runtime/ir/ops/op_helpers.h"
#include "runtime/ir/ops/quant_helpers.h"

namespace gkrt::ops {
namespace {

struct Layout { int gamma, beta, scale, zp; bool add; };
Layout layoutOf(const ir::Node& n) {
  if (std::string(n.op->name) == "AddRmsNormQuant") return {2, -1, 3, 4, true};
  return {1, 4, 2, 3, false};
}

Status dtypeNormQuant(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const Layout l = layoutOf(n);
  RETURN_IF_ERROR(requireFloat(n, in[0], 0));
  if (l.add) RETURN_IF_ERROR(requireSameDType(n, in, 0, 2));
  RETURN_IF_ERROR(requireFloat(n, in[l.gamma], l.gamma));
  if (!l.add && in.size() > static_cast<size_t>(l.beta) && in[l.beta]) RETURN_IF_ERROR(requireFloat(n, in[l.beta], l.beta));
  if (in[l.scale]->dtype != DType::kFloat32) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " scale is ", dtypeName(in[l.scale]->dtype),
                     "; it must be float32");
  }
  const DType q = in[l.zp]->dtype;
  if (q != DType::kInt8 && q != DType::kUInt8) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " zero point is ", dtypeName(q),
                     "; it must be int8 or uint8 (the quantised output's type)");
  }
  out = {q};
  if (l.add) out.push_back(in[0]->dtype);
  return Status::Ok();
}


Status shapeNormQuant(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  const Layout l = layoutOf(n);
  if (l.add && in[1]->shape != in[0]->shape) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " adds x1 ", shapeToString(in[0]->shape), " and x2 ",
                     shapeToString(in[1]->shape), ": they need one shape");
  }
  ASSIGN_OR_RETURN(NormRows rc, normRowsOf(n, in[0]->shape));
  for (int k : {l.gamma, l.beta}) {
    if (k >= 0 && static_cast<size_t>(k) < in.size() && in[k] && numElements(in[k]->shape) != rc.cols) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, k == l.gamma ? " gamma" : " beta", " has ",
                       numElements(in[k]->shape), " elements, the normalised axes hold ", rc.cols);
    }
  }
  for (int k : {l.scale, l.zp}) {
    if (numElements(in[k]->shape) != 1) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, k == l.scale ? " scale " : " zero point ",
                       shapeToString(in[k]->shape), " must hold one element (per-tensor quantisation)");
    }
  }
  out = {in[0]->shape};
  if (l.add) out.push_back(in[0]->shape);
  return Status::Ok();
}

Status normQuantKernel(const KernelContext& c) {
  const Layout l = layoutOf(c.node);
  const TensorView& x = c.in(0);
  ASSIGN_OR_RETURN(NormRows rc, normRowsOf(c.node, x.shape));
  const int64_t rows = rc.rows, cols = rc.cols;  // copies: a lambda below captures them
  const float eps = c.node.attrs.get<NormAttrs>().epsilon;
  const TensorView& gamma = c.in(l.gamma);
  const TensorView* beta = !l.add && static_cast<int>(c.inputs.size()) > l.beta && c.in(l.beta).present()
                               ? &c.in(l.beta) : nullptr;
  const double scale = loadF(c.in(l.scale).data, DType::kFloat32, 0);  // float32, checked by the dtype rule
  const int64_t zp = loadIndex(c.in(l.zp), 0);
  const MutableTensorView& q = c.out(0);
  int64_t lo = 0, hi = 0;
  quantIntRange(q.dtype, lo, hi);
  // The row as x's type holds it: x itself, or the sum as the Add stores it.
  std::vector<double> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0.0;
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t e = r * cols + k;
      if (l.add) {
        storeF(c.out(1).data, c.out(1).dtype, e, loadF(x.data, x.dtype, e) + loadF(c.in(1).data, c.in(1).dtype, e));
        row[k] = loadF(c.out(1).data, c.out(1).dtype, e);
      } else {
        row[k] = loadF(x.data, x.dtype, e);
      }
      ms += row[k] * row[k];
    }
    const double rstd = 1.0 / std::sqrt(ms / static_cast<double>(cols) + eps);
    for (int64_t k = 0; k < cols; ++k) {
      double v = roundToFloatType(x.dtype, row[k] * rstd * loadF(gamma.data, gamma.dtype, k));  // RmsNorm's y
      if (beta) v = roundToFloatType(x.dtype, static_cast<float>(v) + loadF(beta->data, beta->dtype, k));  // the Add
      const double t = roundToFloatType(DType::kFloat32, v / scale);
      const double rounded = std::isnan(t) ? 0.0 : std::nearbyint(std::clamp(t, -9.0e15, 9.0e15));  // half to even
      const int64_t value = std::clamp<int64_t>(static_cast<int64_t>(rounded) + zp, lo, hi);
      withIntegerType(q.dtype, [&](auto tag) { q.as<decltype(tag)>()[r * cols + k] = static_cast<decltype(tag)>(value); });
    }
  }
  return Status::Ok();
}

}  // namespace

void registerPatternQuantOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("RmsNormQuant")) t.push_back({"RmsNormQuant", OpClass::kOpaque, 4, 5, 1, 1, AttrKind::kNorm,
               dtypeNormQuant, shapeNormQuant, normQuantKernel,
               "(x, gamma, scale, zero_point, beta?) -> saturate(round((RmsNorm(x) * gamma + beta) / scale) + zero_point)"});
  if constexpr (opSelected("AddRmsNormQuant")) t.push_back({"AddRmsNormQuant", OpClass::kOpaque, 5, 5, 2, 2, AttrKind::kNorm,
               dtypeNormQuant, shapeNormQuant, normQuantKernel,
               "(x1, x2, gamma, scale, zero_point) -> (quantised RmsNorm(x1 + x2) * gamma, x1 + x2)"});
}

}  // namespace gkrt::ops
