#include "backends/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace gkrt::cuda {
namespace {

Status unavailable(const std::string& reason) {
  return makeError(StatusCode::kDeviceError, "cuda: unavailable: ", reason);
}

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// Names of the results a driver that cannot name them yet (before cuInit, or a stub) returns.
const char* knownErrorName(CUresult r) {
  switch (r) {
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda, not a real driver";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    default: return nullptr;
  }
}

template <class Fn> bool resolve(GetProcAddress get, const char* name, int version, Fn& fn, std::string& missing) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || !p || found != CU_GET_PROC_ADDRESS_SUCCESS) {
    missing += (missing.empty() ? "" : ", ") + std::string(name);
    return false;
  }
  fn = reinterpret_cast<Fn>(p);
  return true;
}

StatusOr<Driver> load() {
  const char* override_path = std::getenv("GKRT_CUDA_DRIVER");
  const std::string path = override_path && *override_path ? override_path : "libcuda.so.1";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return unavailable("cannot load the NVIDIA driver library " + path + " (" + (why ? why : "not found") +
                       "); install the NVIDIA driver, or run on a machine with an NVIDIA GPU");
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get) return unavailable(path + " has no cuGetProcAddress_v2: the driver is older than CUDA 12; update it");
  Driver d{};
  void* probe = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (const CUresult r = get("cuInit", &probe, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found); r != CUDA_SUCCESS) {
    return unavailable(path + ": cuGetProcAddress failed (" + errorName(d, r) + ")");
  }
  std::string missing;
  // Entry points as of CUDA 12.0 first: enough to ask the driver its own version.
  resolve(get, "cuInit", 12000, d.init, missing);
  resolve(get, "cuDriverGetVersion", 12000, d.driverGetVersion, missing);
  resolve(get, "cuGetErrorName", 12000, d.getErrorName, missing);
  if (!missing.empty()) return unavailable(path + " lacks " + missing);
  const CUresult init = d.init(0);
  if (init != CUDA_SUCCESS) {
    return unavailable("cuInit failed (" + errorName(d, init) + "): no usable NVIDIA GPU or driver on this machine");
  }
  if (d.driverGetVersion(&d.version) != CUDA_SUCCESS) return unavailable("cuDriverGetVersion failed");
  const int v = d.version < CUDA_VERSION ? d.version : CUDA_VERSION;
  resolve(get, "cuDeviceGetCount", v, d.deviceGetCount, missing);
  resolve(get, "cuDeviceGet", v, d.deviceGet, missing);
  resolve(get, "cuDeviceGetName", v, d.deviceGetName, missing);
  resolve(get, "cuDeviceGetAttribute", v, d.deviceGetAttribute, missing);
  resolve(get, "cuDevicePrimaryCtxRetain", v, d.primaryCtxRetain, missing);
  resolve(get, "cuDevicePrimaryCtxRelease", v, d.primaryCtxRelease, missing);
  resolve(get, "cuCtxSetCurrent", v, d.ctxSetCurrent, missing);
  resolve(get, "cuStreamCreate", v, d.streamCreate, missing);
  resolve(get, "cuStreamDestroy", v, d.streamDestroy, missing);
  resolve(get, "cuStreamSynchronize", v, d.streamSynchronize, missing);
  resolve(get, "cuMemAlloc", v, d.memAlloc, missing);
  resolve(get, "cuMemFree", v, d.memFree, missing);
  resolve(get, "cuMemAllocHost", v, d.memAllocHost, missing);
  resolve(get, "cuMemFreeHost", v, d.memFreeHost, missing);
  resolve(get, "cuMemcpyHtoDAsync", v, d.memcpyHtoDAsync, missing);
  resolve(get, "cuMemcpyDtoHAsync", v, d.memcpyDtoHAsync, missing);
  resolve(get, "cuMemcpyDtoDAsync", v, d.memcpyDtoDAsync, missing);
  resolve(get, "cuModuleLoadData", v, d.moduleLoadData, missing);
  resolve(get, "cuModuleUnload", v, d.moduleUnload, missing);
  resolve(get, "cuModuleGetFunction", v, d.moduleGetFunction, missing);
  resolve(get, "cuLaunchKernel", v, d.launchKernel, missing);
  resolve(get, "cuEventCreate", v, d.eventCreate, missing);
  resolve(get, "cuEventDestroy", v, d.eventDestroy, missing);
  resolve(get, "cuEventRecord", v, d.eventRecord, missing);
  resolve(get, "cuEventSynchronize", v, d.eventSynchronize, missing);
  resolve(get, "cuEventElapsedTime", v, d.eventElapsedTime, missing);
  resolve(get, "cuStreamBeginCapture", v, d.streamBeginCapture, missing);
  resolve(get, "cuStreamEndCapture", v, d.streamEndCapture, missing);
  resolve(get, "cuGraphInstantiateWithFlags", v, d.graphInstantiate, missing);
  resolve(get, "cuGraphLaunch", v, d.graphLaunch, missing);
  resolve(get, "cuGraphExecDestroy", v, d.graphExecDestroy, missing);
  resolve(get, "cuGraphDestroy", v, d.graphDestroy, missing);
  if (!missing.empty()) return unavailable("driver " + std::to_string(d.version) + " lacks " + missing + "; update the NVIDIA driver");
  int count = 0;
  const CUresult r = d.deviceGetCount(&count);
  if (r != CUDA_SUCCESS) return unavailable("cuDeviceGetCount failed (" + errorName(d, r) + ")");
  if (count == 0) return unavailable("the driver sees no CUDA device");
  return d;  // the library stays loaded for the process
}

}  // namespace

StatusOr<const Driver*> driver() {
  static std::once_flag once;
  static StatusOr<Driver>* loaded = nullptr;
  std::call_once(once, [] { loaded = new StatusOr<Driver>(load()); });
  if (!loaded->ok()) return loaded->status();
  return &loaded->value();
}

std::string errorName(const Driver& cu, CUresult r) {
  const char* name = nullptr;
  if (cu.getErrorName && cu.getErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  if ((name = knownErrorName(r))) return name;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

Status check(const Driver& cu, CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return Status::Ok();
  const std::string name = errorName(cu, r);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    return makeError(StatusCode::kDeviceError, "cuda: ", what, ": out of device memory (", name, ")");
  }
  return makeError(StatusCode::kDeviceError, "cuda: ", what, " failed (", name, ")");
}

}  // namespace gkrt::cuda
