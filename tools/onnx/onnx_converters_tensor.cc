// ONNX shape and data-movement ops, constants and index ops.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <map>

#include "runtime/ir/value_offsets.h"
#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {

StatusOr<Ints> axesOf(Context& c, const Node& n, int input, int64_t since_opset) {
  if (c.opset() >= since_opset) {
    if (!c.present(n, input)) return Ints{};
    return c.constInts(c.in(n, input), "axes");
  }
  return attrInts(n, "axes");
}

namespace {

// ---- shape and data movement -------------------------------------------------------
Status reshape(Context& c, const Node& n, Outs& o) {
  Value x = c.in(n, 0);
  Ints shape;
  if (c.opset() < 5) {
    shape = attrInts(n, "shape");
  } else if (!c.isConstant(c.in(n, 1)) && c.isDynamic(c.in(n, 1))) {  // a shape computed from dynamic dims
    if (attrInt(n, "allowzero", 0)) return unsupported(n, "allowzero=1 with a computed shape is not supported");
    o = {c.op1("DynamicReshape", {x, c.in(n, 1)})};
    return Status::Ok();
  } else {
    ASSIGN_OR_RETURN(shape, c.constInts(c.in(n, 1), "Reshape shape"));
  }
  const Shape xs = shapeOf(c, x);
  if (c.isDynamic(x) && !attrInt(n, "allowzero", 0) && std::count(shape.begin(), shape.end(), 0)) {
    o = {c.op1("DynamicReshape", {x, c.ints(shape)})};  // 0 copies a dim only known at run time
    return Status::Ok();
  }
  if (!attrInt(n, "allowzero", 0)) {
    for (size_t d = 0; d < shape.size(); ++d) if (shape[d] == 0 && d < xs.size()) shape[d] = xs[d];
  }
  o = {c.op1("Reshape", {x}, ShapeAttrs{shape})};
  return Status::Ok();
}
Status flatten(Context& c, const Node& n, Outs& o) {
  const Shape xs = shapeOf(c, c.in(n, 0));
  int64_t axis = attrInt(n, "axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  if (c.isDynamic(c.in(n, 0)) && axis > 0) {  // outer = product of dims only known at run time
    Value dims = c.op1("StridedSlice", {c.op1("Shape", {c.in(n, 0)})}, StridedSliceAttrs{{0}, {axis}, {0}, {1}});
    Value outer = c.op1("ReduceProd", {dims}, AxesAttrs{{}, true});
    o = {c.op1("DynamicReshape", {c.in(n, 0), c.op1("Concat", {outer, c.ints({-1})}, AxisAttrs{0, false})})};
    return Status::Ok();
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis && d < static_cast<int64_t>(xs.size()); ++d) outer *= xs[d];
  o = {c.op1("Reshape", {c.in(n, 0)}, ShapeAttrs{{outer, -1}})};
  if (numElements(xs) == 0) o = {c.op1("Reshape", {c.in(n, 0)}, ShapeAttrs{{outer, 0}})};
  return Status::Ok();
}

Status squeeze(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints axes, axesOf(c, n, 1, 13));
  o = {c.op1("Squeeze", {c.in(n, 0)}, AxesAttrs{axes, false})};
  return Status::Ok();
}
Status unsqueeze(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints axes, axesOf(c, n, 1, 13));
  o = {c.op1("ExpandDims", {c.in(n, 0)}, AxesAttrs{axes, false})};
  return Status::Ok();
}
Status transpose(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Transpose", {c.in(n, 0)}, PermAttrs{attrInts(n, "perm")})};
  return Status::Ok();
}
Status concat(Context& c, const Node& n, Outs& o) {
  std::vector<Value> ins;
  for (int k = 0; k < n.input_size(); ++k) if (c.present(n, k)) ins.push_back(c.in(n, k));
  o = {c.op1("Concat", ins, AxisAttrs{attrInt(n, "axis", 0), false})};
  return Status::Ok();
}
Status split(Context& c, const Node& n, Outs& o) {
  SplitAttrs a;
  a.axis = attrInt(n, "axis", 0);
  if (c.opset() >= 13 && c.present(n, 1)) {
    ASSIGN_OR_RETURN(a.sizes, c.constInts(c.in(n, 1), "Split split"));
  } else if (c.opset() < 13) {
    a.sizes = attrInts(n, "split");
  }
  const Shape xs = shapeOf(c, c.in(n, 0));
  const int parts = n.output_size();
  if (a.sizes.empty() && c.opset() >= 18 && findAttr(n, "num_outputs")) {  // last chunk may be smaller
    auto axis = normalizeAxis(a.axis, static_cast<int64_t>(xs.size()));
    if (!axis.ok()) return axis.status();
    const int64_t dim = xs[*axis], chunk = (dim + parts - 1) / parts;
    for (int k = 0; k < parts; ++k) a.sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
  }
  o = c.op("Split", {c.in(n, 0)}, a, parts);
  return Status::Ok();
}
// Starts and ends computed at run (a Loop body slicing with its counter, x[i : i + k]):
// SliceAtRun when ends - starts is a constant, so the output shape is not data-dependent.
// Returns false (nothing emitted) when the bounds do not have that form.
StatusOr<bool> sliceAtRun(Context& c, const Node& n, Outs& o) {
  if (c.opset() < 10 || !c.present(n, 1) || !c.present(n, 2)) return false;
  const Value starts = c.in(n, 1), ends = c.in(n, 2);
  if (c.isConstant(starts) && c.isConstant(ends)) return false;
  const std::optional<Ints> diff = ir::constantDifference(c.builder().graph(), starts.id, ends.id);
  if (!diff) return false;
  SliceAtRunAttrs a;
  if (c.present(n, 3)) {
    ASSIGN_OR_RETURN(a.axes, c.constInts(c.in(n, 3), "Slice axes (with starts and ends computed at run)"));
  }
  if (c.present(n, 4)) {
    ASSIGN_OR_RETURN(a.steps, c.constInts(c.in(n, 4), "Slice steps (with starts and ends computed at run)"));
  }
  for (size_t j = 0; j < diff->size(); ++j) {
    const int64_t d = (*diff)[j], step = j < a.steps.size() ? a.steps[j] : 1;
    if (step == 0) return unsupported(n, "Slice step 0");
    const int64_t span = step > 0 ? d : -d, stride = step > 0 ? step : -step;
    a.sizes.push_back(span > 0 ? (span + stride - 1) / stride : 0);
  }
  o = {c.op1("SliceAtRun", {c.in(n, 0), starts, ends}, a)};
  return true;
}

Status slice(Context& c, const Node& n, Outs& o) {
  StridedSliceAttrs a;
  bool computed = false;  // starts/ends/... computed from dynamic dims
  for (int k = 1; k < n.input_size() && c.opset() >= 10; ++k) computed = computed || (c.present(n, k) && !c.isConstant(c.in(n, k)) && c.isDynamic(c.in(n, k)));
  if (computed) {
    std::vector<Value> ins;
    for (int k = 0; k < n.input_size() && k < 5; ++k) ins.push_back(c.in(n, k));
    o = {c.op1("DynamicSlice", ins)};
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(bool at_run, sliceAtRun(c, n, o));
  if (at_run) return Status::Ok();
  if (c.opset() < 10) {
    a.begins = attrInts(n, "starts");
    a.ends = attrInts(n, "ends");
    a.axes = attrInts(n, "axes");
  } else {
    // Neither constant nor ends = starts + a constant: the slice's length would depend on data.
    ASSIGN_OR_RETURN(a.begins, c.constInts(c.in(n, 1), "Slice starts (or ends - starts, for bounds computed at run)"));
    ASSIGN_OR_RETURN(a.ends, c.constInts(c.in(n, 2), "Slice ends"));
    if (c.present(n, 3)) {
      ASSIGN_OR_RETURN(a.axes, c.constInts(c.in(n, 3), "Slice axes"));
    }
    if (c.present(n, 4)) {
      ASSIGN_OR_RETURN(a.steps, c.constInts(c.in(n, 4), "Slice steps"));
    }
  }
  o = {c.op1("StridedSlice", {c.in(n, 0)}, a)};
  return Status::Ok();
}
Status gather(Context& c, const Node& n, Outs& o) {
  o = {c.op1("Gather", {c.in(n, 0), c.in(n, 1)}, AxisAttrs{attrInt(n, "axis", 0), false})};
  return Status::Ok();
}
Status expand(Context& c, const Node& n, Outs& o) {
  if (c.isDynamic(c.in(n, 0)) || (!c.isConstant(c.in(n, 1)) && c.isDynamic(c.in(n, 1)))) {
    o = {c.op1("DynamicBroadcastTo", {c.in(n, 0), c.in(n, 1)})};
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Ints shape, c.constInts(c.in(n, 1), "Expand shape"));
  ASSIGN_OR_RETURN(Shape target, broadcastShapes(shapeOf(c, c.in(n, 0)), shape));
  o = {c.op1("BroadcastTo", {c.in(n, 0)}, ShapeAttrs{target})};
  return Status::Ok();
}
Status tile(Context& c, const Node& n, Outs& o) {
  if (!c.isConstant(c.in(n, 1)) && c.isDynamic(c.in(n, 1))) {
    o = {c.op1("DynamicTile", {c.in(n, 0), c.in(n, 1)})};
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Ints repeats, c.constInts(c.in(n, 1), "Tile repeats"));
  o = {c.op1("Tile", {c.in(n, 0)}, TileAttrs{repeats})};
  return Status::Ok();
}
Status pad(Context& c, const Node& n, Outs& o) {
  PadAttrs a;
  const std::string mode = attrString(n, "mode", "constant");
  if (mode == "reflect") a.mode = PadMode::kReflect;
  else if (mode == "edge") a.mode = PadMode::kEdge;
  else if (mode != "constant") return unsupported(n, "mode '" + mode + "' is not supported");
  const size_t rank = shapeOf(c, c.in(n, 0)).size();
  if (c.opset() < 11) {
    a.pads = attrInts(n, "pads");
    a.value = attrFloat(n, "value", 0.0f);
  } else {
    ASSIGN_OR_RETURN(Ints pads, c.constInts(c.in(n, 1), "Pad pads"));
    if (c.present(n, 2)) {
      ASSIGN_OR_RETURN(a.value, c.constFloat(c.in(n, 2), "Pad constant_value"));
    }
    if (c.present(n, 3)) {  // axes (opset 18): spread the pads over those axes
      ASSIGN_OR_RETURN(Ints axes, c.constInts(c.in(n, 3), "Pad axes"));
      if (pads.size() != 2 * axes.size()) {
        return makeError(StatusCode::kInvalidModel, "Pad: ", pads.size(), " pads for ", axes.size(),
                         " axes; ONNX needs two per axis (begins, then ends)");
      }
      Ints full(2 * rank, 0);
      for (size_t k = 0; k < axes.size(); ++k) {
        const int64_t ax = axes[k] < 0 ? axes[k] + static_cast<int64_t>(rank) : axes[k];
        if (ax < 0 || ax >= static_cast<int64_t>(rank)) return unsupported(n, "axis out of range");
        full[ax] = pads[k];
        full[ax + rank] = pads[k + axes.size()];
      }
      pads = full;
    }
    a.pads = pads;
  }
  o = {c.op1("Pad", {c.in(n, 0)}, a)};
  return Status::Ok();
}
Status shape(Context& c, const Node& n, Outs& o) {
  const Shape s = shapeOf(c, c.in(n, 0));
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = attrInt(n, "start", 0), end = attrInt(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  if (c.isDynamic(c.in(n, 0))) {  // dims known at run time: keep the op
    Value dims = c.op1("Shape", {c.in(n, 0)});
    o = {start == 0 && end == r ? dims : c.op1("StridedSlice", {dims}, StridedSliceAttrs{{start}, {end}, {0}, {1}})};
    return Status::Ok();
  }
  o = {c.ints(Ints(s.begin() + start, s.begin() + end))};
  return Status::Ok();
}
Status size(Context& c, const Node& n, Outs& o) {
  if (c.isDynamic(c.in(n, 0))) {
    o = {c.op1("ReduceProd", {c.op1("Shape", {c.in(n, 0)})}, AxesAttrs{{}, false})};
    return Status::Ok();
  }
  HostTensor t(DType::kInt64, {});
  t.as<int64_t>()[0] = numElements(shapeOf(c, c.in(n, 0)));
  o = {c.constant(t)};
  return Status::Ok();
}
Status constant(Context& c, const Node& n, Outs& o) {
  if (const auto* a = findAttr(n, "value")) {
    ASSIGN_OR_RETURN(HostTensor t, tensorFromProto(a->t(), "."));
    o = {c.constant(t)};
  } else if (const auto* f = findAttr(n, "value_float")) {
    o = {c.constant(HostTensor::fromFloats({}, {f->f()}))};
  } else if (const auto* fs = findAttr(n, "value_floats")) {
    o = {c.constant(HostTensor::fromFloats({fs->floats_size()}, {fs->floats().begin(), fs->floats().end()}))};
  } else if (const auto* i = findAttr(n, "value_int")) {
    HostTensor t(DType::kInt64, {});
    t.as<int64_t>()[0] = i->i();
    o = {c.constant(t)};
  } else if (const auto* is = findAttr(n, "value_ints")) {
    o = {c.ints(Ints(is->ints().begin(), is->ints().end()))};
  } else {
    return unsupported(n, "only value, value_float(s) and value_int(s) are supported");
  }
  return Status::Ok();
}
Status constantOfShape(Context& c, const Node& n, Outs& o) {
  HostTensor value = HostTensor::fromFloats({1}, {0.0f});
  if (const auto* a = findAttr(n, "value")) {
    ASSIGN_OR_RETURN(value, tensorFromProto(a->t(), "."));
  }
  const Value v = c.constant(value);
  if (!c.isConstant(c.in(n, 0)) && c.isDynamic(c.in(n, 0))) {
    o = {c.op1("DynamicFill", {v, c.in(n, 0)})};
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Ints shape, c.constInts(c.in(n, 0), "ConstantOfShape shape"));
  o = {c.op1("FillV2", {v}, ShapeAttrs{shape})};
  return Status::Ok();
}
Status range(Context& c, const Node& n, Outs& o) {
  for (int k = 0; k < 3; ++k) {
    if (!c.isConstant(c.in(n, k)) && c.isDynamic(c.in(n, k))) {
      o = {c.op1("DynamicRange", {c.in(n, 0), c.in(n, 1), c.in(n, 2)})};
      return Status::Ok();
    }
  }
  ASSIGN_OR_RETURN(HostTensor start, c.constant(c.in(n, 0), "Range start"));
  ASSIGN_OR_RETURN(HostTensor limit, c.constant(c.in(n, 1), "Range limit"));
  ASSIGN_OR_RETURN(HostTensor delta, c.constant(c.in(n, 2), "Range delta"));
  const double s = start.toFloats()[0], l = limit.toFloats()[0], d = delta.toFloats()[0];
  if (d == 0) return unsupported(n, "delta is 0");
  const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  if (count > (int64_t{1} << 30)) return unsupported(n, "more than 2^30 elements");
  HostTensor out(start.dtype(), {count});
  for (int64_t i = 0; i < count; ++i) {
    if (start.dtype() == DType::kInt64) out.as<int64_t>()[i] = start.as<int64_t>()[0] + i * delta.as<int64_t>()[0];
    else ops::storeF(out.data(), out.dtype(), i, static_cast<float>(s + i * d));
  }
  o = {c.constant(out)};
  return Status::Ok();
}
Status oneHot(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(float depth, c.constFloat(c.in(n, 1), "OneHot depth"));
  ASSIGN_OR_RETURN(HostTensor values, c.constant(c.in(n, 2), "OneHot values"));
  if (values.size() != 2) return unsupported(n, "values must hold 2 values (off, on)");
  const OneHotAttrs a{static_cast<int64_t>(depth), attrInt(n, "axis", -1), 1.0f, 0.0f};
  if (values.dtype() == DType::kFloat32) {
    const auto v = values.toFloats();
    o = {c.op1("OneHot", {c.in(n, 0)}, OneHotAttrs{a.depth, a.axis, v[1], v[0]})};
    return Status::Ok();
  }
  // Other value types: a 0/1 mask selecting between the values, exact in their type.
  HostTensor off(values.dtype(), {}), on(values.dtype(), {});
  const size_t es = dtypeSize(values.dtype());
  std::memcpy(off.data(), values.data(), es);
  std::memcpy(on.data(), static_cast<const char*>(values.data()) + es, es);
  Value mask = c.op1("Cast", {c.op1("OneHot", {c.in(n, 0)}, a)}, CastAttrs{DType::kBool});
  o = {c.op1("Select", {mask, c.constant(on), c.constant(off)})};
  return Status::Ok();
}
Status cumSum(Context& c, const Node& n, Outs& o) {
  ASSIGN_OR_RETURN(Ints axis, c.constInts(c.in(n, 1), "CumSum axis"));
  if (axis.size() != 1) return unsupported(n, "axis must hold one value");
  o = {c.op1("CumSum", {c.in(n, 0)}, CumSumAttrs{axis[0], attrInt(n, "exclusive", 0) != 0, attrInt(n, "reverse", 0) != 0})};
  return Status::Ok();
}

}  // namespace

void registerTensorConverters(std::map<std::string, Converter>& t) {
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Gather"] = gather;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Pad"] = pad;
  t["Shape"] = shape;
  t["Size"] = size;
  t["Constant"] = constant;
  t["ConstantOfShape"] = constantOfShape;
  t["Range"] = range;
  t["OneHot"] = oneHot;
  t["CumSum"] = cumSum;
}

}  // namespace gkrt::onnx_import
