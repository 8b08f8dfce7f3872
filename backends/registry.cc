// The one place that knows which backends exist in this build.
#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_tier.h"
#include "backends/reference/reference_backend.h"
#ifdef GKRT_HAVE_OPENCL
#include "backends/opencl/cl_device.h"
#include "backends/opencl/opencl_backend.h"
#endif
#ifdef GKRT_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_driver.h"
#endif

namespace gkrt {

std::vector<std::string> availableBackends() {
  std::vector<std::string> names = {"reference", "cpu"};
#ifdef GKRT_HAVE_OPENCL
  if (opencl::openClPlatformPresent()) names.push_back("opencl");  // built in, and a driver found
#endif
#ifdef GKRT_HAVE_CUDA
  if (cuda::driver().ok()) names.push_back("cuda");  // built in, and a driver with a device found
#endif
  return names;
}

StatusOr<std::unique_ptr<Backend>> createBackend(const std::string& name, const BackendOptions& options) {
  const bool cpu_bf16 = name == "cpu" && options.precision == Precision::kBFloat16;
  if (options.precision != Precision::kFloat32 && name != "cuda" && !cpu_bf16) {
    return makeError(StatusCode::kInvalidArgument, "--precision ", precisionName(options.precision), " is taken by ",
                     options.precision == Precision::kBFloat16 ? "the cpu and cuda backends" : "the cuda backend's GEMMs",
                     "; backend '", name, "' computes in float32 (pass f32)");
  }
  if (name == "reference") return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>(options));
  if (name == "cpu") {
    // The tier is detected (and oneDNN capped) before the backend makes any primitive.
    if (const std::string& why = cpu::cpuTier().cap_error; !why.empty()) return makeError(StatusCode::kInvalidArgument, why);
    return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(options));
  }
#ifdef GKRT_HAVE_OPENCL
  if (name == "opencl") return OpenClBackend::create(options);
#endif
#ifdef GKRT_HAVE_CUDA
  if (name == "cuda") return CudaBackend::create(options);  // "cuda: unavailable: ..." without a GPU
#endif
  std::string valid;
  for (const std::string& b : availableBackends()) valid += (valid.empty() ? "" : ", ") + b;
  if (name == "opencl" || name == "cuda") {
    return makeError(StatusCode::kUnsupported, "backend '", name, "' is not built into this gkrt; available: ", valid);
  }
  return makeError(StatusCode::kNotFound, "unknown backend '", name, "'; available: ", valid);
}

}  // namespace gkrt
