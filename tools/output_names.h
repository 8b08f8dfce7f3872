// File names for a model's outputs under `gkrt run --output-dir DIR`: a tensor name
// comes from the model file, so it is never used as a path.
//
// The mapping: every character other than ASCII letters, digits, '-', '_' and '.' becomes
// '_'; a name that is empty or starts with '.' gets a leading '_'; names longer than
// 200 characters are cut; ".npy" is appended; a name already taken in this run gets
// "_2", "_3", ... before ".npy". So "gpu_0/softmax" -> "gpu_0_softmax.npy" and
// "../../x" -> "_.._.._x.npy", always directly inside DIR.
#pragma once

#include <set>
#include <string>

namespace gkrt::tools {

std::string outputFileName(const std::string& tensor_name, const std::set<std::string>& taken);

}  // namespace gkrt::tools
