// numpy arrays <-> gkrt's HostTensor for the Python package: dtypes by DLPack code,
// inputs borrowed (Session::setInput copies them in), outputs handed over without a copy.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "runtime/host_tensor.h"

namespace gkrt::python {

namespace nb = nanobind;
using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// The error the package raises (gkrt.GkrtError, a RuntimeError), carrying gkrt's message.
struct GkrtError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void throwIfError(const Status& s);
template <class T> T valueOr(StatusOr<T> v) {
  throwIfError(v.status());
  return std::move(v).value();
}

// The gkrt dtype of an array: `as` when given (the array holds that dtype's bytes, as
// the package passes bfloat16 and the narrow float types), else by its numpy dtype.
DType arrayDType(const InArray& a, const std::string& as, const std::string& what);
Shape arrayShape(const InArray& a);
// A HostTensor over the array's memory (no copy): only while the array lives.
HostTensor borrowArray(const InArray& a, DType dtype);
// An owned copy.
HostTensor copyArray(const InArray& a, DType dtype);

// A numpy array owning `t`. bfloat16 and the narrow float types come back as their bit
// patterns (uint16/uint8) when `raw_narrow`, else widened to float32; int4/int2 as int8,
// uint4/uint2 as uint8 (one element a byte, as gkrt holds them).
nb::object toNumpy(HostTensor t, bool raw_narrow);

}  // namespace gkrt::python
