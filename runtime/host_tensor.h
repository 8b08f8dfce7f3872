// A host tensor for passing inputs and outputs through the session API: dtype, shape
// and 64-byte aligned, zero-initialised storage shared on copy.
#pragma once

#include <memory>
#include <vector>

#include "runtime/ir/dtype.h"
#include "runtime/ir/shape.h"

namespace gkrt {

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, Shape shape);
  static HostTensor fromFloats(const Shape& shape, const std::vector<float>& values);
  // Memory owned elsewhere, not copied: valid only while that memory is (the Python
  // package hands numpy arrays to Session::setInput this way; it copies them in).
  static HostTensor borrow(DType dtype, Shape shape, void* data);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t bytes() const { return bytes_; }
  int64_t size() const { return numElements(shape_); }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T> T* as() { return reinterpret_cast<T*>(data_.get()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data_.get()); }
  // Every element converted to float (float16 widened, ints and bools cast).
  std::vector<float> toFloats() const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  size_t bytes_ = 0;
  std::shared_ptr<uint8_t> data_;
};

}  // namespace gkrt
