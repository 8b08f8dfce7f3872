#include "runtime/ir/fusion_column.h"

namespace gkrt {

const char* fusionColumnName(FusionColumn c) {
  switch (c) {
    case FusionColumn::kAscend: return "ascend";
    case FusionColumn::kCpu: return "cpu";
    case FusionColumn::kGpu: return "gpu";
  }
  return "?";
}

StatusOr<FusionColumn> parseFusionColumn(std::string_view name) {
  for (FusionColumn c : {FusionColumn::kAscend, FusionColumn::kCpu, FusionColumn::kGpu}) {
    if (name == fusionColumnName(c)) return c;
  }
  return makeError(StatusCode::kInvalidArgument, "unknown fusion profile '", name, "'; valid: ascend, cpu, gpu");
}

}  // namespace gkrt
