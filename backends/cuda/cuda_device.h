// The CUDA device a backend runs on: the driver's primary context of one GPU, its
// compute capability and limits. One CudaDevice per device index and process, shared
// by every session alive at the same time; each session owns its own stream.
//
//   ASSIGN_OR_RETURN(auto dev, cuda::openDevice(""));    // device 0
//   ASSIGN_OR_RETURN(auto dev, cuda::openDevice("1"));   // device 1
#pragma once

#include <memory>
#include <string>

#include "backends/cuda/cuda_driver.h"

namespace gkrt::cuda {

struct CudaDevice {
  const Driver* cu = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  int index = 0, cc_major = 0, cc_minor = 0, sm_count = 0, max_threads_per_block = 0;
  std::string name;
  ~CudaDevice();
  // Makes this device's context current on the calling thread (sessions may run on any thread).
  Status makeCurrent() const;
  // The compiler-relevant identity of the device (program cache key): name, compute capability, driver.
  std::string identity() const;
};

// `selector`: "" or a device index ("0", "1", ...).
StatusOr<std::shared_ptr<CudaDevice>> openDevice(const std::string& selector);

}  // namespace gkrt::cuda
