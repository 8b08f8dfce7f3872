#include "backends/cpu/onednn/onednn_post_ops.h"

#ifdef GKRT_HAVE_DNNL
#include <algorithm>
#include <map>
#include <string>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

using alg = dnnl::algorithm;

bool isFloat32(const ir::Tensor& t) { return t.dtype == DType::kFloat32; }

// Post-op of `n` applied to the chain value (its input `chain`); false when oneDNN has none.
bool postOpFor(const ir::Graph& body, const ir::Node& n, int chain, const SourceFn& source, PostOp* p) {
  const std::string op = n.op->name;
  if (n.inputs.size() == 1) {
    static const std::map<std::string, alg> kUnary = {{"ReLU", alg::eltwise_relu}, {"Tanh", alg::eltwise_tanh},
                                                      {"Sigmoid", alg::eltwise_logistic}, {"Exp", alg::eltwise_exp},
                                                      {"Sqrt", alg::eltwise_sqrt}, {"Abs", alg::eltwise_abs},
                                                      {"Square", alg::eltwise_square},
                                                      {"HSwish", alg::eltwise_hardswish}};
    if (auto it = kUnary.find(op); it != kUnary.end()) return p->alg = it->second, true;
    if (op == "GeLU") {
      p->alg = n.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone ? alg::eltwise_gelu_erf : alg::eltwise_gelu_tanh;
      return true;
    }
    if (op == "Clip") {
      const auto& c = n.attrs.get<ClipAttrs>();
      return p->alg = alg::eltwise_clip, p->alpha = c.min, p->beta = c.max, true;
    }
    if (op == "LeakyReLU") return p->alg = alg::eltwise_relu, p->alpha = n.attrs.get<AlphaAttrs>().alpha, true;
    if (op == "SiLU") return p->alg = alg::eltwise_swish, p->alpha = 1.0f, true;
    return false;
  }
  if (n.inputs.size() != 2 || (op != "Add" && op != "Sub" && op != "Mul" && op != "Maximum" && op != "Minimum")) return false;
  const bool chain_first = n.inputs[0] == chain;
  const int other = chain_first ? n.inputs[1] : n.inputs[0];
  if (other == chain || other < 0 || !isFloat32(body.tensors[other])) return false;
  const ir::Tensor& o = body.tensors[other];
  if (o.isConstant() && numElements(o.shape) == 1) {
    const float s = *reinterpret_cast<const float*>(o.constant->data);
    if (op == "Maximum" && s == 0.0f) return p->alg = alg::eltwise_relu, p->alpha = 0, true;
    if (op == "Add" || op == "Sub" || op == "Mul") {
      p->alg = alg::eltwise_linear;  // alpha * x + beta
      if (op == "Add") p->alpha = 1, p->beta = s;
      if (op == "Mul") p->alpha = s, p->beta = 0;
      if (op == "Sub") p->alpha = chain_first ? 1.0f : -1.0f, p->beta = chain_first ? -s : s;
      return true;
    }
  }
  if (op == "Sub" && !chain_first) return false;
  static const std::map<std::string, alg> kBinary = {{"Add", alg::binary_add}, {"Sub", alg::binary_sub},
                                                     {"Mul", alg::binary_mul}, {"Maximum", alg::binary_max},
                                                     {"Minimum", alg::binary_min}};
  p->binary = true;
  p->alg = kBinary.at(op);
  p->t = &o;
  return source(other, &p->src);
}

}  // namespace

SourceFn operandSource(const ir::Graph& g, const ir::Node& node) {
  return [&g, &node](int t, Source* s) {
    if (t < 0) return false;
    if (node.subgraph) {
      const ir::Graph& body = *node.subgraph;
      for (size_t k = 0; k < body.inputs.size(); ++k) if (body.inputs[k] == t) return s->input = int(k), true;
      if (body.tensors[t].isConstant()) return s->constant = body.tensors[t].constant->data, true;
      return false;
    }
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k] != t) continue;
      s->input = int(k);
      if (g.tensors[t].isConstant()) s->constant = g.tensors[t].constant->data;
      return true;
    }
    return false;
  };
}

bool planPostOps(const ir::Graph& body, size_t first, int chain, const Shape& y, const SourceFn& source,
                 std::vector<PostOp>* posts, bool leading_linear_folded) {
  for (size_t i = first; i < body.nodes.size(); ++i) {
    const ir::Node& n = body.nodes[i];
    if (n.outputs.size() != 1 || body.tensors[n.outputs[0]].shape != y || !isFloat32(body.tensors[n.outputs[0]])) return false;
    PostOp post;
    // x * Sigmoid(x): the Sigmoid and this Mul as one swish (the Sigmoid was planned
    // as a logistic post-op: replace it).
    const bool swish = i > first && std::string(n.op->name) == "Mul" && n.inputs.size() == 2 &&
                       std::string(body.nodes[i - 1].op->name) == "Sigmoid" && !posts->empty() &&
                       posts->back().alg == alg::eltwise_logistic &&
                       ((n.inputs[0] == chain && n.inputs[1] == body.nodes[i - 1].inputs[0]) ||
                        (n.inputs[1] == chain && n.inputs[0] == body.nodes[i - 1].inputs[0]));
    if (swish) {
      posts->back().alg = alg::eltwise_swish;
      posts->back().alpha = 1.0f;
      chain = n.outputs[0];
      continue;
    }
    if (std::count(n.inputs.begin(), n.inputs.end(), chain) != 1) return false;
    if (!postOpFor(body, n, chain, source, &post)) return false;
    if (post.binary && post.t->shape.size() > y.size()) return false;
    PostOp* last = posts->empty() ? nullptr : &posts->back();
    if (last && !last->binary && last->alg == alg::eltwise_linear && post.alg == alg::eltwise_linear) {
      last->beta = post.alpha * last->beta + post.beta;  // a2 (a1 x + b1) + b2 as one linear
      last->alpha *= post.alpha;
    } else {
      posts->push_back(post);
    }
    chain = n.outputs[0];
  }
  // oneDNN 2.6 gives every eltwise post-op of one algorithm the first one's parameters
  // (seen here: linear(0.5), exp, linear(1, -0.25) computed 0.5 exp(.)): one each.
  const size_t from = leading_linear_folded && !posts->empty() && !(*posts)[0].binary &&
                      (*posts)[0].alg == alg::eltwise_linear ? 1 : 0;
  for (size_t i = from; i < posts->size(); ++i) {
    for (size_t j = from; j < i; ++j) {
      if (!(*posts)[i].binary && !(*posts)[j].binary && (*posts)[i].alg == (*posts)[j].alg) return false;
    }
  }
  return body.outputs.size() == 1 && body.outputs[0] == chain;
}

dnnl::memory::desc binaryDesc(const Shape& s, size_t rank) {
  dnnl::memory::dims d(rank, 1), strides(rank, 1);
  for (size_t k = 0; k < s.size(); ++k) d[rank - s.size() + k] = s[k];
  int64_t st = 1;
  for (size_t k = rank; k-- > 0;) {
    strides[k] = st;
    st *= d[k];
  }
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32, strides);
}

dnnl::memory::format_tag activationTag(bool blocked, int block, bool channels_last) {
  using tag = dnnl::memory::format_tag;
  if (!blocked) return tag::nchw;
  if (channels_last) return tag::nhwc;
  return block == 16 ? tag::nChw16c : tag::nChw8c;
}

void appendPostOps(const std::vector<PostOp>& posts, size_t rank, dnnl::primitive_attr* attr,
                   std::vector<dnnl::memory>* mems) {
  dnnl::post_ops po;
  for (const PostOp& post : posts) {
    if (post.binary) {
      const Shape& s = post.t->shape;
      const auto md = post.layout != dnnl::memory::format_tag::undef && s.size() == 4
                          ? dnnl::memory::desc({s[0], s[1], s[2], s[3]}, dnnl::memory::data_type::f32, post.layout)
                          : binaryDesc(s, rank);
      po.append_binary(post.alg, md);
      mems->push_back(dnnl::memory(md, oneDnnEngine(), DNNL_MEMORY_NONE));
    } else {
      po.append_eltwise(1.0f, post.alg, post.alpha, post.beta);
      mems->emplace_back();
    }
  }
  if (!posts.empty()) attr->set_post_ops(po);
}

void setPostOpArgs(const std::vector<PostOp>& posts, std::vector<dnnl::memory>& mems, const std::vector<TensorView>& in,
                   std::unordered_map<int, dnnl::memory>* args) {
  for (size_t k = 0; k < posts.size(); ++k) {
    if (!posts[k].binary) continue;
    mems[k].set_data_handle(const_cast<void*>(posts[k].src.at(in)));
    (*args)[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(k)) | DNNL_ARG_SRC_1] = mems[k];
  }
}

void setPostOpArgs(const std::vector<PostOp>& posts, std::vector<dnnl::memory>& mems, const std::vector<TensorView>& in,
                   OneDnnArgs* args) {
  for (size_t k = 0; k < posts.size(); ++k) {
    if (!posts[k].binary) continue;
    mems[k].set_data_handle(const_cast<void*>(posts[k].src.at(in)));
    args->set(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(k)) | DNNL_ARG_SRC_1, mems[k]);
  }
}

void OneDnnArgs::set(int arg, const dnnl::memory& m) {
  for (dnnl_exec_arg_t& a : args_) {
    if (a.arg == arg) { a.memory = m.get(); return; }
  }
  args_.push_back({arg, m.get()});
}

void OneDnnArgs::execute(const dnnl::primitive& prim, const dnnl::stream& stream) const {
  dnnl::error::wrap_c_api(dnnl_primitive_execute(prim.get(), stream.get(), static_cast<int>(args_.size()), args_.data()),
                          "could not execute a primitive");
}

}  // namespace gkrt::cpu
#endif
