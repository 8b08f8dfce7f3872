// Files named by model content (ONNX external-data locations, names a model gives its
// outputs or kernels) kept inside the directory they belong to.
//
//   ASSIGN_OR_RETURN(std::string path, resolveInsideDir(model_dir, location, "tensor 'w': external data location"));
//
// Refused, each with a message naming `what` and the reason: an empty name, a NUL byte,
// an absolute path, a `..` component, and a name that, once symlinks are followed,
// lands outside `dir` (a symlink beside the model pointing at /etc/passwd).
#pragma once

#include <string>

#include "runtime/ir/status.h"

namespace gkrt {

StatusOr<std::string> resolveInsideDir(const std::string& dir, const std::string& relative, const std::string& what);

}  // namespace gkrt
