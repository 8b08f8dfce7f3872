// Building ONNX models by hand in the converter tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace gkrt {

inline onnx::ModelProto model(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  return m;
}

inline void addInput(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, int type = onnx::TensorProto::FLOAT) {
  auto* v = g->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}
inline void addOutput(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }
inline onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(g->node_size()));
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}
inline void addInitializer(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

}  // namespace gkrt
