// Views of tensor memory handed to kernels: dtype, static shape, data pointer.
#pragma once

#include "runtime/ir/dtype.h"
#include "runtime/ir/shape.h"

namespace gkrt {

struct TensorView {  // read-only input
  DType dtype = DType::kFloat32;
  Shape shape;
  const void* data = nullptr;  // null for an absent optional input
  template <class T> const T* as() const { return static_cast<const T*>(data); }
  int64_t size() const { return numElements(shape); }
  bool present() const { return data != nullptr; }
};

struct MutableTensorView {  // output
  DType dtype = DType::kFloat32;
  Shape shape;
  void* data = nullptr;
  template <class T> T* as() const { return static_cast<T*>(data); }
  int64_t size() const { return numElements(shape); }
};

}  // namespace gkrt
