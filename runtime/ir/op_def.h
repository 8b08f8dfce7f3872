// One op definition: everything the runtime, fusion and backends know about an op.
// Every op is defined exactly once, in runtime/ir/ops/<family>.cc, and looked up by
// name through findOp(); nothing else keeps a list of ops.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/ir/attrs.h"
#include "runtime/ir/graph.h"
#include "runtime/ir/op_selection.h"
#include "runtime/ir/tensor_view.h"

namespace gkrt {

// Fusion pattern classes, ordered as MindSpore's split model orders them: a fused
// area's class is the max of its members'.
enum class OpClass : uint8_t { kReshape = 0, kElementwise, kBroadcast, kReduce, kOpaque };
const char* opClassName(OpClass c);

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;
  // The tensor's bytes when known at compile time (a constant, or a value computed
  // from input shapes); shape rules of ops taking shapes as tensors read it.
  const ir::ConstData* value = nullptr;
};

// Input types (nullptr for an absent optional input) -> output dtypes / shapes.
using DTypeRule = Status (*)(const ir::Node& node, const std::vector<const TensorType*>& in, std::vector<DType>& out);
using ShapeRule = Status (*)(const ir::Node& node, const std::vector<const TensorType*>& in, std::vector<Shape>& out);

struct KernelContext {
  const ir::Node& node;
  const std::vector<TensorView>& inputs;          // absent optional inputs have data == nullptr
  const std::vector<MutableTensorView>& outputs;
  const TensorView& in(size_t i) const { return inputs[i]; }
  const MutableTensorView& out(size_t i) const { return outputs[i]; }
};
// Plain, obvious, portable implementation; the correctness oracle for every backend.
using ReferenceKernel = Status (*)(const KernelContext& ctx);
// Ops taking shape operands as tensors (ONNX Reshape, Expand, Slice, ... of models with
// dynamic dims) name the static op they become once those operands are known: its
// name, attributes and which of this node's inputs it keeps.
struct LoweredOp {
  const char* op = nullptr;
  Attrs attrs;
  std::vector<int> inputs;  // positions in this node's inputs
};
using LowerRule = Status (*)(const ir::Node& node, const std::vector<const TensorType*>& in, LoweredOp& out);

constexpr int kVariadic = -1;

struct OpDef {
  const char* name;
  OpClass op_class;
  int min_inputs;
  int max_inputs;  // kVariadic for any count >= min_inputs
  int min_outputs;
  int max_outputs;
  AttrKind attr_kind;
  DTypeRule dtype_rule;
  ShapeRule shape_rule;
  ReferenceKernel reference;
  const char* summary;  // one line: formula or semantics
  LowerRule lower = nullptr;        // ops with shape operands: their static form
  bool reads_only_shapes = false;   // the kernel reads its inputs' shapes, not their data (Shape)
  // Bit k: the kernel also writes input k in place (CachedAttention's caches: state kept
  // across runs); a device backend's host fallback copies those inputs back.
  uint32_t updates_inputs = 0;
  // Bit k: input k enters the outputs only through sums of products (a GEMM's or a
  // convolution's weights and bias, a recurrent cell's W, R, B): a subnormal constant
  // there moves no output by more than 2^-126 times the sum of |the other factors|
  // (runtime/ir/subnormal_weights.h).
  uint32_t product_inputs = 0;
};

// Control flow (runtime/ir/ops/control_flow.cc): how many subgraphs nodes of `op` hold
// (If 2, Loop and Scan 1, every other op 0).
int subgraphCount(const OpDef& op);
namespace ir {
// Node `i` of `g` holds the subgraphs its op takes, each valid, with as many inputs and
// outputs as the op binds to the node's (messages name the node and the branch).
Status validateControlFlowSubgraphs(const Graph& g, int i);
}  // namespace ir

// Looks an op up by its name or an alias ("Gelu" -> GeLU, "Where" -> Select).
const OpDef* findOp(std::string_view name);
// Every op, in definition order.
const std::vector<OpDef>& allOps();
// Alias -> canonical name pairs.
const std::vector<std::pair<std::string, std::string>>& opAliases();
// Ops that are another op under a second name (SoftplusExt of Softplus, ...): {twin, of}.
const std::vector<std::pair<const char*, const char*>>& opTwins();
// The known op name closest to `name` (edit distance), for "did you mean" hints.
std::string closestOpName(std::string_view name);

}  // namespace gkrt
