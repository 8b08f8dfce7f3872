#include "runtime/host_tensor.h"

#include <cstdlib>
#include <cstring>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {

HostTensor::HostTensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  bytes_ = static_cast<size_t>(numElements(shape_)) * dtypeSize(dtype_);
  const size_t alloc = (std::max<size_t>(bytes_, 1) + 63) / 64 * 64;
  data_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(64, alloc)), [](uint8_t* p) { std::free(p); });
  if (data_) std::memset(data_.get(), 0, alloc);
}

HostTensor HostTensor::fromFloats(const Shape& shape, const std::vector<float>& values) {
  HostTensor t(DType::kFloat32, shape);
  const size_t bytes = std::min(t.bytes(), values.size() * sizeof(float));
  if (bytes) std::memcpy(t.data(), values.data(), bytes);
  return t;
}

HostTensor HostTensor::borrow(DType dtype, Shape shape, void* data) {
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.bytes_ = static_cast<size_t>(numElements(t.shape_)) * dtypeSize(dtype);
  t.data_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(data), [](uint8_t*) {});
  return t;
}

std::vector<float> HostTensor::toFloats() const {
  std::vector<float> out(size());
  for (int64_t i = 0; i < size(); ++i) out[i] = ops::loadF(data(), dtype_, i);
  return out;
}

}  // namespace gkrt
