// Builds graphs from C++ the way the seeds' Python builds networks.
//
//   GraphBuilder b;
//   auto x = b.input("x", DType::kFloat32, {4, 4});
//   auto y = b.add(b.mul(x, 2.0f), 1.0f);          // MyNet
//   b.output(y, "result");
//   StatusOr<ir::Graph> g = b.finish();             // validated, shapes inferred
//   saveModelFile(*g, "mynet.gkm");
//
// Any op can be added by name: b.op("Softmax", {x}, AxisAttrs{-1}). The first error
// (unknown op, bad shapes, wrong attributes) is kept and returned by finish().
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt {

class GraphBuilder;

struct Value {
  int id = -1;  // tensor index; -1 after an error, or for an absent optional input
};

class GraphBuilder {
 public:
  GraphBuilder();

  Value input(const std::string& name, DType dtype, const Shape& shape, std::vector<std::string> dim_symbols = {});
  // A constant from raw bytes (size must equal shape x dtype).
  Value constant(const std::string& name, DType dtype, const Shape& shape, const void* bytes);
  Value constant(const Shape& shape, const std::vector<float>& values);
  // A constant over bytes someone else owns (shared, not copied; size = shape x dtype).
  Value constant(const std::string& name, DType dtype, const Shape& shape, std::shared_ptr<const ir::ConstData> data);
  // A 0-d constant of `like`'s dtype (float types; integer types truncate).
  Value scalar(float v, Value like);

  // Adds a node; returns its outputs (num_outputs of them, or op's minimum).
  // `subgraphs`: a control-flow node's branches or body (If, Loop, Scan).
  std::vector<Value> op(const std::string& op_name, const std::vector<Value>& inputs, Attrs attrs = {},
                        int num_outputs = -1, const std::string& node_name = "",
                        std::vector<std::shared_ptr<ir::Graph>> subgraphs = {});
  Value op1(const std::string& op_name, const std::vector<Value>& inputs, Attrs attrs = {});

  Value add(Value a, Value b) { return op1("Add", {a, b}); }
  Value add(Value a, float b) { return op1("Add", {a, scalar(b, a)}); }
  Value sub(Value a, Value b) { return op1("Sub", {a, b}); }
  Value sub(Value a, float b) { return op1("Sub", {a, scalar(b, a)}); }
  Value mul(Value a, Value b) { return op1("Mul", {a, b}); }
  Value mul(Value a, float b) { return op1("Mul", {a, scalar(b, a)}); }
  Value div(Value a, Value b) { return op1("RealDiv", {a, b}); }
  Value pow(Value a, float b) { return op1("Pow", {a, scalar(b, a)}); }
  Value pow(Value a, Value b) { return op1("Pow", {a, b}); }
  Value exp(Value a) { return op1("Exp", {a}); }
  Value relu(Value a) { return op1("ReLU", {a}); }
  Value matmul(Value a, Value b, bool transpose_b = false);

  // Marks `v` as a graph output, renaming its tensor when `name` is given.
  void output(Value v, const std::string& name = "");
  void setMetadata(const std::string& key, const std::string& value) { graph_.metadata[key] = value; }

  const Status& status() const { return status_; }
  // The tensor behind a value (dtype, shape as inferred so far, constant data).
  const ir::Tensor& tensor(Value v) const { return graph_.tensors[v.id]; }
  // The graph built so far (shapes as inferred so far), for converters that look
  // at how a value was computed.
  const ir::Graph& graph() const { return graph_; }
  // Records an error raised by the caller (the first one is kept).
  void setError(Status s) { fail(std::move(s)); }
  // Validates the graph, infers shapes and hands it over.
  StatusOr<ir::Graph> finish();

 private:
  bool fail(Status s);
  std::string uniqueName(const std::string& base);

  ir::Graph graph_;
  Status status_;
  int counter_ = 0;
};

}  // namespace gkrt
