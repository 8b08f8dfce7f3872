#include "backends/cuda/cuda_device.h"

#include <cstdlib>
#include <map>
#include <mutex>

namespace gkrt::cuda {

CudaDevice::~CudaDevice() {
  if (context) cu->primaryCtxRelease(device);
}

Status CudaDevice::makeCurrent() const { return check(*cu, cu->ctxSetCurrent(context), "making device " + name + " current"); }

std::string CudaDevice::identity() const {
  return name + "|sm_" + std::to_string(cc_major) + std::to_string(cc_minor) + "|driver " + std::to_string(cu->version);
}

StatusOr<std::shared_ptr<CudaDevice>> openDevice(const std::string& selector) {
  ASSIGN_OR_RETURN(const Driver* cu, driver());
  int index = 0;
  if (!selector.empty()) {
    char* end = nullptr;
    const long v = std::strtol(selector.c_str(), &end, 10);
    index = static_cast<int>(v);
    if (*end != '\0' || v < 0 || v > 1024) {
      return makeError(StatusCode::kInvalidArgument, "cuda: --device '", selector, "' is not a device index; pass 0, 1, ...");
    }
  }
  int count = 0;
  RETURN_IF_ERROR(check(*cu, cu->deviceGetCount(&count), "counting devices"));
  if (index >= count) {
    return makeError(StatusCode::kInvalidArgument, "cuda: device ", index, " does not exist; this machine has ", count,
                     " (pass --device 0..", count - 1, ")");
  }
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<CudaDevice>> open;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto alive = open[index].lock()) return alive;
  auto dev = std::make_shared<CudaDevice>();
  dev->cu = cu;
  dev->index = index;
  RETURN_IF_ERROR(check(*cu, cu->deviceGet(&dev->device, index), "opening device " + std::to_string(index)));
  char name[256] = {0};
  RETURN_IF_ERROR(check(*cu, cu->deviceGetName(name, sizeof name - 1, dev->device), "reading the device name"));
  dev->name = name;
  RETURN_IF_ERROR(check(*cu, cu->deviceGetAttribute(&dev->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device), "reading the compute capability"));
  RETURN_IF_ERROR(check(*cu, cu->deviceGetAttribute(&dev->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->device), "reading the compute capability"));
  RETURN_IF_ERROR(check(*cu, cu->deviceGetAttribute(&dev->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev->device), "reading the SM count"));
  RETURN_IF_ERROR(check(*cu, cu->deviceGetAttribute(&dev->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev->device), "reading the block size limit"));
  RETURN_IF_ERROR(check(*cu, cu->primaryCtxRetain(&dev->context, dev->device), "creating a context on " + dev->name));
  RETURN_IF_ERROR(dev->makeCurrent());
  open[index] = dev;
  return dev;
}

}  // namespace gkrt::cuda
