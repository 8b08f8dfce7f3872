// Softmax family, LayerNorm, RmsNorm, BatchNorm (inference), their gradients and the
// cross-entropy losses. Statistics accumulate in double.
#include <cmath>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {
namespace {

Status softmaxAxis(const ir::Node& n, const Shape& s, int64_t* axis) {
  auto a = normalizeAxis(n.attrs.get<AxisAttrs>().axis, static_cast<int64_t>(s.size()));
  if (!a.ok()) return a.status().withContext(n.op->name);
  *axis = *a;
  return Status::Ok();
}

Status shapeSoftmax(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  int64_t axis;
  RETURN_IF_ERROR(softmaxAxis(n, in[0]->shape, &axis));
  for (size_t k = 1; k < in.size(); ++k) {
    if (in[k]->shape != in[0]->shape) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " inputs differ in shape: ",
                       shapeToString(in[0]->shape), " vs ", shapeToString(in[k]->shape));
    }
  }
  out = {in[0]->shape};
  return Status::Ok();
}

// Runs fn(row_offset, stride, extent) for each 1-D line along the axis.
template <class Fn> void forEachLine(const Shape& s, int64_t axis, Fn&& fn) {
  const AxisSplit sp = s.empty() ? AxisSplit{1, 1, 1} : splitAtAxis(s, axis);
  for (int64_t o = 0; o < sp.outer; ++o)
    for (int64_t i = 0; i < sp.inner; ++i) fn(o * sp.extent * sp.inner + i, sp.inner, sp.extent);
}

template <bool kLog> Status softmaxKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const MutableTensorView& y = c.out(0);
  int64_t axis = 0;
  RETURN_IF_ERROR(softmaxAxis(c.node, x.shape, &axis));
  forEachLine(x.shape, axis, [&](int64_t base, int64_t stride, int64_t n) {
    float mx = -INFINITY;
    for (int64_t e = 0; e < n; ++e) mx = std::max(mx, loadF(x.data, x.dtype, base + e * stride));
    double sum = 0.0;
    for (int64_t e = 0; e < n; ++e) sum += std::exp(static_cast<double>(loadF(x.data, x.dtype, base + e * stride)) - mx);
    for (int64_t e = 0; e < n; ++e) {
      const double d = static_cast<double>(loadF(x.data, x.dtype, base + e * stride)) - mx;
      storeF(y.data, y.dtype, base + e * stride, static_cast<float>(kLog ? d - std::log(sum) : std::exp(d) / sum));
    }
  });
  return Status::Ok();
}

// SoftmaxGradExt(y, dy): (dy - sum(dy*y)) * y.  LogSoftmaxGrad(y, dy): dy - exp(y) * sum(dy).
template <bool kLog> Status softmaxGradKernel(const KernelContext& c) {
  const TensorView &y = c.in(0), &dy = c.in(1);
  const MutableTensorView& dx = c.out(0);
  int64_t axis = 0;
  RETURN_IF_ERROR(softmaxAxis(c.node, y.shape, &axis));
  forEachLine(y.shape, axis, [&](int64_t base, int64_t stride, int64_t n) {
    double s = 0.0;
    for (int64_t e = 0; e < n; ++e) {
      const int64_t i = base + e * stride;
      s += kLog ? loadF(dy.data, dy.dtype, i) : static_cast<double>(loadF(dy.data, dy.dtype, i)) * loadF(y.data, y.dtype, i);
    }
    for (int64_t e = 0; e < n; ++e) {
      const int64_t i = base + e * stride;
      const double yi = loadF(y.data, y.dtype, i), gi = loadF(dy.data, dy.dtype, i);
      storeF(dx.data, dx.dtype, i, static_cast<float>(kLog ? gi - std::exp(yi) * s : (gi - s) * yi));
    }
  });
  return Status::Ok();
}

// ---- LayerNorm / RmsNorm: normalise over axes [axis, rank) -------------------------
Status normSplit(const ir::Node& n, const Shape& s, int64_t* rows, int64_t* cols, int64_t* axis_out) {
  ASSIGN_OR_RETURN(NormRows r, normRowsOf(n, s));
  *rows = r.rows;
  *cols = r.cols;
  if (axis_out) *axis_out = r.axis;
  return Status::Ok();
}

Status checkParam(const ir::Node& n, const TensorType* p, int64_t cols, const char* what) {
  if (p && numElements(p->shape) != cols) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " ", what, " has ", numElements(p->shape),
                     " elements (shape ", shapeToString(p->shape), "), the normalised axes hold ", cols);
  }
  return Status::Ok();
}

Status shapeNorm(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  int64_t rows, cols, axis;
  RETURN_IF_ERROR(normSplit(n, in[0]->shape, &rows, &cols, &axis));
  for (size_t k = 1; k < in.size(); ++k) RETURN_IF_ERROR(checkParam(n, in[k], cols, k == 1 ? "gamma" : "beta"));
  Shape stat = in[0]->shape;
  for (size_t d = axis; d < stat.size(); ++d) stat[d] = 1;
  out = {in[0]->shape, stat, stat};
  return Status::Ok();
}

// LayerNorm(x, gamma?, beta?) -> (y, mean, variance); biased variance.
Status layerNormKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  int64_t rows, cols;
  RETURN_IF_ERROR(normSplit(c.node, x.shape, &rows, &cols, nullptr));
  const float eps = c.node.attrs.get<NormAttrs>().epsilon;
  const TensorView* gamma = c.inputs.size() > 1 && c.in(1).present() ? &c.in(1) : nullptr;
  const TensorView* beta = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t k = 0; k < cols; ++k) mean += loadF(x.data, x.dtype, r * cols + k);
    mean /= static_cast<double>(cols);
    for (int64_t k = 0; k < cols; ++k) {
      const double d = loadF(x.data, x.dtype, r * cols + k) - mean;
      var += d * d;
    }
    var /= static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t k = 0; k < cols; ++k) {
      double v = (loadF(x.data, x.dtype, r * cols + k) - mean) * rstd;
      if (gamma) v *= loadF(gamma->data, gamma->dtype, k);
      if (beta) v += loadF(beta->data, beta->dtype, k);
      storeF(c.out(0).data, c.out(0).dtype, r * cols + k, static_cast<float>(v));
    }
    if (c.outputs.size() > 1) storeF(c.out(1).data, c.out(1).dtype, r, static_cast<float>(mean));
    if (c.outputs.size() > 2) storeF(c.out(2).data, c.out(2).dtype, r, static_cast<float>(var));
  }
  return Status::Ok();
}

// RmsNorm(x, gamma) -> (y, rstd): y = x / sqrt(mean(x^2) + eps) * gamma.
Status rmsNormKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const TensorView& gamma = c.in(1);
  int64_t rows, cols;
  RETURN_IF_ERROR(normSplit(c.node, x.shape, &rows, &cols, nullptr));
  const float eps = c.node.attrs.get<NormAttrs>().epsilon;
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0.0;
    for (int64_t k = 0; k < cols; ++k) {
      const double v = loadF(x.data, x.dtype, r * cols + k);
      ms += v * v;
    }
    const double rstd = 1.0 / std::sqrt(ms / static_cast<double>(cols) + eps);
    for (int64_t k = 0; k < cols; ++k) {
      const double v = loadF(x.data, x.dtype, r * cols + k) * rstd * loadF(gamma.data, gamma.dtype, k);
      storeF(c.out(0).data, c.out(0).dtype, r * cols + k, static_cast<float>(v));
    }
    if (c.outputs.size() > 1) storeF(c.out(1).data, c.out(1).dtype, r, static_cast<float>(rstd));
  }
  return Status::Ok();
}

// BatchNorm(x, scale, bias, mean, var), inference: per channel (axis) affine.
Status shapeBatchNorm(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(n.attrs.get<NormAttrs>().axis, static_cast<int64_t>(in[0]->shape.size())));
  const int64_t ch = in[0]->shape.empty() ? 1 : in[0]->shape[axis];
  const char* names[] = {"x", "scale", "bias", "mean", "var"};
  for (size_t k = 1; k < 5; ++k) {
    if (numElements(in[k]->shape) != ch) {
      return makeError(StatusCode::kInvalidArgument, "BatchNorm ", names[k], " has ", numElements(in[k]->shape),
                       " elements, x has ", ch, " channels on axis ", axis);
    }
  }
  out = {in[0]->shape};
  return Status::Ok();
}
Status batchNormKernel(const KernelContext& c) {
  const TensorView& x = c.in(0);
  const auto& a = c.node.attrs.get<NormAttrs>();
  const int64_t axis = *normalizeAxis(a.axis, static_cast<int64_t>(x.shape.size()));
  const AxisSplit s = splitAtAxis(x.shape, axis);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t ch = 0; ch < s.extent; ++ch) {
      const double scale = loadF(c.in(1).data, c.in(1).dtype, ch) /
                           std::sqrt(static_cast<double>(loadF(c.in(4).data, c.in(4).dtype, ch)) + a.epsilon);
      const double shift = loadF(c.in(2).data, c.in(2).dtype, ch) - loadF(c.in(3).data, c.in(3).dtype, ch) * scale;
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t idx = (o * s.extent + ch) * s.inner + i;
        storeF(c.out(0).data, c.out(0).dtype, idx, static_cast<float>(loadF(x.data, x.dtype, idx) * scale + shift));
      }
    }
  }
  return Status::Ok();
}

// LayerNormGrad(x, dy, variance, mean, gamma) -> (dx, dgamma, dbeta).
Status shapeLayerNormGrad(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  int64_t rows, cols, axis;
  RETURN_IF_ERROR(normSplit(n, in[0]->shape, &rows, &cols, &axis));
  if (in[1]->shape != in[0]->shape) return makeError(StatusCode::kInvalidArgument, "LayerNormGrad dy shape differs from x");
  for (size_t k : {2, 3}) {
    if (numElements(in[k]->shape) != rows) {
      return makeError(StatusCode::kInvalidArgument, "LayerNormGrad input ", k, " needs ", rows, " elements");
    }
  }
  RETURN_IF_ERROR(checkParam(n, in[4], cols, "gamma"));
  out = {in[0]->shape, in[4]->shape, in[4]->shape};
  return Status::Ok();
}
Status layerNormGradKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &dy = c.in(1), &var = c.in(2), &mean = c.in(3), &gamma = c.in(4);
  int64_t rows, cols;
  RETURN_IF_ERROR(normSplit(c.node, x.shape, &rows, &cols, nullptr));
  const double eps = c.node.attrs.get<NormAttrs>().epsilon;
  std::vector<double> dgamma(cols, 0.0), dbeta(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double m = loadF(mean.data, mean.dtype, r);
    const double rstd = 1.0 / std::sqrt(loadF(var.data, var.dtype, r) + eps);
    double sum_dyg = 0.0, sum_dyg_xhat = 0.0;
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t i = r * cols + k;
      const double xhat = (loadF(x.data, x.dtype, i) - m) * rstd;
      const double g = loadF(dy.data, dy.dtype, i);
      const double dyg = g * loadF(gamma.data, gamma.dtype, k);
      sum_dyg += dyg;
      sum_dyg_xhat += dyg * xhat;
      dgamma[k] += g * xhat;
      dbeta[k] += g;
    }
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t i = r * cols + k;
      const double xhat = (loadF(x.data, x.dtype, i) - m) * rstd;
      const double dyg = loadF(dy.data, dy.dtype, i) * loadF(gamma.data, gamma.dtype, k);
      const double dx = rstd * (dyg - sum_dyg / cols - xhat * sum_dyg_xhat / cols);
      storeF(c.out(0).data, c.out(0).dtype, i, static_cast<float>(dx));
    }
  }
  for (int64_t k = 0; k < cols; ++k) {
    storeF(c.out(1).data, c.out(1).dtype, k, static_cast<float>(dgamma[k]));
    storeF(c.out(2).data, c.out(2).dtype, k, static_cast<float>(dbeta[k]));
  }
  return Status::Ok();
}

// SoftmaxCrossEntropyWithLogits(logits [N,C], labels [N,C]) -> (loss [N], dlogits [N,C]).
Status shapeSoftmaxXent(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  if (in[0]->shape.size() != 2 || in[1]->shape != in[0]->shape) {
    return makeError(StatusCode::kInvalidArgument, n.op->name, " needs logits and labels of one [N, C] shape, got ",
                     shapeToString(in[0]->shape), " and ", shapeToString(in[1]->shape));
  }
  out = {Shape{in[0]->shape[0]}, in[0]->shape};
  return Status::Ok();
}
Status softmaxXentKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &z = c.in(1);
  const int64_t rows = x.shape[0], cols = x.shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY;
    for (int64_t k = 0; k < cols; ++k) mx = std::max<double>(mx, loadF(x.data, x.dtype, r * cols + k));
    double sum = 0.0;
    for (int64_t k = 0; k < cols; ++k) sum += std::exp(loadF(x.data, x.dtype, r * cols + k) - mx);
    double loss = 0.0;
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t i = r * cols + k;
      const double logp = loadF(x.data, x.dtype, i) - mx - std::log(sum);
      const double label = loadF(z.data, z.dtype, i);
      loss -= label * logp;
      if (c.outputs.size() > 1) storeF(c.out(1).data, c.out(1).dtype, i, static_cast<float>(std::exp(logp) - label));
    }
    storeF(c.out(0).data, c.out(0).dtype, r, static_cast<float>(loss));
  }
  return Status::Ok();
}

// BCEWithLogitsLoss(x, z, weight?, pos_weight?) and BinaryCrossEntropy(p, z, weight?).
template <bool kLogits> Status bceKernel(const KernelContext& c) {
  const TensorView &x = c.in(0), &z = c.in(1);
  const TensorView* w = c.inputs.size() > 2 && c.in(2).present() ? &c.in(2) : nullptr;
  const TensorView* pw = kLogits && c.inputs.size() > 3 && c.in(3).present() ? &c.in(3) : nullptr;
  const Shape& full = x.shape;
  const int64_t n = numElements(full);
  std::vector<double> loss(n);
  const Shape none{};
  forEachBroadcast<4>(full, {&x.shape, &z.shape, w ? &w->shape : &none, pw ? &pw->shape : &none},
                      [&](int64_t i, const std::array<int64_t, 4>& o) {
    const double xi = loadF(x.data, x.dtype, o[0]), zi = loadF(z.data, z.dtype, o[1]);
    const double wi = w ? loadF(w->data, w->dtype, o[2]) : 1.0;
    double l;
    if (kLogits) {
      const double pwi = pw ? loadF(pw->data, pw->dtype, o[3]) : 1.0;
      const double log_p = -std::log1p(std::exp(-xi));   // log sigmoid(x)
      const double log_1mp = -xi + log_p;                // log(1 - sigmoid(x))
      l = -(pwi * zi * log_p + (1.0 - zi) * log_1mp);
    } else {
      l = -(zi * std::log(xi) + (1.0 - zi) * std::log(1.0 - xi));
    }
    loss[i] = l * wi;
  });
  const Reduction red = c.node.attrs.get<ReductionAttrs>().reduction;
  if (red == Reduction::kNone) {
    for (int64_t i = 0; i < n; ++i) storeF(c.out(0).data, c.out(0).dtype, i, static_cast<float>(loss[i]));
    return Status::Ok();
  }
  double s = 0.0;
  for (double l : loss) s += l;
  storeF(c.out(0).data, c.out(0).dtype, 0, static_cast<float>(red == Reduction::kMean && n ? s / n : s));
  return Status::Ok();
}
Status shapeBce(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k]) continue;
    ASSIGN_OR_RETURN(Shape b, broadcastShapes(in[0]->shape, in[k]->shape));
    if (b != in[0]->shape) {
      return makeError(StatusCode::kInvalidArgument, n.op->name, " input ", k, " (", shapeToString(in[k]->shape),
                       ") must broadcast to x's shape ", shapeToString(in[0]->shape));
    }
  }
  out = {n.attrs.get<ReductionAttrs>().reduction == Reduction::kNone ? in[0]->shape : Shape{}};
  return Status::Ok();
}

}  // namespace

void registerNormalizationOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("Softmax")) t.push_back({"Softmax", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kAxis, dtypeFloatSame, shapeSoftmax,
               softmaxKernel<false>, "exp(x - max) / sum(exp(x - max)) along axis"});
  if constexpr (opSelected("LogSoftmax")) t.push_back({"LogSoftmax", OpClass::kOpaque, 1, 1, 1, 1, AttrKind::kAxis, dtypeFloatSame, shapeSoftmax,
               softmaxKernel<true>, "x - max - log(sum(exp(x - max))) along axis"});
  if constexpr (opSelected("SoftmaxGradExt")) t.push_back({"SoftmaxGradExt", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kAxis, dtypeFloatSame, shapeSoftmax,
               softmaxGradKernel<false>, "(y, dy) -> (dy - sum(dy*y)) * y"});
  if constexpr (opSelected("LogSoftmaxGrad")) t.push_back({"LogSoftmaxGrad", OpClass::kOpaque, 2, 2, 1, 1, AttrKind::kAxis, dtypeFloatSame, shapeSoftmax,
               softmaxGradKernel<true>, "(y, dy) -> dy - exp(y) * sum(dy)"});
  if constexpr (opSelected("LayerNorm")) t.push_back({"LayerNorm", OpClass::kOpaque, 1, 3, 1, 3, AttrKind::kNorm, dtypeFloatSame, shapeNorm, layerNormKernel,
               "(x, gamma?, beta?) -> ((x-mean)/sqrt(var+eps)*gamma+beta, mean, var) over axes [axis, rank)"});
  if constexpr (opSelected("RmsNorm")) t.push_back({"RmsNorm", OpClass::kOpaque, 2, 2, 1, 2, AttrKind::kNorm, dtypeFloatSame, shapeNorm, rmsNormKernel,
               "(x, gamma) -> (x / sqrt(mean(x^2)+eps) * gamma, rstd) over axes [axis, rank)"});
  if constexpr (opSelected("BatchNorm")) t.push_back({"BatchNorm", OpClass::kBroadcast, 5, 5, 1, 1, AttrKind::kNorm, dtypeFloatSame, shapeBatchNorm,
               batchNormKernel, "(x, scale, bias, mean, var) -> (x-mean)/sqrt(var+eps)*scale+bias per channel `axis`"});
  if constexpr (opSelected("LayerNormGrad")) t.push_back({"LayerNormGrad", OpClass::kOpaque, 5, 5, 3, 3, AttrKind::kNorm, dtypeFloatSame, shapeLayerNormGrad,
               layerNormGradKernel, "(x, dy, var, mean, gamma) -> (dx, dgamma, dbeta)"});
  if constexpr (opSelected("SoftmaxCrossEntropyWithLogits")) t.push_back({"SoftmaxCrossEntropyWithLogits", OpClass::kOpaque, 2, 2, 1, 2, AttrKind::kNone, dtypeFloatSame,
               shapeSoftmaxXent, softmaxXentKernel, "(logits, labels) -> (-sum(labels*logsoftmax), softmax-labels)"});
  if constexpr (opSelected("BCEWithLogitsLoss")) t.push_back({"BCEWithLogitsLoss", OpClass::kOpaque, 2, 4, 1, 1, AttrKind::kReduction, dtypeFloatSame, shapeBce,
               bceKernel<true>, "(x, z, weight?, pos_weight?) -> -(pw z log s(x) + (1-z) log(1-s(x))) w, reduced"});
  if constexpr (opSelected("BinaryCrossEntropy")) t.push_back({"BinaryCrossEntropy", OpClass::kOpaque, 2, 3, 1, 1, AttrKind::kReduction, dtypeFloatSame, shapeBce,
               bceKernel<false>, "(p, z, weight?) -> -(z log p + (1-z) log(1-p)) w, reduced"});
}

}  // namespace gkrt::ops
