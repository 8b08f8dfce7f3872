// NVRTC: CUDA C++ source (the renderer's CUDA dialect) to a binary the driver loads.
// Needs no GPU, so the compile tests run everywhere the toolkit is installed.
//
//   ASSIGN_OR_RETURN(NvrtcImage img, compileCuda(source, 90, {{1, "gk0 (Add_Mul)"}}));
//   cu->moduleLoadData(&module, img.bytes.data());
#pragma once

#include <string>
#include <vector>

#include "runtime/ir/status.h"

namespace gkrt::cuda {

struct NvrtcImage {
  std::vector<unsigned char> bytes;  // a CUBIN, or NUL-terminated PTX for the driver to JIT
  bool ptx = false;
  std::string arch;                  // "sm_90", or "compute_90" for PTX
};

// Where kernel `name` starts in a concatenated source (for naming the failing kernels).
struct SourcePart {
  int first_line;
  std::string name;
};

// Compiles for compute capability `cc` (e.g. 90): a CUBIN for sm_<cc> when NVRTC knows
// it, else PTX for the newest architecture NVRTC has below it. Errors name the kernels
// the compiler complained about, with its log.
StatusOr<NvrtcImage> compileCuda(const std::string& source, int cc, const std::vector<SourcePart>& parts);

// "13.0": NVRTC's version (part of every program cache key).
std::string nvrtcVersion();

}  // namespace gkrt::cuda
