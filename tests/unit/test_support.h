// Helpers shared by the unit tests: run a graph on a backend, compare tensors.
#pragma once

#include <cstring>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/builder.h"
#include "runtime/ir/op_def.h"
#include "runtime/session.h"

namespace gkrt::testing {

// Runs `g` on `backend` with the given inputs (by input order); outputs by output order.
inline StatusOr<std::vector<HostTensor>> runGraph(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                                  const std::string& backend = "reference",
                                                  std::optional<FusionOptions> fusion = std::nullopt,
                                                  int num_threads = 0) {
  SessionOptions opts;
  opts.backend = backend;
  opts.fusion = fusion;
  opts.backend_options.num_threads = num_threads;
  for (size_t k = 0; k < inputs.size() && k < g.inputs.size(); ++k) {
    opts.input_shapes[g.tensors[g.inputs[k]].name] = inputs[k].shape();
  }
  ASSIGN_OR_RETURN(auto session, Session::create(g, opts));
  for (size_t k = 0; k < inputs.size(); ++k) {
    RETURN_IF_ERROR(session->setInput(session->inputs()[k].name, inputs[k]));
  }
  RETURN_IF_ERROR(session->run());
  std::vector<HostTensor> outs;
  for (const TensorInfo& o : session->outputs()) {
    ASSIGN_OR_RETURN(HostTensor t, session->output(o.name));
    outs.push_back(std::move(t));
  }
  return outs;
}

// One DynamicQuantizeLinear of a float32 input `x` of `shape`; outputs y, scale, zp.
inline StatusOr<ir::Graph> dynamicQuantizeGraph(const Shape& shape) {
  GraphBuilder b;
  auto outs = b.op("DynamicQuantizeLinear", {b.input("x", DType::kFloat32, shape)}, {}, 3);
  b.output(outs[0], "y");
  b.output(outs[1], "scale");
  b.output(outs[2], "zp");
  return b.finish();
}

// Empty string when |got - want| <= atol + rtol*|want| everywhere (NaN matches NaN),
// else a description of the first mismatch.
inline std::string compareTensors(const HostTensor& got, const HostTensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype()) {
    return std::string("dtype ") + dtypeName(got.dtype()) + " != expected " + dtypeName(want.dtype());
  }
  if (got.shape() != want.shape()) {
    return "shape " + shapeToString(got.shape()) + " != expected " + shapeToString(want.shape());
  }
  const std::vector<float> g = got.toFloats(), w = want.toFloats();
  const size_t es = dtypeSize(got.dtype());
  const auto* gb = static_cast<const char*>(got.data());
  const auto* wb = static_cast<const char*>(want.data());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!isFloat(got.dtype())) {  // integers and bool: bit-exact, at any width
      if (std::memcmp(gb + i * es, wb + i * es, es) == 0) continue;
      return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
    }
    const double gd = got.dtype() == DType::kFloat64 ? got.as<double>()[i] : g[i];
    const double wd = want.dtype() == DType::kFloat64 ? want.as<double>()[i] : w[i];
    if (std::isnan(wd) && std::isnan(gd)) continue;
    const double diff = std::fabs(gd - wd);
    if (!(diff <= atol + rtol * std::fabs(wd) || (std::isinf(wd) && gd == wd))) {
      return "element " + std::to_string(i) + ": got " + std::to_string(gd) + ", expected " + std::to_string(wd);
    }
  }
  return "";
}

// Uniform floats in [-2, 2) from `seed`.
inline HostTensor randomTensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(numElements(shape)));
  for (float& x : v) x = u(rng);
  return HostTensor::fromFloats(shape, v);
}

// x of shape `s` through a Softmax and a LayerNorm along the last axis, ReduceMax of
// exp(x) over axis 0, ReduceMean of x*x over all axes and a LogSoftmax along axis 0:
// the reductions that expand into reduce clusters, on every layout.
inline StatusOr<ir::Graph> normsAndReductionsGraph(const Shape& s) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, s);
  const HostTensor gamma = randomTensor({s.back()}, 3), beta = randomTensor({s.back()}, 4);
  Value gm = b.constant("g", DType::kFloat32, {s.back()}, gamma.data());
  Value bt = b.constant("b", DType::kFloat32, {s.back()}, beta.data());
  Value sm = b.op1("Softmax", {x}, AxisAttrs{-1, false});
  b.output(b.op1("LayerNorm", {b.add(x, sm), gm, bt}, NormAttrs{-1, 1e-5f}), "ln");
  b.output(b.op1("ReduceMax", {b.op1("Exp", {x})}, AxesAttrs{{0}, true}), "outer_max");
  b.output(b.op1("ReduceMean", {b.mul(x, x)}, AxesAttrs{{}, false}), "mean_all");
  b.output(b.op1("LogSoftmax", {x}, AxisAttrs{0, false}), "log_softmax0");
  return b.finish();
}

// Nodes of `g` running op `op`: top level only, or (deep) inside fused nodes' bodies too.
inline int countOps(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += op == node.op->name;
  return n;
}
inline int countOpsDeep(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += (op == node.op->name) + (node.subgraph ? countOpsDeep(*node.subgraph, op) : 0);
  return n;
}

inline FusionOptions optLevel(int level) { return *parseFusionFlags("--opt_level=" + std::to_string(level)); }

// The backend each kernel of `op` runs on when `g` is compiled for `backend` with `flags`
// (one entry per such kernel; a declined op shows the fallback's name).
inline StatusOr<std::vector<std::string>> backendsRunning(const ir::Graph& g, const std::string& op,
                                                          const std::string& backend, const std::string& flags) {
  SessionOptions opts;
  opts.backend = backend;
  ASSIGN_OR_RETURN(opts.fusion, parseFusionFlags(flags));
  ASSIGN_OR_RETURN(auto session, Session::create(g, opts));
  const ir::Graph& compiled = session->compiledGraph();
  const auto infos = session->kernelInfos();
  std::vector<std::string> on;
  for (size_t k = 0; k < compiled.nodes.size() && k < infos.size(); ++k) {
    if (op == compiled.nodes[k].op->name) on.push_back(infos[k].backend);
  }
  return on;
}

// A session's outputs (by output order) and its kernels, one "name [detail]" line each.
struct KernelRun {
  std::vector<HostTensor> outputs;
  std::vector<Session::KernelInfo> kernels;
  std::string details;
  int countDetail(const std::string& part) const {
    int n = 0;
    for (const Session::KernelInfo& k : kernels) n += k.detail.find(part) != std::string::npos;
    return n;
  }
};
inline StatusOr<KernelRun> runWithKernels(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                          const SessionOptions& options) {
  ASSIGN_OR_RETURN(auto session, Session::create(g, options));
  for (size_t k = 0; k < inputs.size(); ++k) RETURN_IF_ERROR(session->setInput(session->inputs()[k].name, inputs[k]));
  RETURN_IF_ERROR(session->run());
  KernelRun r;
  for (const TensorInfo& o : session->outputs()) {
    ASSIGN_OR_RETURN(HostTensor t, session->output(o.name));
    r.outputs.push_back(std::move(t));
  }
  r.kernels = session->kernelInfos();
  for (const Session::KernelInfo& k : r.kernels) r.details += k.name + " [" + k.detail + "]\n";
  return r;
}

}  // namespace gkrt::testing
