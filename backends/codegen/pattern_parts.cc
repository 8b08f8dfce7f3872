#include "backends/codegen/pattern_parts.h"

#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt::codegen {

// The C type of an element type the pattern kernels read or write.
std::string cType(DType t, const KernelDialect& d) {
  const bool cl = std::strcmp(d.name, "opencl") == 0;
  switch (t) {
    case DType::kInt64: return d.long_type;
    case DType::kInt8: return cl ? "char" : "signed char";
    case DType::kUInt8: return cl ? "uchar" : "unsigned char";
    case DType::kInt32: return "int";
    default: return "float";
  }
}

// The kernel's signature: y0.. for the outputs, x0.. for every input slot (an absent
// one as a float pointer).
std::string signature(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d) {
  std::string s = std::string(d.kernel_prefix) + " " + name + "(";
  const std::string gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  auto type = [&](int t) { return t >= 0 ? cType(g.tensors[t].dtype, d) : std::string("float"); };
  for (size_t o = 0; o < node.outputs.size(); ++o) s += (o ? ", " : "") + gp + type(node.outputs[o]) + "* y" + num(int64_t(o));
  for (size_t i = 0; i < node.inputs.size(); ++i) s += ", " + gp + "const " + type(node.inputs[i]) + "* x" + num(int64_t(i));
  return s + ") {\n";
}

Status needFloat32(const ir::Graph& g, const ir::Node& node) {
  for (int t : node.inputs) {
    if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) {
      return unsupported(std::string(node.op->name) + " of " + dtypeName(g.tensors[t].dtype) + " (float32 only)");
    }
  }
  for (int t : node.outputs) {  // present: renderPatternKernel checked
    if (g.tensors[t].dtype != DType::kFloat32) {
      return unsupported(std::string(node.op->name) + " of " + dtypeName(g.tensors[t].dtype) + " (float32 only)");
    }
  }
  return Status::Ok();
}

// A tree sum of `v` over the work-group into red[0], read back as `out`.
std::string groupSum(const KernelDialect& d, int local, const std::string& v, const std::string& out) {
  const std::string bar = std::string(d.barrier) + ";\n";
  return "    red[lid] = " + v + ";\n    " + bar + "    for (int h = " + num(local / 2) +
         "; h > 0; h >>= 1) {\n      if (lid < h) red[lid] += red[lid + h];\n      " + bar + "    }\n" +
         "    const float " + out + " = red[0];\n    " + bar;
}

// A kernel over rows of r.cols elements, one work-group a row (grid-stride over rows):
// its launch, and the opening of its body (the reduction array `red`, `lid`, `prologue`,
// then the row loop with the row's offset `base`).
RenderedKernel rowKernel(const std::string& name, const ops::NormRows& r) {
  RenderedKernel k;
  k.name = name;
  k.reduce = true;
  k.items = r.rows;
  k.reduce_size = r.cols;
  k.local_size = 32;
  while (k.local_size < 256 && k.local_size * 4 < r.cols) k.local_size *= 2;
  return k;
}
std::string rowLoopOpening(const KernelDialect& d, const RenderedKernel& k, const std::string& prologue) {
  const std::string L = d.long_type;
  return "  " + std::string(d.local_array) + " float red[" + num(k.local_size) + "];\n" +
         "  const int lid = (int)" + std::string(d.local_id) + ";\n" + prologue +
         "  for (" + L + " row = (" + L + ")" + d.group_id + "; row < " + num(k.items) + "; row += (" + L + ")" + d.num_groups +
         ") {\n    const " + L + " base = row * " + num(k.reduce_size) + ";\n";
}

}  // namespace gkrt::codegen
