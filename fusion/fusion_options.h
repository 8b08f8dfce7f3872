// Fusion options: filled from the API, from `gkrt` options, or parsed from a flag
// string in MindSpore's MS_DEV_GRAPH_KERNEL_FLAGS syntax.
//
//   ASSIGN_OR_RETURN(FusionOptions o, parseFusionFlags("--opt_level=3 --disable_cluster_ops=Exp,Log"));
//   ASSIGN_OR_RETURN(FusionOptions env, fusionOptionsFromEnvironment());   // MS_DEV_GRAPH_KERNEL_FLAGS
//
// Syntax: items separated by spaces, each `--key=value` (or `--key` for a true bool);
// list values separated by commas. Unlike MindSpore, which warns and carries on,
// gkrt rejects an unknown flag, a malformed token or value, and an unknown op or pass
// name, listing the valid choices. MindSpore flags with no meaning in gkrt are
// accepted with one warning each.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/ir/fusion_column.h"
#include "runtime/ir/status.h"

namespace gkrt {

struct FusionOptions {
  int opt_level = 2;                     // 0 off, 1 basic, 2 + CSE/simplify, 3 + stitch/parallel
  std::optional<FusionColumn> profile;   // which table column; default the backend's
  int fusion_ops_level = -1;             // -1: the column's default
  std::vector<std::string> enable_expand_ops, disable_expand_ops, enable_expand_ops_only;
  std::vector<std::string> enable_cluster_ops, disable_cluster_ops, enable_cluster_ops_only;
  std::vector<std::string> enable_packet_ops_only, disable_packet_ops;
  std::vector<std::string> enable_pass, disable_pass;
  bool dump_as_text = false;
  bool enable_debug_mode = false;
  std::optional<bool> enable_stitch_fusion;    // default: opt_level == 3
  std::optional<bool> enable_parallel_fusion;  // default: opt_level == 3
  int reduce_fuse_depth = 20;                  // ops a reduce may absorb
  int composite_op_limit_size = 200;           // ops per fused kernel
  std::string dump_dir = "graph_kernel_dump";
  std::vector<std::string> warnings;           // accepted flags that do nothing here

  bool stitchFusion() const { return enable_stitch_fusion.value_or(opt_level == 3); }
  bool parallelFusion() const { return enable_parallel_fusion.value_or(opt_level == 3); }
};

// Parses `flags` on top of `base`.
StatusOr<FusionOptions> parseFusionFlags(std::string_view flags, FusionOptions base = {});
// The options MS_DEV_GRAPH_KERNEL_FLAGS asks for (defaults when unset); the only
// place that variable is read.
StatusOr<FusionOptions> fusionOptionsFromEnvironment();

}  // namespace gkrt
