#include "tools/onnx/onnx_dynamic_dims.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt::onnx_import {
namespace {

struct DynamicInput {
  std::string name;
  Shape shape;                       // -1 for dynamic dims
  std::vector<std::string> symbols;  // "" for unnamed dims
};

std::vector<DynamicInput> dynamicInputs(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  std::vector<DynamicInput> out;
  std::map<std::string, int> initializers;
  for (const auto& init : model.graph().initializer()) initializers[init.name()] = 1;
  for (int i = 0; i < model.graph().input_size(); ++i) {
    const auto& input = model.graph().input(i);
    if (initializers.count(input.name()) || options.frozen_inputs.count(input.name()) ||
        options.input_shapes.count(input.name()) || static_cast<size_t>(i) < options.positional_input_shapes.size() ||
        !input.type().has_tensor_type()) {
      continue;
    }
    DynamicInput d{input.name(), {}, {}};
    bool dynamic = false;
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      d.shape.push_back(dim.has_dim_value() ? dim.dim_value() : kUnknownDim);
      d.symbols.push_back(dim.has_dim_param() ? dim.dim_param() : "");
      dynamic = dynamic || !dim.has_dim_value();
    }
    if (dynamic) out.push_back(std::move(d));
  }
  return out;
}

// Trial sizes: multiples of 32 (strided and pyramid networks need them), different for
// each dim key within a trial and between the two trials of a set.
struct TrialSizes { int64_t a_base, a_step, b_base, b_step; };
constexpr TrialSizes kTrials[] = {{32, 32, 64, 64}, {224, 32, 288, 64}, {320, 64, 512, 64}};

}  // namespace

std::vector<DimProbe> dynamicDimProbes(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  const std::vector<DynamicInput> inputs = dynamicInputs(model, options);
  if (inputs.empty()) return {};
  std::map<std::string, int> keys;  // dim name (or input:dim) -> index
  for (const DynamicInput& in : inputs) {
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (in.shape[d] >= 0) continue;
      const std::string key = in.symbols[d].empty() ? in.name + ":" + std::to_string(d) : in.symbols[d];
      keys.emplace(key, static_cast<int>(keys.size()));
    }
  }
  std::vector<DimProbe> probes;
  for (const TrialSizes& t : kTrials) {
    DimProbe p;
    for (const DynamicInput& in : inputs) {
      Shape a = in.shape, b = in.shape;
      for (size_t d = 0; d < in.shape.size(); ++d) {
        if (in.shape[d] >= 0) continue;
        const int k = keys.at(in.symbols[d].empty() ? in.name + ":" + std::to_string(d) : in.symbols[d]);
        a[d] = t.a_base + t.a_step * k;
        b[d] = t.b_base + t.b_step * k;
      }
      p.first[in.name] = a;
      p.second[in.name] = b;
    }
    probes.push_back(std::move(p));
  }
  return probes;
}

StatusOr<ir::Graph> mergeProbeGraphs(const onnx::ModelProto& model, const OnnxImportOptions& options, ir::Graph a,
                                     const ir::Graph& b) {
  auto sizeDependent = [&](const std::string& what) {
    return makeError(StatusCode::kUnsupported, what, " depends on the sizes of the model's dynamic dims, which gkrt "
                     "cannot keep dynamic there; give the inputs fixed sizes with --input-shape");
  };
  if (a.nodes.size() != b.nodes.size() || a.tensors.size() != b.tensors.size() || a.inputs != b.inputs ||
      a.outputs != b.outputs) {
    return sizeDependent("the converted graph's structure (" + std::to_string(a.nodes.size()) + " vs " +
                         std::to_string(b.nodes.size()) + " nodes at two trial sizes)");
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node &na = a.nodes[i], &nb = b.nodes[i];
    if (na.op != nb.op || na.inputs != nb.inputs || na.outputs != nb.outputs) {
      return sizeDependent("the graph's structure at " + ir::describeNode(a, static_cast<int>(i)));
    }
    if (na.attrs != nb.attrs) {
      return sizeDependent(ir::describeNode(a, static_cast<int>(i)) + " (its attributes are " + na.attrs.toString() +
                           " at one trial size and " + nb.attrs.toString() + " at another)");
    }
  }
  for (size_t t = 0; t < a.tensors.size(); ++t) {
    const ir::Tensor &ta = a.tensors[t], &tb = b.tensors[t];
    bool same = ta.dtype == tb.dtype && ta.isConstant() == tb.isConstant();
    if (same && ta.isConstant()) {
      same = ta.constant->size == tb.constant->size && ta.shape == tb.shape &&
             std::memcmp(ta.constant->data, tb.constant->data, ta.constant->size) == 0;
    }
    if (!same) return sizeDependent(ir::describeTensor(a, static_cast<int>(t)) + " (a folded constant)");
    if (ta.isConstant()) continue;
    if (ta.shape.size() != tb.shape.size()) {
      return sizeDependent("the rank of " + ir::describeTensor(a, static_cast<int>(t)));
    }
    ir::Tensor& out = a.tensors[t];
    for (size_t d = 0; d < out.shape.size(); ++d) {
      if (ta.shape[d] != tb.shape[d]) out.shape[d] = kUnknownDim;
    }
    out.value = nullptr;
  }
  // The inputs as the model declares them.
  for (const DynamicInput& in : dynamicInputs(model, options)) {
    const int t = a.findTensor(in.name);
    if (t < 0 || !std::count(a.inputs.begin(), a.inputs.end(), t)) continue;
    a.tensors[t].shape = in.shape;
    a.tensors[t].dim_symbols = in.symbols;
  }
  return a;
}

}  // namespace gkrt::onnx_import
