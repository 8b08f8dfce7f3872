// Reading and writing numpy .npy files (format 1.0-3.0, little-endian, C order).
#pragma once

#include <string>

#include "runtime/host_tensor.h"

namespace gkrt {

StatusOr<HostTensor> readNpy(const std::string& path);
// The same from the file's bytes; `path` only names it in errors.
StatusOr<HostTensor> readNpyBytes(const std::string& bytes, const std::string& path);
constexpr size_t kMaxNpyHeaderBytes = 10000;  // numpy refuses longer headers too
// bfloat16, float8 and float4 tensors are written as float32, int4/int2 as int8 and
// uint4/uint2 as uint8 (numpy has none of these types).
Status writeNpy(const std::string& path, const HostTensor& t);
// The input `name` of type `want` from a .npy tensor: float32 data for a bfloat16,
// float8 or float4 input (rounded to nearest even, saturating), int8/uint8 data for an
// int4/uint4/int2/uint2 input (each value checked against the type's range); any other
// tensor is returned as it is.
StatusOr<HostTensor> npyToModelType(const HostTensor& t, DType want, const std::string& name);

}  // namespace gkrt
