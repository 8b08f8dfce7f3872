// Ops of models with dynamic dims: Shape, and ONNX ops whose shape operands are
// tensors computed from input shapes (DynamicReshape, DynamicBroadcastTo, DynamicSlice,
// DynamicFill, DynamicTile, DynamicResize, DynamicRange).
//
// Once a session knows its input shapes, those operands are known values (shape
// arithmetic on Shape's output, computed at compile) and each op lowers to its static
// form (Reshape, BroadcastTo, StridedSlice, FillV2, Tile, Resize) through `lower`: the
// session rewrites it then, so fusion and the backends only ever see static ops. The
// shape rule and reference kernel below are that static op's, applied to the lowered
// node, so both forms compute the same thing by construction.
#include <algorithm>
#include <cmath>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

// The integer values of shape operand k (int32/int64), from its known bytes.
StatusOr<Ints> operandInts(const ir::Node& n, const In& in, size_t k, const char* what) {
  if (k >= in.size() || !in[k]) return Ints{};
  const TensorType& t = *in[k];
  if (t.dtype != DType::kInt64 && t.dtype != DType::kInt32) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " ", what, " must be int64 or int32, got ",
                     dtypeName(t.dtype));
  }
  if (!t.value) {
    return makeError(StatusCode::kUnsupported, n.op->name, " ", what,
                     " is computed from tensor data, not from input shapes: its output shape cannot be known "
                     "before the run (give the model's inputs fixed sizes with --input-shape)");
  }
  const int64_t count = numElements(t.shape);
  Ints v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    v[i] = t.dtype == DType::kInt64 ? reinterpret_cast<const int64_t*>(t.value->data)[i]
                                    : reinterpret_cast<const int32_t*>(t.value->data)[i];
  }
  return v;
}

// ---- lowering rules ---------------------------------------------------------------
// ONNX Reshape: 0 copies the input's dim (allowzero=0), one -1 is inferred.
Status lowerReshape(const ir::Node& n, const In& in, LoweredOp& out) {
  ASSIGN_OR_RETURN(Ints shape, operandInts(n, in, 1, "shape"));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      if (d >= in[0]->shape.size()) {
        return makeError(StatusCode::kInvalidArgument, "DynamicReshape: shape entry ", d, " is 0 but the input ",
                         shapeToString(in[0]->shape), " has no dim ", d);
      }
      shape[d] = in[0]->shape[d];
    }
  }
  out = {"Reshape", ShapeAttrs{shape}, {0}};
  return Status::Ok();
}

// ONNX Expand: the input broadcast against the shape operand (either side may be 1).
Status lowerBroadcastTo(const ir::Node& n, const In& in, LoweredOp& out) {
  ASSIGN_OR_RETURN(Ints shape, operandInts(n, in, 1, "shape"));
  ASSIGN_OR_RETURN(Shape target, broadcastShapes(in[0]->shape, shape));
  out = {"BroadcastTo", ShapeAttrs{target}, {0}};
  return Status::Ok();
}

// ONNX Slice(x, starts, ends, axes?, steps?).
Status lowerSlice(const ir::Node& n, const In& in, LoweredOp& out) {
  StridedSliceAttrs a;
  ASSIGN_OR_RETURN(a.begins, operandInts(n, in, 1, "starts"));
  ASSIGN_OR_RETURN(a.ends, operandInts(n, in, 2, "ends"));
  ASSIGN_OR_RETURN(a.axes, operandInts(n, in, 3, "axes"));
  ASSIGN_OR_RETURN(a.steps, operandInts(n, in, 4, "steps"));
  out = {"StridedSlice", a, {0}};
  return Status::Ok();
}

// ONNX ConstantOfShape: input 0 holds the one value, input 1 the shape.
Status lowerFill(const ir::Node& n, const In& in, LoweredOp& out) {
  ASSIGN_OR_RETURN(Ints shape, operandInts(n, in, 1, "shape"));
  out = {"FillV2", ShapeAttrs{shape}, {0}};
  return Status::Ok();
}

Status lowerTile(const ir::Node& n, const In& in, LoweredOp& out) {
  ASSIGN_OR_RETURN(Ints repeats, operandInts(n, in, 1, "repeats"));
  out = {"Tile", TileAttrs{repeats}, {0}};
  return Status::Ok();
}

// Resize of H and W: to the sizes operand ({N, C, H, W} or {H, W}) when present, else
// by the attributes' scales (floor(dim * scale), as ONNX).
Status lowerResize(const ir::Node& n, const In& in, LoweredOp& out) {
  ResizeAttrs a = n.attrs.get<ResizeAttrs>();
  const Shape& xs = in[0]->shape;
  if (xs.size() != 4) {
    return makeError(StatusCode::kInvalidArgument, "DynamicResize needs a 4-D NCHW input, got ", shapeToString(xs));
  }
  ASSIGN_OR_RETURN(Ints sizes, operandInts(n, in, 1, "sizes"));
  if (sizes.size() == 4) {
    if (sizes[0] != xs[0] || sizes[1] != xs[1]) {
      return makeError(StatusCode::kUnsupported, "DynamicResize: only H and W may be resized (input ",
                       shapeToString(xs), ", sizes ", shapeToString(sizes), ")");
    }
    a.sizes = {sizes[2], sizes[3]};
  } else if (sizes.size() == 2) {
    a.sizes = sizes;
  } else if (sizes.empty() && a.scale_h > 0 && a.scale_w > 0) {
    const double h = std::floor(static_cast<double>(xs[2]) * a.scale_h), w = std::floor(static_cast<double>(xs[3]) * a.scale_w);
    if (!(h < 1e15 && w < 1e15)) {  // a cast of a larger (or NaN) double to int64 is undefined
      return makeError(StatusCode::kInvalidArgument, "DynamicResize scales ", a.scale_h, "/", a.scale_w,
                       " make an output beyond 1e15 on an axis");
    }
    a.sizes = {static_cast<int64_t>(h), static_cast<int64_t>(w)};
  } else {
    return makeError(StatusCode::kInvalidArgument, "DynamicResize needs sizes of 4 or 2 values or both scales, got ",
                     sizes.size(), " sizes");
  }
  out = {"Resize", a, {0}};
  return Status::Ok();
}

// ---- shared rules: those of the lowered op ------------------------------------------
StatusOr<ir::Node> loweredNode(const ir::Node& n, const In& in, In& lowered_in, LoweredOp& l) {
  RETURN_IF_ERROR(n.op->lower(n, in, l));
  ir::Node m;
  m.name = n.name;
  m.op = findOp(l.op);
  if (!m.op) {
    return makeError(StatusCode::kUnsupported, n.op->name, " lowers to ", l.op, ", which is not in this build");
  }
  m.attrs = l.attrs;
  lowered_in.clear();
  for (int k : l.inputs) lowered_in.push_back(in[size_t(k)]);
  return m;
}

Status dtypeOfInput0(const ir::Node& n, const In& in, std::vector<DType>& out) {
  out = {in[0]->dtype};
  return Status::Ok();
}

Status shapeLowered(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  In lowered_in;
  LoweredOp l;
  ASSIGN_OR_RETURN(ir::Node m, loweredNode(n, in, lowered_in, l));
  return m.op->shape_rule(m, lowered_in, out);
}

Status kernelLowered(const KernelContext& c) {
  std::vector<TensorType> types(c.inputs.size());
  std::vector<ir::ConstData> bytes(c.inputs.size());
  In in(c.inputs.size(), nullptr);
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    if (!c.in(k).present()) continue;
    bytes[k].data = static_cast<const uint8_t*>(c.in(k).data);
    bytes[k].size = static_cast<size_t>(c.in(k).size()) * dtypeSize(c.in(k).dtype);
    types[k] = {c.in(k).dtype, c.in(k).shape, &bytes[k]};
    in[k] = &types[k];
  }
  In lowered_in;
  LoweredOp l;
  ASSIGN_OR_RETURN(ir::Node m, loweredNode(c.node, in, lowered_in, l));
  std::vector<TensorView> inputs;
  for (int k : l.inputs) inputs.push_back(c.in(size_t(k)));
  return m.op->reference({m, inputs, c.outputs});
}

// ---- Shape --------------------------------------------------------------------------
Status dtypeShape(const ir::Node& n, const In& in, std::vector<DType>& out) {
  out = {DType::kInt64};
  return Status::Ok();
}
Status shapeShape(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  out = {{static_cast<int64_t>(in[0]->shape.size())}};
  return Status::Ok();
}
Status shapeKernel(const KernelContext& c) {
  const Shape& s = c.in(0).shape;
  std::copy(s.begin(), s.end(), c.out(0).as<int64_t>());
  return Status::Ok();
}

// ---- DynamicRange: ONNX Range(start, limit, delta), count = max(0, ceil((limit-start)/delta))
struct RangeParams { double start, delta; int64_t count; };
StatusOr<RangeParams> rangeParams(const ir::Node& n, const std::vector<const void*>& data, DType dt) {
  const double s = loadF(data[0], dt, 0), l = loadF(data[1], dt, 0), d = loadF(data[2], dt, 0);
  if (isInteger(dt)) {  // exact in the integer type
    int64_t si = 0, li = 0, di = 0;
    withIntegerType(dt, [&](auto tag) {
      using T = decltype(tag);
      si = static_cast<int64_t>(*static_cast<const T*>(data[0]));
      li = static_cast<int64_t>(*static_cast<const T*>(data[1]));
      di = static_cast<int64_t>(*static_cast<const T*>(data[2]));
    });
    if (di == 0) return makeError(StatusCode::kInvalidArgument, "DynamicRange: delta is 0");
    const int64_t span = li - si;
    const int64_t count = span == 0 || (span > 0) != (di > 0) ? 0 : (span + di + (di > 0 ? -1 : 1)) / di;
    return RangeParams{static_cast<double>(si), static_cast<double>(di), std::max<int64_t>(0, count)};
  }
  if (d == 0) return makeError(StatusCode::kInvalidArgument, "DynamicRange: delta is 0");
  const double c = std::ceil((l - s) / d);
  if (!(c < double(int64_t{1} << 40))) return makeError(StatusCode::kInvalidArgument, "DynamicRange: too many elements");
  return RangeParams{s, d, std::max<int64_t>(0, static_cast<int64_t>(c))};
}
Status dtypeRange(const ir::Node& n, const In& in, std::vector<DType>& out) {
  RETURN_IF_ERROR(requireSameDType(n, in, 0, 3));
  out = {in[0]->dtype};
  return Status::Ok();
}
Status shapeRange(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  std::vector<const void*> data;
  for (size_t k = 0; k < 3; ++k) {
    if (numElements(in[k]->shape) != 1) {
      return makeError(StatusCode::kInvalidArgument, "DynamicRange input ", k, " must hold one value");
    }
    if (!in[k]->value) {
      return makeError(StatusCode::kUnsupported, "DynamicRange input ", k, " is computed from tensor data: its "
                       "length cannot be known before the run (give the model's inputs fixed sizes with --input-shape)");
    }
    data.push_back(in[k]->value->data);
  }
  ASSIGN_OR_RETURN(RangeParams p, rangeParams(n, data, in[0]->dtype));
  out = {{p.count}};
  return Status::Ok();
}
Status rangeKernel(const KernelContext& c) {
  ASSIGN_OR_RETURN(RangeParams p, rangeParams(c.node, {c.in(0).data, c.in(1).data, c.in(2).data}, c.in(0).dtype));
  const MutableTensorView& y = c.out(0);
  if (p.count != y.size()) {
    return makeError(StatusCode::kInvalidArgument, "DynamicRange: ", p.count, " values for an output of ", y.size());
  }
  for (int64_t i = 0; i < p.count; ++i) {
    if (isInteger(y.dtype)) {
      const int64_t v = static_cast<int64_t>(p.start) + i * static_cast<int64_t>(p.delta);
      withIntegerType(y.dtype, [&](auto tag) { y.as<decltype(tag)>()[i] = static_cast<decltype(tag)>(v); });
    } else {
      storeF(y.data, y.dtype, i, static_cast<float>(p.start + static_cast<double>(i) * p.delta));
    }
  }
  return Status::Ok();
}

OpDef loweringOp(const char* name, int min_in, int max_in, AttrKind kind, LowerRule lower, const char* summary) {
  OpDef d{name, OpClass::kOpaque, min_in, max_in, 1, 1, kind, dtypeOfInput0, shapeLowered, kernelLowered, summary};
  d.lower = lower;
  return d;
}

}  // namespace

void registerDynamicShapeOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Shape")) {
    OpDef d{"Shape", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kNone, dtypeShape, shapeShape, shapeKernel,
            "int64 dims of the input (reads its shape only)"};
    d.reads_only_shapes = true;
    t.push_back(d);
  }
  if constexpr (opSelected("DynamicReshape")) t.push_back(loweringOp("DynamicReshape", 2, 2, AttrKind::kNone, lowerReshape,
      "ONNX Reshape(x, shape): 0 copies a dim, -1 is inferred; becomes Reshape once shape is known"));
  if constexpr (opSelected("DynamicBroadcastTo")) t.push_back(loweringOp("DynamicBroadcastTo", 2, 2, AttrKind::kNone, lowerBroadcastTo,
      "ONNX Expand(x, shape); becomes BroadcastTo once shape is known"));
  if constexpr (opSelected("DynamicSlice")) t.push_back(loweringOp("DynamicSlice", 3, 5, AttrKind::kNone, lowerSlice,
      "ONNX Slice(x, starts, ends, axes?, steps?); becomes StridedSlice once they are known"));
  if constexpr (opSelected("DynamicFill")) t.push_back(loweringOp("DynamicFill", 2, 2, AttrKind::kNone, lowerFill,
      "ONNX ConstantOfShape: value (one element) filled to shape; becomes FillV2 once shape is known"));
  if constexpr (opSelected("DynamicTile")) t.push_back(loweringOp("DynamicTile", 2, 2, AttrKind::kNone, lowerTile,
      "ONNX Tile(x, repeats); becomes Tile once repeats are known"));
  if constexpr (opSelected("DynamicResize")) t.push_back(loweringOp("DynamicResize", 1, 2, AttrKind::kResize, lowerResize,
      "ONNX Resize of NCHW H and W by scales (attributes) or to sizes (input 1); becomes Resize"));
  if constexpr (opSelected("DynamicRange")) t.push_back({"DynamicRange", OpClass::kOpaque, 3, 3, 1, 1, AttrKind::kNone,
      dtypeRange, shapeRange, rangeKernel, "ONNX Range(start, limit, delta): start + i * delta while short of limit"});
}

}  // namespace gkrt::ops
