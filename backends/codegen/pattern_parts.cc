#include "backends/codegen/pattern_parts.h"

#include "runtime/ir/op_def.h"

namespace gkrt::codegen {

// The C type of an element type the pattern kernels read or write.
std::string cType(DType t, const KernelDialect& d) {
  switch (t) {
    case DType::kInt64: case DType::kInt8: case DType::kUInt8: case DType::kInt32: return d.typeName(t);
    default: return "float";
  }
}

// The kernel's signature: y0.. for the outputs, x0.. for every input slot (an absent
// one as a float pointer).
std::string signature(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d,
                      uint32_t writable) {
  std::string s = std::string(d.kernel_prefix) + " " + name + "(";
  const std::string gp = d.global_ptr[0] ? std::string(d.global_ptr) + " " : "";
  auto type = [&](int t) { return t >= 0 ? cType(g.tensors[t].dtype, d) : std::string("float"); };
  for (size_t o = 0; o < node.outputs.size(); ++o) s += (o ? ", " : "") + gp + type(node.outputs[o]) + "* y" + num(int64_t(o));
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    s += ", " + gp + ((writable >> i) & 1 ? "" : "const ") + type(node.inputs[i]) + "* x" + num(int64_t(i));
  }
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

std::string onlineSoftmaxChunk(const KernelDialect& d, int lanes, int nv) {
  const std::string WS = num(lanes), NV = num(nv), ex = d.math("exp"), bar = std::string(d.barrier) + ";\n";
  std::string s = "      sm[sa + t] = sc;\n      " + bar;
  // The row's new maximum, NaN-propagating (a NaN score makes the row NaN, as the
  // unfused softmax; fmax would drop it).
  s += "      float mn = m;\n";
  s += "      for (int u = 0; u < " + WS + "; ++u) { const float z = sm[sa + u]; mn = (z > mn || z != z) ? z : mn; }\n";
  s += "      float pr = 0.0f;\n";
  s += "      if (mn != -GK_INF) {\n";  // while every score so far is -inf nothing is added
  s += "        const float cf = " + ex + "(m - mn);\n";
  s += "        l *= cf;\n";
  s += "        for (int c = 0; c < " + NV + "; ++c) acc[c] *= cf;\n";
  s += "        m = mn;\n";
  s += "        pr = " + ex + "(sc - m);\n";
  s += "      }\n";
  s += "      sm[pa + t] = pr;\n";
  return s + "      " + bar;
}

std::string accumulateChunk(const KernelDialect& d, int lanes, int nv, int64_t dv, const std::string& bound,
                            const std::string& row_decl, const std::string& value) {
  const std::string WS = num(lanes), NV = num(nv), DV = num(dv);
  std::string s = "      if (live) {\n";
  s += "        for (int u = 0; u < " + WS + " && j0 + u < " + bound + "; ++u) {\n";
  s += "          const float pu = sm[pa + u];\n";
  s += "          l += pu;\n";
  if (!row_decl.empty()) s += "          " + row_decl + "\n";
  s += "          for (int c = 0; c < " + NV + "; ++c) {\n";
  s += "            const int e = t + c * " + WS + ";\n";
  s += "            if (e < " + DV + ") acc[c] += pu * " + value + ";\n";
  s += "          }\n        }\n      }\n";
  return s + "      " + std::string(d.barrier) + ";\n";  // before the next chunk overwrites the keys, values, scores and probabilities
}

}  // namespace gkrt::codegen
