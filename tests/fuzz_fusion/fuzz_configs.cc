#include "tests/fuzz_fusion/fuzz_configs.h"

#include <algorithm>
#include <random>
#include <set>

#include "fusion/expander.h"
#include "fusion/pass_manager.h"

namespace gkrt::fuzz {
namespace {

std::string joinNames(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// Some of `names` (at least one when there are any), in a seed-given order.
std::vector<std::string> someOf(std::vector<std::string> names, std::mt19937_64& rng) {
  std::shuffle(names.begin(), names.end(), rng);
  if (names.size() > 1) names.resize(1 + rng() % names.size());
  return names;
}

}  // namespace

std::vector<std::string> fuzzFlagSets(const RandomGraph& rg, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0xF1A65EEDull);
  std::set<std::string> used(rg.ops.begin(), rg.ops.end());
  std::vector<std::string> expandable, all_ops(used.begin(), used.end());
  for (const std::string& op : used) if (hasExpander(op)) expandable.push_back(op);

  std::vector<std::string> sets = {"--opt_level=0", "--opt_level=1", "--opt_level=2", "--opt_level=3"};
  const std::vector<std::string> passes = switchablePassNames();
  const std::string level = std::to_string(1 + rng() % 3);
  std::vector<std::string> extra = {
      "--opt_level=" + level + " --fusion_profile=gpu",
      "--opt_level=" + level + " --fusion_profile=ascend",
      "--opt_level=3 --enable_stitch_fusion=false --enable_parallel_fusion=false",
      "--opt_level=2 --enable_stitch_fusion=true --enable_parallel_fusion=true",
      "--opt_level=3 --disable_pass=" + passes[seed % passes.size()],
      "--opt_level=" + level + " --composite_op_limit_size=" + std::to_string(1 + rng() % 3),
      "--opt_level=3 --reduce_fuse_depth=1",
      "--opt_level=" + level + " --fusion_ops_level=" + std::to_string(rng() % 2 == 0 ? 0 : 2),
  };
  const char* profiles[] = {"cpu", "gpu", "ascend"};
  const std::string profile = std::string(" --fusion_profile=") + profiles[rng() % 3];
  if (!expandable.empty()) {
    extra.push_back("--opt_level=" + level + profile + " --disable_expand_ops=" + joinNames(someOf(expandable, rng)));
    extra.push_back("--opt_level=" + level + profile + " --enable_expand_ops=" + joinNames(someOf(expandable, rng)));
  }
  if (!all_ops.empty()) {
    extra.push_back("--opt_level=" + level + profile + " --disable_cluster_ops=" + joinNames(someOf(all_ops, rng)));
    extra.push_back("--opt_level=3" + profile + " --enable_cluster_ops=" + joinNames(someOf(all_ops, rng)));
    extra.push_back("--opt_level=" + level + profile + " --enable_cluster_ops_only=" + joinNames(someOf(all_ops, rng)));
  }
  if (rg.patterns) {  // the pattern ops on the gpu column too, where opencl and cuda render them
    extra.push_back("--opt_level=" + level + " --fusion_profile=gpu --enable_pass=FlashAttentionFusionV1,FlashAttentionFusionV2,"
                    "add_layer_norm_fusion,add_layer_norm_v3_fusion,add_layer_norm_ext_fusion,add_rms_norm_fusion,"
                    "inference_swiglu_fusion,inference_matmul_split_fusion,matmul_elem_biasadd_fusion,matmul_elem_add_fusion,"
                    "matmul_elem_relu_fusion,matmul_elem_gelu_fusion");
  }
  sets.insert(sets.end(), extra.begin(), extra.end());
  return sets;
}

}  // namespace gkrt::fuzz
