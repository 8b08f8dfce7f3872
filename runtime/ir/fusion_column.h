// Which column of the seeds' fusion tables (Appendix 1 expanders, Appendix 2 cluster
// ops) a backend follows. The tables themselves live in fusion/.
#pragma once

#include <string_view>

#include "runtime/ir/status.h"

namespace gkrt {

enum class FusionColumn { kAscend, kCpu, kGpu };

const char* fusionColumnName(FusionColumn c);  // "ascend", "cpu", "gpu"
StatusOr<FusionColumn> parseFusionColumn(std::string_view name);

}  // namespace gkrt
