// Automatic accuracy bisection of graph kernel fusion, for `gkrt bisect`.
//
//   BisectOptions o;
//   o.backend = "cpu";                                // fused, the flags' passes on
//   o.reference_backend = "reference";                // unfused: the oracle
//   ASSIGN_OR_RETURN(BisectResult r, bisectFusion(model, o));
//   std::cout << formatBisectReport(r);               // culprit, flags to paste, kernels
//
// Runs the model unfused on the reference backend and fused on the target. When the
// outputs differ beyond the tolerance it switches passes off (disable_pass) and
// bisects to the smallest set whose removal restores accuracy; when that set holds
// GraphKernelExpander or a clustering pass, it narrows it to expander ops
// (disable_expand_ops) or cluster ops (disable_cluster_ops) the same way. It names
// the fused kernels involved and the first tensor that differs from the reference
// (every value of the model exposed as an output, in the model's order; if exposing
// them hides the difference, the fused graph's kernel outputs in run order).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/host_tensor.h"
#include "runtime/ir/graph.h"
#include "runtime/session.h"

namespace gkrt::tools {

struct BisectOptions {
  std::string backend = "cpu";
  std::string reference_backend = "reference";
  std::string flags;          // the target's fusion flags (MS_DEV_GRAPH_KERNEL_FLAGS syntax)
  double tolerance = 1e-4;    // an element matches when |got - want| <= tolerance * (1 + |want|)
  BackendOptions backend_options;
  std::map<std::string, Shape> input_shapes;
  std::map<std::string, HostTensor> inputs;  // the rest are random (tools/parse_args.h)
  std::function<void(const std::string&)> progress;  // one line per run tried
};

struct Divergence {
  std::string tensor;   // "" when none found
  std::string kernel;   // the kernel (node) of the fused graph that writes it
  double error = 0;     // max |got - want| / (1 + |want|)
};

struct BisectResult {
  bool matched = false;        // the fused outputs match the reference: nothing to do
  bool fusion_explains = true; // false: the target differs with fusion off too
  double error = 0;            // the fused run's worst output error
  std::string worst_output;
  std::vector<std::string> passes;       // smallest set of passes to disable
  std::vector<std::string> expand_ops;   // or: expander ops to disable
  std::vector<std::string> cluster_ops;  // or: cluster ops to disable
  std::string fix_flags;       // the target's flags plus the fix, to paste
  bool fix_verified = false;   // a run with fix_flags matched the reference
  double fixed_error = 0;
  std::vector<std::string> kernels;  // involved fused kernels: "fused_0 (Mul, Add)"
  Divergence first_divergence;
  int runs = 0;                // sessions compiled and run
  std::string backend, reference_backend;
  double tolerance = 0;
};

StatusOr<BisectResult> bisectFusion(const ir::Graph& model, const BisectOptions& options);
std::string formatBisectReport(const BisectResult& result);

// The smallest subset S of `candidates` (minimal: dropping any element breaks it) for
// which restores(S) holds, assuming restores(candidates) holds; splits in halves
// (QuickXplain), so one culprit among n costs about 2 log2(n) calls.
StatusOr<std::vector<std::string>> minimalRestoringSet(
    const std::vector<std::string>& candidates,
    const std::function<StatusOr<bool>(const std::vector<std::string>&)>& restores);

}  // namespace gkrt::tools
