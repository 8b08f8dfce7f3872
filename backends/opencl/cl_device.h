// The OpenCL platform, device, context and in-order queue a backend runs on, and the
// translation of OpenCL error codes into Status.
//
//   ASSIGN_OR_RETURN(auto dev, openClDevice(""));      // first GPU, else first device
//   ASSIGN_OR_RETURN(auto dev, openClDevice("0:1"));   // platform 0, device 1
//   ASSIGN_OR_RETURN(auto dev, openClDevice("pthread")); // by a piece of its name
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/ir/status.h"

namespace gkrt::opencl {

struct ClDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string platform_name, device_name, device_version, driver_version;
  size_t max_work_group_size = 1;
  // The hand-written kernels' program, built once per device and process.
  std::mutex library_mutex;
  cl_program library_program = nullptr;
  // While set, launches keep their events here (the queue profiles; OpenClBackend's
  // kernel timer reads and releases them).
  std::vector<cl_event>* timed_events = nullptr;
  // An event slot for the next launch when timing, else null.
  cl_event* nextTimedEvent() {
    if (!timed_events) return nullptr;
    timed_events->push_back(nullptr);
    return &timed_events->back();
  }
  ~ClDevice();
  // Identifies the compiler that built a program binary (program cache key).
  std::string identity() const { return platform_name + "|" + device_name + "|" + device_version + "|" + driver_version; }
};

// One ClDevice per selector and process, shared by every session that asks while
// one is alive: one context, one queue, one build of the library kernels.
StatusOr<std::shared_ptr<ClDevice>> openClDevice(const std::string& selector);

// Whether the ICD loader finds any OpenCL platform (availableBackends() lists opencl only then).
bool openClPlatformPresent();

// "CL_OUT_OF_RESOURCES" for -5, ...
const char* clErrorName(cl_int err);
// Ok, or an error naming `what` and the code; out-of-memory and a lost device say so.
Status clCheck(cl_int err, const std::string& what);

}  // namespace gkrt::opencl
