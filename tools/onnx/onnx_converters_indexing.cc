// ONNX ops that select, scatter or rearrange elements by position: GatherElements,
// GatherND, ScatterElements/Scatter, ScatterND, TopK, NonZero, Trilu, EyeLike,
// DepthToSpace, SpaceToDepth.
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

StatusOr<ScatterReduction> scatterReduction(const Node& n) {
  static const std::map<std::string, ScatterReduction> kNames = {{"none", ScatterReduction::kNone},
      {"add", ScatterReduction::kAdd}, {"mul", ScatterReduction::kMul}, {"max", ScatterReduction::kMax},
      {"min", ScatterReduction::kMin}};
  const std::string r = attrString(n, "reduction", "none");
  auto it = kNames.find(r);
  if (it == kNames.end()) return unsupported(n, "reduction '" + r + "' is not one of none, add, mul, max, min");
  return it->second;
}

Status gatherElements(Context& c, const Node& n, Outs& o) {
  o = {c.op1("GatherElements", {c.in(n, 0), c.in(n, 1)}, AxisAttrs{attrInt(n, "axis", 0), false})};
  return Status::Ok();
}
Status gatherND(Context& c, const Node& n, Outs& o) {
  o = {c.op1("GatherND", {c.in(n, 0), c.in(n, 1)}, GatherNDAttrs{attrInt(n, "batch_dims", 0)})};
  return Status::Ok();
}
Status scatterElements(Context& c, const Node& n, Outs& o) {  // also the deprecated Scatter
  ASSIGN_OR_RETURN(ScatterReduction r, scatterReduction(n));
  o = {c.op1("ScatterElements", {c.in(n, 0), c.in(n, 1), c.in(n, 2)}, ScatterAttrs{attrInt(n, "axis", 0), r})};
  return Status::Ok();
}
Status scatterND(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(ScatterReduction r, scatterReduction(n));
  o = {c.op1("ScatterND", {c.in(n, 0), c.in(n, 1), c.in(n, 2)}, ScatterAttrs{0, r})};
  return Status::Ok();
}

Status topK(Context& c, const Node& n, Outs& o) {
  TopKAttrs a;
  if (c.opset() < 10) {
    a.k = attrInt(n, "k", -1);
  } else {
    ASSIGN_OR_RETURN(Ints k, c.constInts(c.in(n, 1), "TopK k"));
    if (k.size() != 1) return unsupported(n, "K must hold one value");
    a.k = k[0];
  }
  a.axis = attrInt(n, "axis", -1);
  a.largest = attrInt(n, "largest", 1) != 0;
  a.sorted = attrInt(n, "sorted", 1) != 0;
  o = c.op("TopK", {c.in(n, 0)}, a, 2);
  return Status::Ok();
}

// NonZero's output length depends on the data: computed here when the input is a
// constant, otherwise refused.
Status nonZero(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  if (!c.isConstant(x)) {
    return unsupported(n, "its output shape depends on the input's values, which are known only at run time; gkrt "
                          "computes NonZero only on constants (freeze the input with --freeze NAME=file.npy)");
  }
  ASSIGN_OR_RETURN(HostTensor t, c.constant(x, "NonZero input"));
  const Shape& s = t.shape();
  const auto v = t.toFloats();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < t.size(); ++i) if (v[i] != 0.0f) hits.push_back(i);
  const int64_t nnz = static_cast<int64_t>(hits.size()), rank = static_cast<int64_t>(s.size());
  HostTensor out(DType::kInt64, {rank, nnz});
  std::vector<int64_t> idx;
  for (int64_t j = 0; j < nnz; ++j) {
    ops::unravel(hits[j], s, idx);
    for (int64_t d = 0; d < rank; ++d) out.as<int64_t>()[d * nnz + j] = idx[d];
  }
  o = {c.constant(out)};
  return Status::Ok();
}

// Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two
// axes; the mask is a constant.
Status trilu(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() < 2) return unsupported(n, "input needs rank >= 2, got " + shapeToString(xs));
  int64_t k = 0;
  if (c.present(n, 1)) {
    ASSIGN_OR_RETURN(Ints kv, c.constInts(c.in(n, 1), "Trilu k"));
    if (kv.size() != 1) return unsupported(n, "k must hold one value");
    k = kv[0];
  }
  const bool upper = attrInt(n, "upper", 1) != 0;
  if (c.isDynamic(x)) {  // the last two dims known at run time: the mask from two ranges
    const int64_t r = static_cast<int64_t>(xs.size());
    const Value dims = c.op1("Shape", {x});
    auto scalar = [&](int64_t v) {
      HostTensor t(DType::kInt64, {});
      t.as<int64_t>()[0] = v;
      return c.constant(t);
    };
    auto indices = [&](int64_t axis) {  // 0 .. dims[axis] - 1
      const Value d = c.op1("StridedSlice", {dims}, StridedSliceAttrs{{axis}, {axis + 1}, {0}, {1}});
      return c.op1("DynamicRange", {scalar(0), c.op1("Reshape", {d}, ShapeAttrs{{}}), scalar(1)});
    };
    const Value row = c.op1("ExpandDims", {indices(r - 2)}, AxesAttrs{{1}, false});
    const Value diff = c.op1("Sub", {indices(r - 1), row});  // [rows, cols]: j - i
    const Value keep = c.op1(upper ? "GreaterEqual" : "LessEqual", {diff, scalar(k)});
    o = {c.op1("Select", {keep, x, scalarLike(c, 0, x)})};
    return Status::Ok();
  }
  const int64_t rows = xs[xs.size() - 2], cols = xs.back();
  if (rows < 0 || cols < 0 || rows * cols > (int64_t{1} << 26)) {  // dims are at most 2^40: no overflow
    return unsupported(n, "the mask of the last two dims " + shapeToString(xs) + " must be static and at most 2^26 elements");
  }
  HostTensor mask(DType::kBool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask.as<uint8_t>()[i * cols + j] = upper ? j - i >= k : j - i <= k;
  o = {c.op1("Select", {c.constant(mask), x, scalarLike(c, 0, x)})};
  return Status::Ok();
}

Status eyeLike(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape xs = shapeOf(c, x);
  if (xs.size() != 2) return unsupported(n, "input must be 2-D, got " + shapeToString(xs));
  DType dt = dtypeOf(c, x);
  if (findAttr(n, "dtype")) {
    ASSIGN_OR_RETURN(dt, onnxDType(n, attrInt(n, "dtype", 1)));
  }
  const int64_t k = attrInt(n, "k", 0);
  if (!isStatic(xs) || xs[0] * xs[1] > (int64_t{1} << 26)) {
    return unsupported(n, "the input must be static and at most 2^26 elements, got " + shapeToString(xs));
  }
  HostTensor eye(dt, xs);
  for (int64_t i = 0; i < xs[0]; ++i)
    for (int64_t j = 0; j < xs[1]; ++j) ops::storeF(eye.data(), dt, i * xs[1] + j, j - i == k ? 1.0f : 0.0f);
  o = {c.constant(eye)};
  return Status::Ok();
}

// DepthToSpace / SpaceToDepth as Reshape -> Transpose -> Reshape.
Status depthToSpace(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape s = shapeOf(c, x);
  const int64_t b = attrInt(n, "blocksize", 0);
  if (s.size() != 4 || b < 1 || s[1] % (b * b) != 0) {
    return unsupported(n, "needs a 4-D input whose channels divide by blocksize^2, got " + shapeToString(s) +
                              " and blocksize " + std::to_string(b));
  }
  const int64_t N = s[0], C = s[1] / (b * b), H = s[2], W = s[3];
  const bool crd = attrString(n, "mode", "DCR") == "CRD";
  Value y = c.op1("Reshape", {x}, ShapeAttrs{crd ? Ints{N, C, b, b, H, W} : Ints{N, b, b, C, H, W}});
  y = c.op1("Transpose", {y}, PermAttrs{crd ? Ints{0, 1, 4, 2, 5, 3} : Ints{0, 3, 4, 1, 5, 2}});
  o = {c.op1("Reshape", {y}, ShapeAttrs{{N, C, H * b, W * b}})};
  return Status::Ok();
}
Status spaceToDepth(Context& c, const Node& n, Outs& o) {
  const Value x = c.in(n, 0);
  const Shape s = shapeOf(c, x);
  const int64_t b = attrInt(n, "blocksize", 0);
  if (s.size() != 4 || b < 1 || s[2] % b != 0 || s[3] % b != 0) {
    return unsupported(n, "needs a 4-D input whose H and W divide by blocksize, got " + shapeToString(s) +
                              " and blocksize " + std::to_string(b));
  }
  const int64_t N = s[0], C = s[1], H = s[2] / b, W = s[3] / b;
  Value y = c.op1("Reshape", {x}, ShapeAttrs{{N, C, H, b, W, b}});
  const bool crd = attrString(n, "mode", "DCR") == "CRD";
  y = c.op1("Transpose", {y}, PermAttrs{crd ? Ints{0, 1, 3, 5, 2, 4} : Ints{0, 3, 5, 1, 2, 4}});
  o = {c.op1("Reshape", {y}, ShapeAttrs{{N, C * b * b, H, W}})};
  return Status::Ok();
}

}  // namespace

void registerIndexingConverters(std::map<std::string, Converter>& t) {
  t["GatherElements"] = gatherElements;
  t["GatherND"] = gatherND;
  t["ScatterElements"] = scatterElements;
  t["Scatter"] = scatterElements;
  t["ScatterND"] = scatterND;
  t["TopK"] = topK;
  t["NonZero"] = nonZero;
  t["Trilu"] = trilu;
  t["EyeLike"] = eyeLike;
  t["DepthToSpace"] = depthToSpace;
  t["SpaceToDepth"] = spaceToDepth;
}

}  // namespace gkrt::onnx_import
