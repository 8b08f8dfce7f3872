#include "fusion/fusion_options.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

#include "fusion/expander.h"
#include "fusion/mindspore_pass_names.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/closest_name.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

enum class FlagType { kBool, kInt, kList, kString };

struct FlagSpec {
  FlagType type;
  // Applies a parsed value; null for flags MindSpore defines that mean nothing here.
  std::function<Status(FusionOptions&, const std::string& text, const std::vector<std::string>& list, long long n,
                       bool b)> apply;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

Status checkOps(const char* flag, const std::vector<std::string>& ops, bool need_expander) {
  for (const std::string& op : ops) {
    const OpDef* def = findOp(op);
    if (!def) {
      return makeError(StatusCode::kInvalidArgument, "--", flag, ": unknown op '", op, "' (did you mean '",
                       closestOpName(op), "'? `gkrt ops` lists every op)");
    }
    if (need_expander && !hasExpander(def->name)) {
      std::vector<std::string> names = expanderOpNames();
      return makeError(StatusCode::kInvalidArgument, "--", flag, ": op '", op,
                       "' has no expander; ops with one: ", join(names));
    }
  }
  return Status::Ok();
}

Status checkPasses(const char* flag, const std::vector<std::string>& passes, FusionOptions& o) {
  for (const std::string& p : passes) {
    if (matchesAnyPass(p)) continue;
    if (const std::string why = mindSporeOnlyPass(p); !why.empty()) {
      o.warnings.push_back("--" + std::string(flag) + ": '" + p + "' is a MindSpore pass with no gkrt counterpart (" +
                           why + "); it has no effect");
      continue;
    }
    if (!matchesAnyPass(p)) {
      const std::vector<std::string> names = switchablePassNames();
      return makeError(StatusCode::kInvalidArgument, "--", flag, ": unknown pass '", p, "' (did you mean '",
                       closestName(p, names), "'?); passes: ", join(names),
                       " (also as stage.id or stage_name.pass_name)");
    }
  }
  return Status::Ok();
}

using Apply = decltype(FlagSpec::apply);
Apply setList(std::vector<std::string> FusionOptions::*field, bool ops, bool expander, bool passes, const char* name) {
  return [=](FusionOptions& o, const std::string&, const std::vector<std::string>& list, long long, bool) {
    if (ops) RETURN_IF_ERROR(checkOps(name, list, expander));
    if (passes) RETURN_IF_ERROR(checkPasses(name, list, o));
    o.*field = list;
    return Status::Ok();
  };
}

const std::map<std::string, FlagSpec>& flagSpecs() {
  static const std::map<std::string, FlagSpec> specs = [] {
    std::map<std::string, FlagSpec> m;
    m["opt_level"] = {FlagType::kInt, [](FusionOptions& o, const std::string&, const auto&, long long n, bool) {
      if (n < 0 || n > 3) return makeError(StatusCode::kInvalidArgument, "--opt_level=", n, " is out of range; valid: 0, 1, 2, 3");
      o.opt_level = static_cast<int>(n);
      return Status::Ok();
    }};
    m["fusion_ops_level"] = {FlagType::kInt, [](FusionOptions& o, const std::string&, const auto&, long long n, bool) {
      if (n < 0 || n > 2) return makeError(StatusCode::kInvalidArgument, "--fusion_ops_level=", n, " is out of range; valid: 0, 1, 2");
      o.fusion_ops_level = static_cast<int>(n);
      return Status::Ok();
    }};
    m["reduce_fuse_depth"] = {FlagType::kInt, [](FusionOptions& o, const std::string&, const auto&, long long n, bool) {
      o.reduce_fuse_depth = n < 0 ? 20 : static_cast<int>(std::min<long long>(n, 1 << 20));
      return Status::Ok();
    }};
    m["composite_op_limit_size"] = {FlagType::kInt, [](FusionOptions& o, const std::string&, const auto&, long long n, bool) {
      if (n < 1) return makeError(StatusCode::kInvalidArgument, "--composite_op_limit_size=", n, " must be at least 1");
      o.composite_op_limit_size = static_cast<int>(std::min<long long>(n, 1 << 20));
      return Status::Ok();
    }};
    auto boolField = [](bool FusionOptions::*f) {
      return FlagSpec{FlagType::kBool, [f](FusionOptions& o, const std::string&, const auto&, long long, bool b) {
        o.*f = b;
        return Status::Ok();
      }};
    };
    m["dump_as_text"] = boolField(&FusionOptions::dump_as_text);
    m["enable_debug_mode"] = boolField(&FusionOptions::enable_debug_mode);
    m["enable_stitch_fusion"] = {FlagType::kBool, [](FusionOptions& o, const std::string&, const auto&, long long, bool b) {
      o.enable_stitch_fusion = b;
      return Status::Ok();
    }};
    m["enable_parallel_fusion"] = {FlagType::kBool, [](FusionOptions& o, const std::string&, const auto&, long long, bool b) {
      o.enable_parallel_fusion = b;
      return Status::Ok();
    }};
    // gkrt's own: which table column to follow, whatever the backend (`--fusion-profile`).
    m["fusion_profile"] = {FlagType::kString, [](FusionOptions& o, const std::string& text, const auto&, long long, bool) {
      ASSIGN_OR_RETURN(o.profile, parseFusionColumn(text));
      return Status::Ok();
    }};
    m["enable_expand_ops"] = {FlagType::kList, setList(&FusionOptions::enable_expand_ops, true, true, false, "enable_expand_ops")};
    m["disable_expand_ops"] = {FlagType::kList, setList(&FusionOptions::disable_expand_ops, true, false, false, "disable_expand_ops")};
    m["enable_expand_ops_only"] = {FlagType::kList, setList(&FusionOptions::enable_expand_ops_only, true, true, false, "enable_expand_ops_only")};
    m["enable_cluster_ops"] = {FlagType::kList, setList(&FusionOptions::enable_cluster_ops, true, false, false, "enable_cluster_ops")};
    m["disable_cluster_ops"] = {FlagType::kList, setList(&FusionOptions::disable_cluster_ops, true, false, false, "disable_cluster_ops")};
    m["enable_cluster_ops_only"] = {FlagType::kList, setList(&FusionOptions::enable_cluster_ops_only, true, false, false, "enable_cluster_ops_only")};
    m["enable_packet_ops_only"] = {FlagType::kList, setList(&FusionOptions::enable_packet_ops_only, true, false, false, "enable_packet_ops_only")};
    m["disable_packet_ops"] = {FlagType::kList, setList(&FusionOptions::disable_packet_ops, true, false, false, "disable_packet_ops")};
    m["enable_pass"] = {FlagType::kList, setList(&FusionOptions::enable_pass, false, false, true, "enable_pass")};
    m["disable_pass"] = {FlagType::kList, setList(&FusionOptions::disable_pass, false, false, true, "disable_pass")};
    // Defined by MindSpore, meaningless for gkrt (AKG/DVM code generation, Ascend
    // libraries, recompute, dynamic shape): accepted, with a warning.
    for (const char* name : {"enable_recompute_fusion", "enable_low_precision", "enable_auto_tensor_inplace",
                             "enable_dynamic_shape_fusion", "enable_parallel_op_combine", "enable_horizontal_fusion",
                             "enable_dynamic_batch", "enable_csr_fusion", "enable_lite_conv_tuning",
                             "enable_vectorization", "disable_matmul_post_fusion", "enable_allreduce_prologue_fusion",
                             "enable_allreduce_epilogue_fusion", "enable_cce_lib"}) {
      m[name] = {FlagType::kBool, nullptr};
    }
    for (const char* name : {"online_tuning", "parallel_ops_level", "cpu_refer_thread_num",
                             "recompute_increment_threshold", "recompute_peak_threshold"}) {
      m[name] = {FlagType::kInt, nullptr};
    }
    for (const char* name : {"repository_path", "target_os", "cpu_arch", "cpu_feature", "cpu_type", "kernel_generator",
                             "path"}) {
      m[name] = {FlagType::kString, nullptr};
    }
    for (const char* name : {"enable_simplify_exprs_only", "disable_simplify_exprs", "enable_cce_lib_ops",
                             "enable_cce_lib_ops_only", "disable_cce_lib_ops", "enable_fusion_pattern_only",
                             "disable_fusion_pattern"}) {
      m[name] = {FlagType::kList, nullptr};
    }
    return m;
  }();
  return specs;
}

StatusOr<bool> parseBool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "True" || v == "on" || v == "1") return true;
  if (v == "false" || v == "False" || v == "off" || v == "0") return false;
  return makeError(StatusCode::kInvalidArgument, "--", key, "=", v, ": not a bool; valid: true, false, on, off, 1, 0");
}

StatusOr<long long> parseInt(const std::string& key, const std::string& v) {
  std::istringstream is(v);
  long long n;
  if (!(is >> n) || !is.eof()) return makeError(StatusCode::kInvalidArgument, "--", key, "=", v, ": not an integer");
  return n;
}

std::vector<std::string> splitList(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

StatusOr<FusionOptions> parseFusionFlags(std::string_view flags, FusionOptions base) {
  FusionOptions o = std::move(base);
  std::vector<std::string> names;
  for (const auto& [name, spec] : flagSpecs()) names.push_back(name);
  std::istringstream tokens{std::string(flags)};
  std::string token;
  std::vector<std::string> seen;
  while (tokens >> token) {
    // The seeds' own example is typeset with an en dash ("–key=value"); accept it.
    if (token.rfind("\xE2\x80\x93", 0) == 0) token = "--" + token.substr(3);
    if (token.rfind("--", 0) != 0 || token.size() == 2) {
      return makeError(StatusCode::kInvalidArgument, "fusion flag '", token,
                       "' is malformed; the format is --key=value, items separated by spaces, lists by commas");
    }
    const size_t eq = token.find('=');
    const std::string key = token.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool has_value = eq != std::string::npos;
    const std::string value = has_value ? token.substr(eq + 1) : "";
    if (has_value && (value.empty() || value.find('=') != std::string::npos)) {
      return makeError(StatusCode::kInvalidArgument, "fusion flag '", token, "' is malformed; the format is --key=value");
    }
    auto it = flagSpecs().find(key);
    if (it == flagSpecs().end()) {
      return makeError(StatusCode::kInvalidArgument, "unknown fusion flag '--", key, "' (did you mean '--",
                       closestName(key, names), "'?); flags: ", join(names));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return makeError(StatusCode::kInvalidArgument, "fusion flag '--", key, "' is given twice");
    }
    seen.push_back(key);
    const FlagSpec& spec = it->second;
    if (!has_value && spec.type != FlagType::kBool) {
      return makeError(StatusCode::kInvalidArgument, "fusion flag '--", key, "' needs a value: --", key, "=...");
    }
    bool b = true;
    long long n = 0;
    if (spec.type == FlagType::kBool && has_value) {
      ASSIGN_OR_RETURN(b, parseBool(key, value));
    }
    if (spec.type == FlagType::kInt) {
      ASSIGN_OR_RETURN(n, parseInt(key, value));
    }
    const std::vector<std::string> list = spec.type == FlagType::kList ? splitList(value) : std::vector<std::string>{};
    if (!spec.apply) {
      o.warnings.push_back("fusion flag --" + key + " is accepted for MindSpore compatibility and has no effect in gkrt");
      continue;
    }
    RETURN_IF_ERROR(spec.apply(o, value, list, n, b));
    if (key == "enable_packet_ops_only" || key == "disable_packet_ops") {
      o.warnings.push_back("fusion flag --" + key + " only applies to MindSpore's kernel packets, which gkrt does not form");
    }
  }
  return o;
}

StatusOr<FusionOptions> fusionOptionsFromEnvironment() {
  const char* env = std::getenv("MS_DEV_GRAPH_KERNEL_FLAGS");
  if (!env) return FusionOptions{};
  auto o = parseFusionFlags(env);
  if (!o.ok()) return o.status().withContext("MS_DEV_GRAPH_KERNEL_FLAGS");
  return o;
}

}  // namespace gkrt
