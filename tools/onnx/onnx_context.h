// State shared by the per-op ONNX converters: the graph being built, the ONNX value
// names bound so far, constant folding, and attribute access.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/builder.h"
#include "runtime/host_tensor.h"

namespace gkrt::onnx_import {

class Context {
 public:
  explicit Context(int64_t opset) : opset_(opset) {}

  GraphBuilder& builder() { return b_; }
  int64_t opset() const { return opset_; }
  void bind(const std::string& name, Value v) { values_[name] = v; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  Value value(const std::string& name) const { return values_.at(name); }

  // Input k of the node; Value{-1} when absent or empty.
  Value in(const onnx::NodeProto& n, int k) const;
  bool present(const onnx::NodeProto& n, int k) const { return in(n, k).id >= 0; }
  // An absent or failed value (id -1: a node the builder refused) reads as an empty
  // tensor, so converters can look at it; the builder's error is reported after the node.
  const ir::Tensor& tensor(Value v) const {
    static const ir::Tensor kNone{};
    return v.id >= 0 ? b_.tensor(v) : kNone;
  }
  bool isConstant(Value v) const { return v.id >= 0 && b_.tensor(v).isConstant(); }
  StatusOr<HostTensor> constant(Value v, const char* what) const;
  StatusOr<std::vector<int64_t>> constInts(Value v, const char* what) const;
  StatusOr<float> constFloat(Value v, const char* what) const;
  Value constant(const HostTensor& t) { return b_.constant("", t.dtype(), t.shape(), t.data()); }
  Value ints(const std::vector<int64_t>& v);

  // How many nodes and graph outputs read ONNX value `name`.
  int uses(const std::string& name) const { auto it = uses_.find(name); return it == uses_.end() ? 0 : it->second; }
  void countUse(const std::string& name) { ++uses_[name]; }
  // Convolutions made so far, by output value id, so a following BatchNormalization
  // can fold into them.
  struct ConvRecord { Value x, w, b; Conv2DAttrs attrs; };
  std::map<int, ConvRecord>& convs() { return convs_; }

  // Models kept with dynamic dims: values whose shape (or, for shape arithmetic, value)
  // depends on an input's dynamic dims. Converters that would bake such a dim into an
  // attribute emit the op's dynamic form instead (DynamicReshape, DynamicSlice, ...).
  void markDynamic(Value v) { if (v.id >= 0) dynamic_.insert(v.id); }
  bool isDynamic(Value v) const { return v.id >= 0 && dynamic_.count(v.id) > 0; }
  bool keepsDynamicDims() const { return !dynamic_.empty(); }
  // Subgraphs (If branches, Loop/Scan bodies) convert in a context of their own whose
  // `parent` is the enclosing graph's. A name this graph does not define is looked up
  // outward: an outer constant is copied in, any other outer value becomes a new input
  // of this graph (appended after its own inputs) and is listed in `captures` (the
  // value in the parent) and `capture_names`. False when no enclosing graph has it.
  bool resolveOuter(const std::string& name);
  Context* parent = nullptr;
  std::vector<Value> captures;
  std::vector<std::string> capture_names;
  std::string base_dir;  // where external tensor data of initializers lives

  // Adds op `name`; when every input is a constant the result is computed now and
  // bound as constants instead (no node is added).
  std::vector<Value> op(const std::string& name, const std::vector<Value>& inputs, Attrs attrs = {}, int outputs = 1);
  Value op1(const std::string& name, const std::vector<Value>& inputs, Attrs attrs = {}) {
    return op(name, inputs, std::move(attrs), 1)[0];
  }

 private:
  GraphBuilder b_;
  int64_t opset_;
  std::map<std::string, Value> values_;
  std::map<std::string, int> uses_;
  std::map<int, ConvRecord> convs_;
  std::set<int> dynamic_;
};

// Converts the nodes of `g` into `c` in order, every unsupported op reported at once;
// `count_uses`: count the uses of each value first (false when the caller counted
// them, as the top level does for the branches of an If it inlines).
Status convertGraphNodes(Context& c, const onnx::GraphProto& g, bool count_uses);
// Counts, in `c`, every value that `g`'s nodes (and their subgraphs) read.
void countUses(Context& c, const onnx::GraphProto& g);

// Attribute access with defaults.
const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const std::string& name);
int64_t attrInt(const onnx::NodeProto& n, const std::string& name, int64_t def);
float attrFloat(const onnx::NodeProto& n, const std::string& name, float def);
std::string attrString(const onnx::NodeProto& n, const std::string& name, const std::string& def);
std::vector<int64_t> attrInts(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> def = {});

// A converter fills `outs` (one per node output) or returns kUnsupported naming what
// it cannot handle.
using Converter = Status (*)(Context& c, const onnx::NodeProto& n, std::vector<Value>& outs);
const Converter* findConverter(const std::string& op_type);
std::vector<std::string> supportedOnnxOps();

}  // namespace gkrt::onnx_import
