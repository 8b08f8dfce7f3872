#include "tools/onnx/onnx_import.h"

#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "runtime/ir/interpret.h"
#include "runtime/ir/known_values.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"
#include "runtime/safe_path.h"
#include "tools/onnx/onnx_context.h"
#include "tools/onnx/onnx_dynamic_dims.h"

namespace gkrt {

StatusOr<DType> dtypeFromOnnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::kFloat32;
    case onnx::TensorProto::FLOAT16: return DType::kFloat16;
    case onnx::TensorProto::INT8: return DType::kInt8;
    case onnx::TensorProto::UINT8: return DType::kUInt8;
    case onnx::TensorProto::INT32: return DType::kInt32;
    case onnx::TensorProto::INT64: return DType::kInt64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    case onnx::TensorProto::DOUBLE: return DType::kFloat64;
    case onnx::TensorProto::INT16: return DType::kInt16;
    case onnx::TensorProto::UINT16: return DType::kUInt16;
    case onnx::TensorProto::UINT32: return DType::kUInt32;
    case onnx::TensorProto::UINT64: return DType::kUInt64;
    case onnx::TensorProto::BFLOAT16: return DType::kBFloat16;
    // Numbers, as Debian's onnx.proto may predate these types.
    case 17: return DType::kFloat8E4M3FN;
    case 18: return DType::kFloat8E4M3FNUZ;
    case 19: return DType::kFloat8E5M2;
    case 20: return DType::kFloat8E5M2FNUZ;
    case 21: return DType::kUInt4;
    case 22: return DType::kInt4;
    case 23: return DType::kFloat4E2M1;
    case 24: return DType::kFloat8E8M0;
    case 25: return DType::kUInt2;
    case 26: return DType::kInt2;
    default: {
      std::string name = onnx::TensorProto::DataType_IsValid(t)
                             ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                             : "";
      if (name.empty()) name = "#" + std::to_string(t);
      return makeError(StatusCode::kUnsupported, "ONNX element type ", name, " is not supported (gkrt has ",
                       dtypeList(), ")");
    }
  }
}

StatusOr<HostTensor> tensorFromProto(const onnx::TensorProto& t, const std::string& base_dir) {
  ASSIGN_OR_RETURN(DType dtype, dtypeFromOnnx(t.data_type()));
  if (bitWidth(dtype) < 8) return unpackedTensorFromProto(t, base_dir, dtype);  // onnx_packed_tensors.cc
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape) {
    if (d < 0) return makeError(StatusCode::kInvalidModel, "tensor '", t.name(), "' has negative dim ", d);
  }
  auto count = checkedNumElements(shape);
  if (!count.ok()) return count.status().withContext("tensor '" + t.name() + "'");
  // Every size is checked against the bytes the tensor holds before anything is
  // allocated: a hostile file may claim 2^40 elements in a few bytes.
  const size_t bytes = static_cast<size_t>(*count) * dtypeSize(dtype);
  auto sizeError = [&](size_t have) {
    return makeError(StatusCode::kInvalidModel, "tensor '", t.name(), "' holds ", have, " bytes, shape ",
                     shapeToString(shape), " ", dtypeName(dtype), " needs ", bytes);
  };
  auto allocate = [&]() -> StatusOr<HostTensor> {
    HostTensor h(dtype, shape);
    if (!h.data() && h.bytes()) return makeError(StatusCode::kIoError, "out of memory for tensor '", t.name(), "'");
    return h;
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
        continue;
      }
      if (kv.key() != "offset" && kv.key() != "length") continue;
      int64_t v = -1;
      const char* end = kv.value().data() + kv.value().size();
      auto [p, ec] = std::from_chars(kv.value().data(), end, v);
      if (ec != std::errc() || p != end || v < 0) {
        return makeError(StatusCode::kInvalidModel, "tensor '", t.name(), "': external data ", kv.key(), " '",
                         kv.value(), "' is not a non-negative integer");
      }
      (kv.key() == "offset" ? offset : length) = v;
    }
    ASSIGN_OR_RETURN(const std::string path,
                     resolveInsideDir(base_dir, location, "tensor '" + t.name() + "': external data location"));
    std::error_code size_ec;
    const uintmax_t file_bytes = std::filesystem::file_size(path, size_ec);
    if (size_ec) return makeError(StatusCode::kNotFound, "tensor '", t.name(), "': external data file '", location, "' not found");
    if (length >= 0 && static_cast<size_t>(length) != bytes) return sizeError(static_cast<size_t>(length));
    if (static_cast<uintmax_t>(offset) > file_bytes || file_bytes - static_cast<uintmax_t>(offset) < bytes) {
      return makeError(StatusCode::kInvalidModel, "tensor '", t.name(), "': external data file '", location, "' is ",
                       file_bytes, " bytes; offset ", offset, " + ", bytes, " bytes (shape ", shapeToString(shape), " ",
                       dtypeName(dtype), ") runs past its end");
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) return makeError(StatusCode::kNotFound, "tensor '", t.name(), "': external data file '", location, "' cannot be opened");
    ASSIGN_OR_RETURN(HostTensor h, allocate());
    f.seekg(offset);
    f.read(static_cast<char*>(h.data()), static_cast<std::streamsize>(bytes));
    if (static_cast<size_t>(f.gcount()) != bytes) return sizeError(static_cast<size_t>(f.gcount()));
    return h;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes) return sizeError(t.raw_data().size());
    ASSIGN_OR_RETURN(HostTensor h, allocate());
    if (bytes) std::memcpy(h.data(), t.raw_data().data(), bytes);
    return h;
  }
  const int64_t n = *count;
  auto need = [&](int have) -> Status {
    return have == n ? Status::Ok() : makeError(StatusCode::kInvalidModel, "tensor '", t.name(), "' holds ", have,
                                                " values, shape ", shapeToString(shape), " needs ", n);
  };
  const int typed_values = dtype == DType::kFloat32 ? t.float_data_size()
                           : dtype == DType::kFloat64 ? t.double_data_size()
                           : dtype == DType::kInt64 ? t.int64_data_size()
                           : dtype == DType::kUInt64 || dtype == DType::kUInt32 ? t.uint64_data_size()
                           : t.int32_data_size();
  RETURN_IF_ERROR(need(typed_values));
  ASSIGN_OR_RETURN(HostTensor h, allocate());
  // Typed fields (TensorProto's comments): float_data, double_data, int64_data,
  // uint64_data (uint32 too); every narrower type in int32_data (16-bit floats as bits).
  switch (dtype) {
    case DType::kFloat32:
      RETURN_IF_ERROR(need(t.float_data_size()));
      for (int64_t i = 0; i < n; ++i) h.as<float>()[i] = t.float_data(static_cast<int>(i));
      break;
    case DType::kFloat64:
      RETURN_IF_ERROR(need(t.double_data_size()));
      for (int64_t i = 0; i < n; ++i) h.as<double>()[i] = t.double_data(static_cast<int>(i));
      break;
    case DType::kInt64:
      RETURN_IF_ERROR(need(t.int64_data_size()));
      for (int64_t i = 0; i < n; ++i) h.as<int64_t>()[i] = t.int64_data(static_cast<int>(i));
      break;
    case DType::kUInt64: case DType::kUInt32:
      RETURN_IF_ERROR(need(t.uint64_data_size()));
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t v = t.uint64_data(static_cast<int>(i));
        if (dtype == DType::kUInt64) h.as<uint64_t>()[i] = v;
        else h.as<uint32_t>()[i] = static_cast<uint32_t>(v);
      }
      break;
    default:
      RETURN_IF_ERROR(need(t.int32_data_size()));
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = t.int32_data(static_cast<int>(i));
        if (is16BitFloat(dtype)) h.as<uint16_t>()[i] = static_cast<uint16_t>(v);
        else if (isNarrowFloat(dtype)) h.as<uint8_t>()[i] = static_cast<uint8_t>(v);
        else ops::withIntegerType(dtype, [&](auto tag) { h.as<decltype(tag)>()[i] = static_cast<decltype(tag)>(v); });
      }
  }
  return h;
}

StatusOr<HostTensor> readTensorProtoFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return makeError(StatusCode::kNotFound, "cannot open '", path, "'");
  onnx::TensorProto t;
  if (!t.ParseFromIstream(&f)) return makeError(StatusCode::kInvalidModel, "'", path, "' is not a TensorProto");
  const std::string dir = path.substr(0, path.find_last_of('/'));
  return tensorFromProto(t, dir);
}

namespace onnx_import {

Value Context::in(const onnx::NodeProto& n, int k) const {
  if (k >= n.input_size() || n.input(k).empty()) return Value{};
  auto it = values_.find(n.input(k));
  return it == values_.end() ? Value{} : it->second;
}

StatusOr<HostTensor> Context::constant(Value v, const char* what) const {
  if (!isConstant(v) && isDynamic(v)) {
    return makeError(StatusCode::kUnsupported, what, " depends on the input's dynamic dims, which gkrt cannot keep "
                     "dynamic here; give the input a fixed size with --input-shape");
  }
  if (!isConstant(v)) {
    return makeError(StatusCode::kUnsupported, what, " must be a constant (an initializer or computable from them)");
  }
  const ir::Tensor& t = b_.tensor(v);
  HostTensor h(t.dtype, t.shape);
  std::memcpy(h.data(), t.constant->data, h.bytes());
  return h;
}

StatusOr<std::vector<int64_t>> Context::constInts(Value v, const char* what) const {
  ASSIGN_OR_RETURN(HostTensor h, constant(v, what));
  std::vector<int64_t> out(h.size());
  for (int64_t i = 0; i < h.size(); ++i) {
    out[i] = h.dtype() == DType::kInt64 ? h.as<int64_t>()[i] : static_cast<int64_t>(ops::loadF(h.data(), h.dtype(), i));
  }
  return out;
}

StatusOr<float> Context::constFloat(Value v, const char* what) const {
  ASSIGN_OR_RETURN(HostTensor h, constant(v, what));
  if (h.size() != 1) return makeError(StatusCode::kUnsupported, what, " must hold one value");
  return h.toFloats()[0];
}

Value Context::ints(const std::vector<int64_t>& v) {
  return b_.constant("", DType::kInt64, {static_cast<int64_t>(v.size())}, v.data());
}

std::vector<Value> Context::op(const std::string& name, const std::vector<Value>& inputs, Attrs attrs, int outputs) {
  const OpDef* def = findOp(name);
  bool all_constant = def && !ir::isRandomOp(*def);
  for (Value v : inputs) all_constant = all_constant && (v.id < 0 || isConstant(v));
  if (!all_constant || inputs.empty()) {
    std::vector<Value> outs = b_.op(name, inputs, std::move(attrs), outputs);
    bool dynamic = false;
    for (Value v : inputs) dynamic = dynamic || isDynamic(v);
    if (dynamic) for (Value o : outs) markDynamic(o);
    return outs;
  }
  // Fold: build the one-node graph, interpret it, bind the results as constants.
  GraphBuilder mini;
  std::vector<Value> min;
  for (Value v : inputs) {
    if (v.id < 0) { min.push_back(Value{}); continue; }
    const ir::Tensor& t = b_.tensor(v);
    min.push_back(mini.constant("", t.dtype, t.shape, t.constant->data));
  }
  auto outs = mini.op(name, min, attrs, outputs);
  for (Value o : outs) mini.output(o);
  auto g = mini.finish();
  if (!g.ok()) {
    b_.setError(g.status());
    return std::vector<Value>(outputs);
  }
  std::vector<HostTensor> results;
  std::vector<MutableTensorView> views;
  for (int t : g->outputs) {
    results.emplace_back(g->tensors[t].dtype, g->tensors[t].shape);
    views.push_back({results.back().dtype(), results.back().shape(), results.back().data()});
  }
  Status s = ir::interpretGraph(*g, {}, views);
  if (!s.ok()) {
    b_.setError(s.withContext("folding " + name));
    return std::vector<Value>(outputs);
  }
  std::vector<Value> folded;
  for (const HostTensor& r : results) folded.push_back(constant(r));
  return folded;
}

bool Context::resolveOuter(const std::string& name) {
  if (!parent || (!parent->has(name) && !parent->resolveOuter(name))) return false;
  const Value outer = parent->value(name);
  const ir::Tensor& t = parent->tensor(outer);
  if (t.isConstant()) {
    bind(name, b_.constant(name, t.dtype, t.shape, t.constant->data));
    return true;
  }
  bind(name, b_.input(name, t.dtype, t.shape, t.dim_symbols));
  captures.push_back(outer);
  capture_names.push_back(name);
  return true;
}

void countUses(Context& c, const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) c.countUse(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) countUses(c, a.g());
      for (const auto& sub : a.graphs()) countUses(c, sub);
    }
  }
}

// The converter of a node: the default domain's table, onnxruntime's com.microsoft ops
// under "com.microsoft.NAME" (and the two QLinear ops its quantizer writes there, which
// the default table has).
const Converter* converterFor(const onnx::NodeProto& n) {
  if (n.domain().empty() || n.domain() == "ai.onnx") return findConverter(n.op_type());
  if (n.domain() != "com.microsoft") return nullptr;
  if (const Converter* f = findConverter("com.microsoft." + n.op_type())) return f;
  return n.op_type() == "QLinearAdd" || n.op_type() == "QLinearMul" ? findConverter(n.op_type()) : nullptr;
}

Status convertGraphNodes(Context& c, const onnx::GraphProto& g, bool count_uses) {
  if (count_uses) countUses(c, g);
  const int64_t opset = c.opset();
  GraphBuilder& b = c.builder();
  // Every unsupported op at once, before converting anything.
  std::map<std::string, std::string> unsupported;
  bool ort_extension = false;
  for (const auto& n : g.node()) {
    if (!converterFor(n)) {
      unsupported[(n.domain().empty() ? "" : n.domain() + ".") + n.op_type()] += (n.name().empty() ? "(unnamed)" : n.name()) + " ";
      ort_extension = ort_extension || n.domain() == "com.microsoft";
    }
  }
  if (!unsupported.empty()) {
    std::ostringstream os;
    os << "unsupported ONNX ops (opset " << opset << "):";
    for (const auto& [op, nodes] : unsupported) os << " " << op << " [nodes: " << nodes.substr(0, 120) << "]";
    if (ort_extension) {
      os << " (com.microsoft ops are onnxruntime's own, written by its optimizer and quantizer: export the model "
            "without them, e.g. without onnxruntime.transformers.optimizer, to get standard ops)";
    }
    return makeError(StatusCode::kUnsupported, os.str());
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string who = "node " + std::to_string(i) + " '" + n.name() + "' (" + n.op_type() + ", opset " +
                            std::to_string(opset) + ")";
    for (int k = 0; k < n.input_size(); ++k) {
      if (!n.input(k).empty() && !c.has(n.input(k)) && !c.resolveOuter(n.input(k))) {
        return makeError(StatusCode::kInvalidModel, who, ": input '", n.input(k),
                         "' is not produced by an earlier node, an initializer or a graph input (missing initializer, "
                         "or the nodes are not in topological order / form a cycle)");
      }
    }
    std::vector<Value> outs;
    Status s = (*converterFor(n))(c, n, outs);
    if (!s.ok()) return s.withContext(who);
    if (!b.status().ok()) return b.status().withContext(who);
    for (int k = 0; k < n.output_size() && k < static_cast<int>(outs.size()); ++k) {
      if (!n.output(k).empty()) c.bind(n.output(k), outs[k]);
    }
  }
  return Status::Ok();
}

const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) if (a.name() == name) return &a;
  return nullptr;
}
int64_t attrInt(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = findAttr(n, name);
  return a ? a->i() : def;
}
float attrFloat(const onnx::NodeProto& n, const std::string& name, float def) {
  const auto* a = findAttr(n, name);
  return a ? a->f() : def;
}
std::string attrString(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = findAttr(n, name);
  return a ? a->s() : def;
}
std::vector<int64_t> attrInts(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> def) {
  const auto* a = findAttr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}

}  // namespace onnx_import

namespace onnx_import {

StatusOr<ir::Graph> convertGraph(const onnx::ModelProto& model, const std::string& base_dir,
                                 const OnnxImportOptions& given_options, const std::map<std::string, Shape>* probe) {
  OnnxImportOptions options = given_options;
  int64_t opset = 0;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  // Opsets 11-21 are the target; older and newer ones are accepted because each op's
  // converter reads the attributes/inputs of the versions it knows, and the ONNX node
  // test suite (generated at each op's newest opset) checks the result.
  if (opset < 7 || opset > kNewestOnnxOpset) {
    return makeError(StatusCode::kUnsupported, "ONNX opset ", opset, " is not supported (gkrt converts opset 7-",
                     kNewestOnnxOpset, ")");
  }
  const onnx::GraphProto& g = model.graph();
  onnx_import::Context c(opset);
  c.base_dir = base_dir;
  GraphBuilder& b = c.builder();
  b.setMetadata("producer", "gkrt convert (from " + model.producer_name() + " " + model.producer_version() + ")");
  std::set<std::string> initializer_names;
  std::set<int> graph_inputs;
  for (const auto& init : g.initializer()) {
    auto t = tensorFromProto(init, base_dir);
    if (!t.ok()) return t.status().withContext("initializer '" + init.name() + "'");
    c.bind(init.name(), b.constant(init.name(), t->dtype(), t->shape(), t->data()));
    initializer_names.insert(init.name());
  }
  for (const auto& input : g.input()) {
    if (initializer_names.count(input.name())) continue;
    auto frozen = options.frozen_inputs.find(input.name());
    if (frozen != options.frozen_inputs.end()) {
      const HostTensor& t = frozen->second;
      c.bind(input.name(), b.constant(input.name(), t.dtype(), t.shape(), t.data()));
      continue;
    }
    if (!input.type().has_tensor_type()) {
      return makeError(StatusCode::kUnsupported, "graph input '", input.name(), "' is not a tensor");
    }
    const auto& tt = input.type().tensor_type();
    ASSIGN_OR_RETURN(DType dtype, dtypeFromOnnx(tt.elem_type()));
    Shape shape;
    std::vector<std::string> symbols;
    for (const auto& d : tt.shape().dim()) {
      shape.push_back(dimSize(d, options));
      symbols.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
    auto given = options.input_shapes.find(input.name());
    const size_t position = c.builder().status().ok() ? static_cast<size_t>(&input - &g.input(0)) : 0;
    if (given == options.input_shapes.end() && position < options.positional_input_shapes.size() &&
        !isStatic(shape)) {
      given = options.input_shapes.emplace(input.name(), options.positional_input_shapes[position]).first;
    }
    if (given != options.input_shapes.end()) {
      if (given->second.size() != shape.size()) {
        return makeError(StatusCode::kInvalidArgument, "--input-shape ", input.name(), " has rank ",
                         given->second.size(), ", the model's input has rank ", shape.size());
      }
      shape = given->second;
    }
    const bool probed = probe && probe->count(input.name()) && !isStatic(shape);
    if (probed) shape = probe->at(input.name());
    if (!isStatic(shape)) {
      return makeError(StatusCode::kInvalidArgument, "input '", input.name(), "' has dynamic shape ",
                       shapeToString(shape), "; give it with --input-shape ", input.name(), "=d0,d1,...");
    }
    const Value in = b.input(input.name(), dtype, shape, symbols);
    if (probed) c.markDynamic(in);
    graph_inputs.insert(in.id);
    c.bind(input.name(), in);
  }
  onnx_import::countUses(c, g);
  for (const auto& out : g.output()) c.countUse(out.name());
  RETURN_IF_ERROR(onnx_import::convertGraphNodes(c, g, false));
  std::set<int> named_outputs;
  for (const auto& out : g.output()) {
    if (!c.has(out.name())) return makeError(StatusCode::kInvalidModel, "graph output '", out.name(), "' is never produced");
    Value v = c.value(out.name());
    // An output is a tensor a node produces, under the ONNX name: constants, graph
    // inputs and values already output under another name get a copy.
    if (c.isConstant(v) || graph_inputs.count(v.id) || named_outputs.count(v.id)) {
      v = b.op1("Reshape", {v}, ShapeAttrs{b.tensor(v).shape});
    }
    named_outputs.insert(v.id);
    b.output(v, out.name());
  }
  ASSIGN_OR_RETURN(ir::Graph result, b.finish());
  ir::compactGraph(result);
  return result;
}

}  // namespace onnx_import

namespace onnx_import {
int64_t dimSize(const onnx::TensorShapeProto_Dimension& d, const OnnxImportOptions& o) {
  if (d.has_dim_value()) return d.dim_value();
  auto it = d.has_dim_param() ? o.dim_values.find(d.dim_param()) : o.dim_values.end();
  return it == o.dim_values.end() ? kUnknownDim : it->second;
}
}  // namespace onnx_import

StatusOr<ir::Graph> importOnnxModel(const onnx::ModelProto& model, const std::string& base_dir,
                                    const OnnxImportOptions& options) {
  if (!options.dim_values.empty()) {  // every --dim names a dim of some input
    std::set<std::string> named;
    for (const auto& in : model.graph().input()) {
      for (const auto& d : in.type().tensor_type().shape().dim()) if (d.has_dim_param()) named.insert(d.dim_param());
    }
    for (const auto& [name, size] : options.dim_values) {
      if (size < 0) return makeError(StatusCode::kInvalidArgument, "--dim ", name, "=", size, ": a size is >= 0");
      if (named.count(name)) continue;
      std::string all;
      for (const std::string& x : named) all += (all.empty() ? "" : ", ") + ("'" + x + "'");
      return makeError(StatusCode::kInvalidArgument, "--dim ", name, ": no input of the model has a dim named '", name,
                       "'; its named dims: ", all.empty() ? "none" : all);
    }
  }
  const std::vector<onnx_import::DimProbe> probes = onnx_import::dynamicDimProbes(model, options);
  if (probes.empty()) return onnx_import::convertGraph(model, base_dir, options, nullptr);
  // Dynamic dims kept: the model is converted at two sets of sizes; a graph that only
  // differs in the shapes of computed tensors is valid at every size (see
  // onnx_dynamic_dims.h). Sizes a model cannot take (too small for its pooling, ...)
  // make the next probe set be tried.
  Status first_error;
  for (const onnx_import::DimProbe& probe : probes) {
    auto a = onnx_import::convertGraph(model, base_dir, options, &probe.first);
    if (!a.ok() && a.status().code() == StatusCode::kUnsupported) return a.status();
    StatusOr<ir::Graph> b = a.ok() ? onnx_import::convertGraph(model, base_dir, options, &probe.second) : a.status();
    if (!b.ok() && b.status().code() == StatusCode::kUnsupported) return b.status();
    if (a.ok() && b.ok()) return onnx_import::mergeProbeGraphs(model, options, std::move(a).value(), *b);
    if (first_error.ok()) first_error = a.ok() ? b.status() : a.status();
  }
  return first_error.withContext("converting with the dynamic dims kept (at trial sizes; give fixed sizes with "
                                 "--input-shape if the model needs particular ones)");
}

StatusOr<ir::Graph> importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return makeError(StatusCode::kNotFound, "cannot open '", path, "'");
  google::protobuf::io::IstreamInputStream raw(&f);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return makeError(StatusCode::kInvalidModel, "'", path, "' is not a valid ONNX model (protobuf parse failed: "
                     "truncated or not ONNX)");
  }
  const size_t slash = path.find_last_of('/');
  return importOnnxModel(model, slash == std::string::npos ? "." : path.substr(0, slash), options);
}

}  // namespace gkrt
