// Parsing of option values shared by the gkrt subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "fusion/fusion_options.h"
#include "runtime/host_tensor.h"
#include "runtime/session.h"
#include "runtime/ir/shape.h"

namespace gkrt::tools {

// "name=1,3,224,224" -> name and shape.
Status parseShapeAssignment(const std::string& text, std::string* name, Shape* shape);
// "name=value" -> both parts; `what` names the option in errors.
Status splitAssignment(const std::string& text, const char* what, std::string* key, std::string* value);
// Environment flags (MS_DEV_GRAPH_KERNEL_FLAGS), then --flags, then --fusion-profile.
StatusOr<FusionOptions> fusionOptionsFromArgs(const std::string& flags, const std::string& profile);

// A random value for an input not given: floats uniform in [-1, 1), other types 0; an
// error naming --input-shape when its shape still has dynamic dims.
StatusOr<HostTensor> randomInput(const TensorInfo& info, std::mt19937& rng);

// "--input name=file.npy" values, read.
StatusOr<std::map<std::string, HostTensor>> readInputArgs(const std::vector<std::string>& specs);

// The options gkrt run and gkrt dump share.
// "f32" or "bf16" (--precision).
StatusOr<Precision> parsePrecision(const std::string& name);
// Comma-separated token ids ("504,3575,282"); `what` names the option in the error.
StatusOr<std::vector<int64_t>> parseIdList(const std::string& text, const char* what);

struct SessionArgs {
  std::string backend = "cpu";
  std::string device;
  std::optional<std::string> cache_dir;
  std::string flags;
  std::string profile;
  std::vector<std::string> input_shapes;  // name=1,3,224,224
  std::string precision = "f32";          // f32, bf16 (cpu, cuda), tf32, fp16 (cuda): BackendOptions::precision
  std::string max_memory;                 // "512M"; empty: SessionOptions' default
  void addTo(CLI::App* cmd);
  StatusOr<SessionOptions> toOptions() const;
};

}  // namespace gkrt::tools
