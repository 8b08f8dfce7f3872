// Graphviz pictures of graph kernel fusion: the graph before fusion on the left, after
// fusion on the right (the seeds' Figures 1 and 2), for `gkrt dump --dot/--svg`.
//
//   FusionPicture pic{model, session->compiledGraph(), "cpu"};
//   pic.kernel_backends = ...;                        // per compiled node, who runs it
//   pic.origin_pass = session->fusionReport().node_origin_pass;
//   std::string dot = fusionPictureToDot(pic, {});
//   RETURN_IF_ERROR(renderDot(dot, "out.svg", "svg"));   // runs Graphviz `dot`
//
// Ops are boxes; fused kernels are framed clusters holding their ops, labelled with
// the pass that made them; a node run by a fallback backend is drawn dashed and red
// with that backend's name; edges carry the tensor's name, dtype and shape; scalar
// constants are folded into their consumer's label. Long single-file chains collapse
// into one "... N ops ..." box, and `region` keeps only the neighbourhood of a node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt::tools {

struct FusionPicture {
  const ir::Graph& before;  // the model as loaded (shapes inferred)
  const ir::Graph& after;   // the session's compiled graph
  std::string backend;      // the session's backend
  std::vector<std::string> kernel_backends;  // per node of `after`; empty = all `backend`
  std::map<std::string, std::string> origin_pass;  // node name -> pass that made it
  std::string title;
};

struct DotOptions {
  int collapse_chains = 8;  // chains of more ops than this become one box; 0 = never
  std::string region;       // a node or tensor name: draw only what lies near it
  int region_radius = 3;    // edges away from the region's centre
  bool edge_labels = true;  // tensor name, dtype and shape on every edge
};

// The DOT text of the picture; an error when `region` names nothing in either graph.
StatusOr<std::string> fusionPictureToDot(const FusionPicture& picture, const DotOptions& options);

// Writes `dot_text` rendered by Graphviz (`dot -T<format>`) to `path`. kNotFound when
// the `dot` program is not installed (the caller then writes the .dot file and says
// how to render it).
Status renderDot(const std::string& dot_text, const std::string& path, const std::string& format);

}  // namespace gkrt::tools
