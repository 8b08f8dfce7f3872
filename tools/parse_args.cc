#include "tools/parse_args.h"

#include <sstream>

#include "tools/npy.h"

#include <cstring>

#include "runtime/ir/ops/op_helpers.h"

#include <stdexcept>

namespace gkrt::tools {

Status splitAssignment(const std::string& text, const char* what, std::string* key, std::string* value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return makeError(StatusCode::kInvalidArgument, what, " '", text, "' must look like name=value");
  }
  *key = text.substr(0, eq);
  *value = text.substr(eq + 1);
  return Status::Ok();
}

Status parseShapeAssignment(const std::string& spec, std::string* name, Shape* shape) {
  std::string text;
  RETURN_IF_ERROR(splitAssignment(spec, "--input-shape", name, &text));
  shape->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    try {
      size_t used = 0;
      const long long d = std::stoll(item, &used);
      if (used != item.size() || d < 0) throw std::invalid_argument(item);
      shape->push_back(d);
    } catch (...) {
      return makeError(StatusCode::kInvalidArgument, "--input-shape '", spec,
                       "': dims must be non-negative integers joined by commas");
    }
    pos = comma + 1;
  }
  return Status::Ok();
}

StatusOr<FusionOptions> fusionOptionsFromArgs(const std::string& flags, const std::string& profile) {
  ASSIGN_OR_RETURN(FusionOptions o, fusionOptionsFromEnvironment());
  ASSIGN_OR_RETURN(o, parseFusionFlags(flags, o));
  if (!profile.empty()) {
    auto c = parseFusionColumn(profile);
    if (!c.ok()) return c.status().withContext("--fusion-profile");
    o.profile = *c;
  }
  return o;
}

}  // namespace gkrt::tools

namespace gkrt::tools {

StatusOr<HostTensor> randomInput(const TensorInfo& info, std::mt19937& rng) {
  for (int64_t d : info.shape) {
    if (d < 0) {
      return makeError(StatusCode::kInvalidArgument, "input '", info.name, "' has dynamic dims ", shapeToString(info.shape),
                       ": give its shape with --input-shape ", info.name, "=... or its value with --input ", info.name,
                       "=file.npy");
    }
  }
  HostTensor t(info.dtype, info.shape);
  std::memset(t.data(), 0, t.bytes());
  if (isFloat(info.dtype)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < t.size(); ++i) ops::storeF(t.data(), t.dtype(), i, u(rng));
  }
  return t;
}

StatusOr<std::map<std::string, HostTensor>> readInputArgs(const std::vector<std::string>& specs) {
  std::map<std::string, HostTensor> inputs;
  for (const std::string& spec : specs) {
    std::string name, path;
    RETURN_IF_ERROR(splitAssignment(spec, "--input", &name, &path));
    auto t = readNpy(path);
    if (!t.ok()) return t.status().withContext("--input " + name);
    inputs[name] = std::move(t).value();
  }
  return inputs;
}

void SessionArgs::addTo(CLI::App* cmd) {
  cmd->add_option("--backend", backend, "backend to compile for (reference, cpu, opencl)");
  cmd->add_option("--device", device, "opencl: platform:device indices or part of the device name (default: first GPU)");
  cmd->add_option("--cache-dir", cache_dir, "where compiled device programs are kept (default ~/.cache/gkrt; \"\" = none)");
  cmd->add_option("--flags", flags, "fusion flags in MS_DEV_GRAPH_KERNEL_FLAGS syntax (\"--opt_level=0\" turns fusion off)");
  cmd->add_option("--fusion-profile", profile, "fusion table column to use: ascend, cpu or gpu");
  cmd->add_option("--input-shape", input_shapes, "a shape for an input with dynamic dims, name=1,3,224,224");
  cmd->add_option("--precision", precision, "GEMM precision: f32 (default); bf16 on cpu where the CPU has it (else f32, "
                  "with a notice) and on cuda; tf32 or fp16 on cuda (gkrt compare shows the cost)");
  cmd->add_option("--max-memory", max_memory,
                  "refuse plans needing more memory than this (bytes, or 512K/256M/2G; default 3/4 of physical memory)");
}

StatusOr<Precision> parsePrecision(const std::string& name) {
  if (name == "f32" || name == "fp32" || name == "float32") return Precision::kFloat32;
  if (name == "bf16" || name == "bfloat16") return Precision::kBFloat16;
  if (name == "tf32") return Precision::kTFloat32;
  if (name == "fp16" || name == "f16" || name == "float16") return Precision::kFloat16;
  return makeError(StatusCode::kInvalidArgument, "unknown --precision '", name, "'; use f32, bf16, tf32 or fp16");
}

StatusOr<SessionOptions> SessionArgs::toOptions() const {
  SessionOptions opts;
  opts.backend = backend;
  opts.backend_options.device = device;
  opts.backend_options.program_cache_dir = cache_dir;
  ASSIGN_OR_RETURN(opts.backend_options.precision, parsePrecision(precision));
  ASSIGN_OR_RETURN(opts.fusion, fusionOptionsFromArgs(flags, profile));
  for (const std::string& spec : input_shapes) {
    std::string name;
    Shape shape;
    RETURN_IF_ERROR(parseShapeAssignment(spec, &name, &shape));
    opts.input_shapes[name] = shape;
  }
  if (!max_memory.empty()) {
    auto cap = parseByteSize(max_memory);
    if (!cap.ok()) return cap.status().withContext("--max-memory");
    opts.max_memory_bytes = *cap;
  }
  return opts;
}

StatusOr<std::vector<int64_t>> parseIdList(const std::string& text, const char* what) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      ids.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return makeError(StatusCode::kInvalidArgument, what, " takes comma-separated token ids, got '", item, "'");
    }
  }
  return ids;
}

}  // namespace gkrt::tools
