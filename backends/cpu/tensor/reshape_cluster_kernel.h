// The cpu kernel of fused clusters that only reshape (Reshape, ExpandDims, Squeeze and
// transposes of size-1 axes the cluster pass turned into Reshape), with at most one Cast
// on the way, and of single reshape ops: the bytes copied once (or not at all: the
// output takes its dying input's bytes in place), or converted element by element when
// a Cast is there. Decoder graphs make several of these a token (heads split and joined, position
// ids cast); the reference kernel of a fused node interprets its subgraph and allocates.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace gkrt::cpu {

bool canRunReshapeCluster(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compileReshapeCluster(const ir::Graph& g, const ir::Node& node);

}  // namespace gkrt::cpu
