// Reading and writing numpy .npy files (format 1.0-3.0, little-endian, C order).
#pragma once

#include <string>

#include "runtime/host_tensor.h"

namespace gkrt {

StatusOr<HostTensor> readNpy(const std::string& path);
Status writeNpy(const std::string& path, const HostTensor& t);

}  // namespace gkrt
