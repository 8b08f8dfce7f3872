// The CUDA driver API, loaded at run time: libcuda.so.1 is opened with dlopen and its
// entry points resolved through cuGetProcAddress, so one gkrt binary runs on machines
// with and without an NVIDIA driver. `cuda.h` is used for its types only.
//
//   ASSIGN_OR_RETURN(const cuda::Driver* cu, cuda::driver());   // "cuda: unavailable: ..." when absent
//   RETURN_IF_ERROR(cuda::check(*cu, cu->memAlloc(&ptr, bytes), "allocating the arena"));
//
// $GKRT_CUDA_DRIVER names another driver library (tests point it at the toolkit's stub).
#pragma once

#include <cuda.h>

#include <string>

#include "runtime/ir/status.h"

namespace gkrt::cuda {

// Member names drop the `cu` prefix: cuda.h #defines many of them to versioned names.
struct Driver {
  decltype(&::cuInit) init;
  decltype(&::cuDriverGetVersion) driverGetVersion;
  decltype(&::cuDeviceGetCount) deviceGetCount;
  decltype(&::cuDeviceGet) deviceGet;
  decltype(&::cuDeviceGetName) deviceGetName;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent;
  decltype(&::cuStreamCreate) streamCreate;
  decltype(&::cuStreamDestroy) streamDestroy;
  decltype(&::cuStreamSynchronize) streamSynchronize;
  decltype(&::cuMemAlloc) memAlloc;
  decltype(&::cuMemFree) memFree;
  decltype(&::cuMemAllocHost) memAllocHost;
  decltype(&::cuMemFreeHost) memFreeHost;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync;
  decltype(&::cuModuleLoadData) moduleLoadData;
  decltype(&::cuModuleUnload) moduleUnload;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuEventCreate) eventCreate;
  decltype(&::cuEventDestroy) eventDestroy;
  decltype(&::cuEventRecord) eventRecord;
  decltype(&::cuEventSynchronize) eventSynchronize;
  decltype(&::cuEventElapsedTime) eventElapsedTime;
  decltype(&::cuStreamBeginCapture) streamBeginCapture;
  decltype(&::cuStreamEndCapture) streamEndCapture;
  decltype(&::cuGraphInstantiateWithFlags) graphInstantiate;
  decltype(&::cuGraphLaunch) graphLaunch;
  decltype(&::cuGraphExecDestroy) graphExecDestroy;
  decltype(&::cuGraphDestroy) graphDestroy;
  decltype(&::cuGetErrorName) getErrorName;
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

// The process's driver, loaded and initialised once (cuInit, at least one device).
// Errors read "cuda: unavailable: <reason>" and say what to install or check.
StatusOr<const Driver*> driver();

// "CUDA_ERROR_OUT_OF_MEMORY" for 2, ...
std::string errorName(const Driver& cu, CUresult r);
// Ok, or an error naming `what` and the driver's error.
Status check(const Driver& cu, CUresult r, const std::string& what);

}  // namespace gkrt::cuda
