#include "python/src/arrays.h"

#include <cstring>

namespace gkrt::python {

void throwIfError(const Status& s) {
  if (!s.ok()) throw GkrtError(s.toString());
}

DType arrayDType(const InArray& a, const std::string& as, const std::string& what) {
  if (!as.empty()) {
    auto t = parseDType(as);
    if (!t.ok()) throw GkrtError(what + ": " + t.status().message());
    return *t;
  }
  using C = nb::dlpack::dtype_code;
  const auto d = a.dtype();
  const auto code = static_cast<C>(d.code);
  if (d.lanes == 1) {
    switch (code) {
      case C::Float:
        if (d.bits == 32) return DType::kFloat32;
        if (d.bits == 16) return DType::kFloat16;
        if (d.bits == 64) return DType::kFloat64;
        break;
      case C::Int:
        if (d.bits == 8) return DType::kInt8;
        if (d.bits == 16) return DType::kInt16;
        if (d.bits == 32) return DType::kInt32;
        if (d.bits == 64) return DType::kInt64;
        break;
      case C::UInt:
        if (d.bits == 8) return DType::kUInt8;
        if (d.bits == 16) return DType::kUInt16;
        if (d.bits == 32) return DType::kUInt32;
        if (d.bits == 64) return DType::kUInt64;
        break;
      case C::Bool: return DType::kBool;
      case C::Bfloat:
        if (d.bits == 16) return DType::kBFloat16;
        break;
      default: break;
    }
  }
  throw GkrtError(what + ": DLPack type code " + std::to_string(d.code) + " (" + std::to_string(d.bits) +
                  " bits) is not a gkrt dtype; gkrt takes " + dtypeList());
}

Shape arrayShape(const InArray& a) {
  Shape s(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) s[i] = static_cast<int64_t>(a.shape(i));
  return s;
}

HostTensor borrowArray(const InArray& a, DType dtype) {
  return HostTensor::borrow(dtype, arrayShape(a), const_cast<void*>(a.data()));
}

HostTensor copyArray(const InArray& a, DType dtype) {
  HostTensor t(dtype, arrayShape(a));
  if (t.bytes() != a.nbytes()) {
    throw GkrtError(std::string("an array of ") + std::to_string(a.nbytes()) + " bytes does not hold " + dtypeName(dtype) + " " +
                    shapeToString(t.shape()));
  }
  if (t.bytes()) std::memcpy(t.data(), a.data(), t.bytes());
  return t;
}

namespace {

nb::dlpack::dtype numpyDType(DType t) {
  using C = nb::dlpack::dtype_code;
  auto make = [](C c, int bits) { return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1}; };
  switch (t) {
    case DType::kFloat32: return make(C::Float, 32);
    case DType::kFloat16: return make(C::Float, 16);
    case DType::kFloat64: return make(C::Float, 64);
    case DType::kInt8: case DType::kInt4: case DType::kInt2: return make(C::Int, 8);
    case DType::kInt16: return make(C::Int, 16);
    case DType::kInt32: return make(C::Int, 32);
    case DType::kInt64: return make(C::Int, 64);
    case DType::kUInt8: case DType::kUInt4: case DType::kUInt2: return make(C::UInt, 8);
    case DType::kUInt16: case DType::kBFloat16: return make(C::UInt, 16);  // bfloat16 bits
    case DType::kUInt32: return make(C::UInt, 32);
    case DType::kUInt64: return make(C::UInt, 64);
    case DType::kBool: return make(C::Bool, 8);
    default: return make(C::UInt, 8);  // float8/float4/e8m0 bit patterns
  }
}

}  // namespace

nb::object toNumpy(HostTensor t, bool raw_narrow) {
  if ((t.dtype() == DType::kBFloat16 || isNarrowFloat(t.dtype())) && !raw_narrow) {
    t = HostTensor::fromFloats(t.shape(), t.toFloats());
  }
  auto* owned = new HostTensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<HostTensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> arr(owned->data(), shape.size(), shape.data(), owner, nullptr, numpyDType(owned->dtype()));
  return arr.cast();
}

}  // namespace gkrt::python
