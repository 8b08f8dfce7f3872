// Prints a tensor the way numpy prints an array with default options, so gkrt's
// output can be compared with Python's character for character:
//   [[2. 2.]
//    [2. 2.]]
#pragma once

#include <string>

#include "runtime/host_tensor.h"

namespace gkrt {

std::string formatArray(const HostTensor& t);

}  // namespace gkrt
