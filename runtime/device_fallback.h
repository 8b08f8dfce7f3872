// A node a device backend cannot run, run by a host backend with explicit copies: its
// inputs are read back from the device into host buffers (constants are used from the
// model in place), the host kernel runs, its outputs are written to the device.
// Buffers are sized when the session is compiled; launch() allocates nothing.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"

namespace gkrt {

std::unique_ptr<Kernel> makeHostFallbackKernel(Backend& device, std::unique_ptr<Kernel> host, const ir::Graph& g,
                                               const ir::Node& node);

}  // namespace gkrt
