// What oneDNN's GEMM and convolution kernels share: the cpu engine, where an operand's
// bytes are at launch, and the elementwise chain after a matmul or convolution turned
// into oneDNN post-ops (eltwise for unary ops and scalar constants, binary for tensor
// operands) — the epilogue fusion decided in fusion/ (cluster_passes.cc) executed here.
#pragma once

#ifdef GKRT_HAVE_DNNL
#include <functional>
#include <vector>

#include <dnnl.hpp>

#include "backends/backend.h"

namespace gkrt::cpu {

dnnl::engine& oneDnnEngine();

// Where an operand's bytes are at launch: a kernel input, or a constant of the model.
struct Source {
  int input = -1;
  const void* constant = nullptr;
  const void* at(const std::vector<TensorView>& in) const { return constant ? constant : in[input].data; }
};

struct PostOp {
  bool binary = false;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0, beta = 0;
  const ir::Tensor* t = nullptr;  // binary: the other operand
  Source src;
  // binary, 4-D: the layout the operand is stored in (blocked_layout.h); undef: plain,
  // read through binaryDesc's broadcast strides
  dnnl::memory::format_tag layout = dnnl::memory::format_tag::undef;
};

// Finds tensor t among the kernel's operands (false: neither an input nor a constant).
using SourceFn = std::function<bool(int t, Source*)>;

// Where `node`'s kernel finds tensor t: a Fused node's body inputs by position and its
// constants, or a basic node's inputs (constants also by address, so weights can be
// prepared at compile). `g` and `node` must outlive the result.
SourceFn operandSource(const ir::Graph& g, const ir::Node& node);

// The post-ops for body nodes [first, end): each takes the previous one's value (the
// first takes `chain`) once and yields one float32 tensor of shape `y`; the last one's
// value must be the body's only output. Also x * Sigmoid(x) as one swish. False when
// a node has no oneDNN post-op, or when two eltwise post-ops share an algorithm (oneDNN
// 2.6 gives them the first one's parameters) unless `leading_linear_folded`: the caller
// folds a scalar linear first post-op into its weights (then only the rest must differ).
bool planPostOps(const ir::Graph& body, size_t first, int chain, const Shape& y, const SourceFn& source,
                 std::vector<PostOp>* posts, bool leading_linear_folded = false);

// The oneDNN layout of a 4-D activation in a layout plan (blocked_layout.h): plain nchw;
// nChw8c/nChw16c; nhwc in a channels-last plan — for every channel count, also 16 or 8,
// where nChw16c/nChw8c are the same bytes: oneDNN picks kernels by the tags, and a
// convolution between a 16-channel nChw16c tensor and an nhwc one gets only its
// reference code.
dnnl::memory::format_tag activationTag(bool blocked, int block, bool channels_last);

// `rank`-D descriptor of a binary operand broadcast against an output of that rank.
dnnl::memory::desc binaryDesc(const Shape& s, size_t rank);

// Appends the post-ops to `attr`; `mems` gets one memory per post-op (binary ones get
// their data handle at launch through setPostOpArgs).
void appendPostOps(const std::vector<PostOp>& posts, size_t rank, dnnl::primitive_attr* attr,
                   std::vector<dnnl::memory>* mems);
// A primitive's arguments kept between launches: set() replaces or adds one, execute()
// runs through oneDNN's C API, so a launch allocates nothing once the list has its size
// (the C++ API's execute() builds a map and a vector every call).
class OneDnnArgs {
 public:
  void set(int arg, const dnnl::memory& m);
  void execute(const dnnl::primitive& prim, const dnnl::stream& stream) const;

 private:
  std::vector<dnnl_exec_arg_t> args_;
};
void setPostOpArgs(const std::vector<PostOp>& posts, std::vector<dnnl::memory>& mems, const std::vector<TensorView>& in,
                   OneDnnArgs* args);
void setPostOpArgs(const std::vector<PostOp>& posts, std::vector<dnnl::memory>& mems, const std::vector<TensorView>& in,
                   std::unordered_map<int, dnnl::memory>* args);

}  // namespace gkrt::cpu
#endif
