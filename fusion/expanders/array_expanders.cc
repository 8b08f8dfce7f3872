// Expanders of shape and data-movement ops, counting ops and random ops.
#include <map>

#include "fusion/expander.h"

namespace gkrt::expanders {
namespace {

ExpandResult expandToOutputShape(Emitter& e) {  // ExpandDims, Squeeze, IdentityMath: a Reshape
  return e.outputs({e.reshape(e.in(0), e.t(e.node().outputs[0]).shape)});
}

// Tile is a BroadcastTo when every tiled axis has size 1.
ExpandResult expandTile(Emitter& e) {
  const Ints& m = e.attrs<TileAttrs>().multiples;
  Shape x = e.shape(e.in(0));
  x.insert(x.begin(), m.size() - x.size(), 1);
  for (size_t d = 0; d < m.size(); ++d) if (m[d] != 1 && x[d] != 1) return std::nullopt;
  const int src = x.size() == e.shape(e.in(0)).size() ? e.in(0) : e.reshape(e.in(0), x);
  return e.outputs({e.op("BroadcastTo", {src}, ShapeAttrs{e.t(e.node().outputs[0]).shape})});
}

ExpandResult expandSlice(Emitter& e) {
  const auto& a = e.attrs<SliceAttrs>();
  const Shape& s = e.shape(e.in(0));
  StridedSliceAttrs ss;
  for (size_t d = 0; d < s.size(); ++d) {
    ss.begins.push_back(a.begins[d]);
    ss.ends.push_back(a.sizes[d] == -1 ? s[d] : a.begins[d] + a.sizes[d]);
    ss.axes.push_back(static_cast<int64_t>(d));
    ss.steps.push_back(1);
  }
  return e.outputs({e.op("StridedSlice", {e.in(0)}, ss)});
}

ExpandResult expandFillV2(Emitter& e) {
  return e.outputs({e.op("BroadcastTo", {e.reshape(e.in(0), {})}, ShapeAttrs{e.attrs<ShapeAttrs>().shape})});
}

// Insert an axis after `axis`, broadcast it to `repeats`, fold it back.
ExpandResult expandRepeatInterleave(Emitter& e) {
  const auto& a = e.attrs<RepeatAttrs>();
  Shape s = e.shape(e.in(0));
  auto axis = normalizeAxis(a.axis, static_cast<int64_t>(s.size()));
  if (!axis.ok()) return std::nullopt;
  Shape widened = s;
  widened.insert(widened.begin() + *axis + 1, 1);
  Shape target = widened;
  target[*axis + 1] = a.repeats;
  const int b = e.op("BroadcastTo", {e.reshape(e.in(0), widened)}, ShapeAttrs{target});
  return e.outputs({e.reshape(b, e.t(e.node().outputs[0]).shape)});
}

ExpandResult expandEqualCount(Emitter& e) {
  const int eq = e.cast(e.op("Equal", {e.in(0), e.in(1)}), DType::kFloat32);
  const int n = e.reshape(e.reduceSum(eq, {}, false), {1});
  return e.outputs({e.t(e.in(0)).dtype == DType::kFloat32 ? n : e.cast(n, e.t(e.in(0)).dtype)});
}

ExpandResult expandSquareSumAll(Emitter& e) {
  return e.outputs({e.reduceSum(e.mul(e.in(0), e.in(0)), {}, false), e.reduceSum(e.mul(e.in(1), e.in(1)), {}, false)});
}

// Only the value output is used: a plain ReduceMax/ReduceMin.
template <bool kMax> ExpandResult expandArgWithValue(Emitter& e) {
  if (e.outputUsed(0) || e.node().outputs.size() < 2) return std::nullopt;
  const auto& a = e.attrs<AxisAttrs>();
  const int v = e.op(kMax ? "ReduceMax" : "ReduceMin", {e.in(0)}, AxesAttrs{{a.axis}, a.keep_dims});
  // The index output is dead; give it a value of the right shape anyway.
  const int idx = e.op("BroadcastTo", {e.cast(e.scalar(0, e.in(0)), DType::kInt64)},
                       ShapeAttrs{e.t(e.node().outputs[0]).shape});
  return e.outputs({idx, v});
}

// MindSpore's Dropout substitution: mask = Cast(UniformReal(seed) < keep).
ExpandResult expandDropout(Emitter& e) {
  const auto& a = e.attrs<DropoutAttrs>();
  const int x = e.in(0);
  const int u = e.op("UniformReal", {}, StandardNormalAttrs{e.shape(x), a.seed});
  const int mask = e.cast(e.op("Less", {u, e.scalar(a.keep_prob, u)}), e.t(x).dtype);
  std::vector<int> outs = {e.mulScalar(e.mul(x, mask), 1.0f / a.keep_prob), mask};
  outs.resize(e.node().outputs.size());
  return e.outputs(outs);
}

// Box-Muller over pairs of UniformReal draws, in the reference kernel's draw order.
ExpandResult expandStandardNormal(Emitter& e) {
  const auto& a = e.attrs<StandardNormalAttrs>();
  const int64_t n = numElements(a.shape), pairs = (n + 1) / 2;
  if (n == 0) return std::nullopt;
  const int u = e.op("UniformReal", {}, StandardNormalAttrs{{pairs, 2}, a.seed});
  const int u1 = e.sub(e.scalar(1, u), e.op("StridedSlice", {u}, StridedSliceAttrs{{0}, {1}, {1}, {1}}));
  const int u2 = e.op("StridedSlice", {u}, StridedSliceAttrs{{1}, {2}, {1}, {1}});
  const int r = e.sqrt(e.mulScalar(e.log(u1), -2.0f));
  const int angle = e.mulScalar(u2, 6.283185307179586f);
  const int z = e.op("Concat", {e.mul(r, e.op("Cos", {angle})), e.mul(r, e.op("Sin", {angle}))}, AxisAttrs{1, false});
  const int flat = e.op("StridedSlice", {e.reshape(z, {2 * pairs})}, StridedSliceAttrs{{0}, {n}, {0}, {1}});
  return e.outputs({e.reshape(flat, a.shape)});
}

}  // namespace

void registerArrayExpanders(std::map<std::string, ExpanderFn>& m) {
  m["ExpandDims"] = expandToOutputShape;
  m["Squeeze"] = expandToOutputShape;
  m["IdentityMath"] = expandToOutputShape;
  m["Tile"] = expandTile;
  m["Slice"] = expandSlice;
  m["FillV2"] = expandFillV2;
  m["RepeatInterleaveInt"] = expandRepeatInterleave;
  m["EqualCount"] = expandEqualCount;
  m["SquareSumAll"] = expandSquareSumAll;
  m["ArgMaxWithValue"] = expandArgWithValue<true>;
  m["ArgMinWithValue"] = expandArgWithValue<false>;
  m["Dropout"] = expandDropout;
  m["StandardNormal"] = expandStandardNormal;
}

}  // namespace gkrt::expanders
