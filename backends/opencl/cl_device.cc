#include "backends/opencl/cl_device.h"

#include <map>
#include <vector>

namespace gkrt::opencl {
namespace {

// A string property through clGetPlatformInfo / clGetDeviceInfo; "" when unavailable.
template <class Object, class Info, class Getter>
std::string infoString(Getter get, Object object, Info what) {
  size_t n = 0;
  if (get(object, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  get(object, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}
std::string platformInfo(cl_platform_id p, cl_platform_info what) { return infoString(clGetPlatformInfo, p, what); }
std::string deviceInfo(cl_device_id d, cl_device_info what) { return infoString(clGetDeviceInfo, d, what); }

struct Candidate {
  cl_platform_id platform;
  cl_device_id device;
  int p, d;
  bool gpu;
  std::string label;
};

}  // namespace

ClDevice::~ClDevice() {
  if (library_program) clReleaseProgram(library_program);
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}

const char* clErrorName(cl_int err) {
  switch (err) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM: return "CL_INVALID_PROGRAM";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
    default: return "an OpenCL error";
  }
}

Status clCheck(cl_int err, const std::string& what) {
  if (err == CL_SUCCESS) return Status::Ok();
  std::string hint;
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY ||
      err == CL_INVALID_BUFFER_SIZE) {
    hint = "; the device is out of memory or cannot hold one buffer that large (a smaller input or batch needs less)";
  } else if (err == CL_DEVICE_NOT_AVAILABLE || err == CL_INVALID_COMMAND_QUEUE || err == CL_INVALID_CONTEXT) {
    hint = "; the device was lost or is unavailable (recreate the session)";
  }
  return makeError(StatusCode::kDeviceError, "opencl: ", what, " failed: ", clErrorName(err), " (", err, ")", hint);
}

namespace {
StatusOr<std::shared_ptr<ClDevice>> openNewDevice(const std::string& selector);
}  // namespace

StatusOr<std::shared_ptr<ClDevice>> openClDevice(const std::string& selector) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<ClDevice>> open;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto dev = open[selector].lock()) return dev;
  ASSIGN_OR_RETURN(auto dev, openNewDevice(selector));
  open[selector] = dev;
  return dev;
}

bool openClPlatformPresent() {
  cl_uint np = 0;
  return clGetPlatformIDs(0, nullptr, &np) == CL_SUCCESS && np > 0;
}

namespace {

StatusOr<std::shared_ptr<ClDevice>> openNewDevice(const std::string& selector) {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    return makeError(StatusCode::kDeviceError, "opencl: no OpenCL platform found (", clErrorName(err),
                     "); install a driver, e.g. Debian's pocl-opencl-icd, or use --backend cpu");
  }
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  std::vector<Candidate> all;
  for (cl_uint p = 0; p < np; ++p) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devices(nd);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr);
    for (cl_uint d = 0; d < nd; ++d) {
      cl_device_type type = 0;
      clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      all.push_back({platforms[p], devices[d], int(p), int(d), (type & CL_DEVICE_TYPE_GPU) != 0,
                     std::to_string(p) + ":" + std::to_string(d) + " " + platformInfo(platforms[p], CL_PLATFORM_NAME) +
                         " / " + deviceInfo(devices[d], CL_DEVICE_NAME)});
    }
  }
  if (all.empty()) return makeError(StatusCode::kDeviceError, "opencl: the OpenCL platforms list no devices");
  const Candidate* pick = nullptr;
  if (selector.empty()) {
    for (const Candidate& c : all) if (c.gpu && !pick) pick = &c;
    if (!pick) pick = &all[0];
  } else {
    for (const Candidate& c : all) {
      const std::string index = std::to_string(c.p) + ":" + std::to_string(c.d);
      if (!pick && (selector == index || c.label.find(selector) != std::string::npos)) pick = &c;
    }
  }
  if (!pick) {
    std::string list;
    for (const Candidate& c : all) list += "\n  " + c.label;
    return makeError(StatusCode::kNotFound, "opencl: no device matches '", selector,
                     "'; give platform:device or part of a name, one of:", list);
  }
  auto dev = std::make_shared<ClDevice>();
  dev->platform = pick->platform;
  dev->device = pick->device;
  dev->platform_name = platformInfo(pick->platform, CL_PLATFORM_NAME);
  dev->device_name = deviceInfo(pick->device, CL_DEVICE_NAME);
  dev->device_version = deviceInfo(pick->device, CL_DEVICE_VERSION);
  dev->driver_version = deviceInfo(pick->device, CL_DRIVER_VERSION);
  clGetDeviceInfo(pick->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev->max_work_group_size, &dev->max_work_group_size,
                  nullptr);
  dev->context = clCreateContext(nullptr, 1, &dev->device, nullptr, nullptr, &err);
  RETURN_IF_ERROR(clCheck(err, "creating a context on " + pick->label));
  dev->queue = clCreateCommandQueue(dev->context, dev->device, CL_QUEUE_PROFILING_ENABLE, &err);
  RETURN_IF_ERROR(clCheck(err, "creating a command queue on " + pick->label));
  return dev;
}

}  // namespace

}  // namespace gkrt::opencl
