// Random valid graphs for the differential fusion fuzzer: one seed, one graph and its
// inputs, always the same on every machine (std::mt19937_64 and integer arithmetic
// only pick the structure; values come from the same generator).
//
//   ASSIGN_OR_RETURN(RandomGraph rg, makeRandomGraph(seed));
//   runGraph(rg.graph, rg.inputs, "cpu", flags);
//
// The graphs mix elementwise and broadcast chains, reductions over random axes with
// and without keep_dims, reshape/transpose/expand/squeeze/slice/concat/split,
// matmul/batch-matmul, conv, softmax/layernorm/rmsnorm/batchnorm, diamonds (values
// reused by several consumers) and multi-output nodes, with 1-sized and odd dims, in
// float32, float16 or int32 (with bool from comparisons). Values stay inside each op's
// domain (a Log or a divisor sees |x|+0.5, an Exp sees min(x, 4)), and ops whose output
// jumps on tiny input changes (Floor, Round, Sign, comparisons, ArgMax, integer casts)
// only read *exact* values (inputs, constants and what max/min/abs/neg/layout ops make
// of them), so a fused kernel's reordered float arithmetic cannot flip them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/builder.h"
#include "runtime/host_tensor.h"
#include "runtime/ir/graph.h"

namespace gkrt::fuzz {

struct RandomGraph {
  ir::Graph graph;
  std::vector<HostTensor> inputs;  // by graph input order
  std::vector<std::string> ops;    // op names used, in build order
  int rejected_steps = 0;          // generator steps the builder refused and retried
  bool patterns = false;           // made by makePatternGraph (pattern_graph.h)
};

StatusOr<RandomGraph> makeRandomGraph(uint64_t seed);

// What both generators (this one and pattern_graph.h) share:
// `values` in float32, float16 or int32 (rounded toward zero) as a tensor of shape `s`.
HostTensor tensorFromValues(DType dtype, const Shape& s, const std::vector<float>& values);
// Marks the tensors `outputs` (each once, in order) as out0, out1, ... and hands over the
// graph with its inputs and the op names used.
StatusOr<RandomGraph> finishRandomGraph(GraphBuilder& b, const std::vector<int>& outputs, std::vector<HostTensor> inputs,
                                        std::vector<std::string> ops);

}  // namespace gkrt::fuzz
