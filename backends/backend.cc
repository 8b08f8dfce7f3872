#include "backends/backend.h"

#include <cstdlib>
#include <cstring>

#include "runtime/ir/op_def.h"

namespace gkrt {

StatusOr<void*> Backend::allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (!p) return makeError(StatusCode::kDeviceError, name(), ": out of host memory allocating ", bytes, " bytes");
  return p;
}

void Backend::deallocate(void* ptr) { std::free(ptr); }

Status Backend::copyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status Backend::copyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

const char* precisionName(Precision p) {
  switch (p) {
    case Precision::kFloat32: return "f32";
    case Precision::kBFloat16: return "bf16";
    case Precision::kTFloat32: return "tf32";
    case Precision::kFloat16: return "fp16";
  }
  return "?";
}

std::string deviceCollectiveRefusal(const ir::Node& node, int ranks) {
  if (!node.op || ranks <= 1) return "";
  const std::string op = node.op->name;
  if (op != "AllReduce" && op != "MatMulAllReduce") return "";
  return op + " across " + std::to_string(ranks) + " ranks needs the ranks' communicator, which this backend has no device "
         "form of (cuda's would be NCCL: runtime/base/communicator.h); it runs on cpu";
}

}  // namespace gkrt
