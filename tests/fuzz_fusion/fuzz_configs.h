// The fusion flag sets one random graph runs with on each backend, in
// MS_DEV_GRAPH_KERNEL_FLAGS syntax. Every backend gets every opt_level; on top, each
// graph gets flags drawn from its seed: another table column (fusion_profile), stitch
// and parallel fusion switched against their opt_level default, one pipeline pass
// switched off (disable_pass, every switchable pass in turn over the seeds), expander
// and cluster ops of the graph switched off or on, a tiny composite_op_limit_size, a
// reduce_fuse_depth of 1 and the other fusion_ops_levels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz_fusion/random_graph.h"

namespace gkrt::fuzz {

// The four opt_levels first, then the seed's extra sets.
std::vector<std::string> fuzzFlagSets(const RandomGraph& rg, uint64_t seed);

}  // namespace gkrt::fuzz
