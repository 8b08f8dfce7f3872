// ONNX's packed 4-bit and 2-bit tensors (int4, uint4, float4e2m1, int2, uint2): read as
// their packed bytes, then unpacked to gkrt's one element per byte.
#include "tools/onnx/onnx_context.h"
#include "tools/onnx/onnx_import.h"

namespace gkrt {

StatusOr<HostTensor> unpackedTensorFromProto(const onnx::TensorProto& t, const std::string& base_dir, DType dtype) {
  const Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape) {
    if (d < 0) return makeError(StatusCode::kInvalidModel, "tensor '", t.name(), "' has negative dim ", d);
  }
  auto count = checkedNumElements(shape);
  if (!count.ok()) return count.status().withContext("tensor '" + t.name() + "'");
  // The packed bytes, read as a uint8 tensor: raw_data, external data, or int32_data
  // holding one packed byte per entry (onnx.proto).
  onnx::TensorProto bytes = t;
  bytes.set_data_type(onnx::TensorProto::UINT8);
  bytes.clear_dims();
  bytes.add_dims(static_cast<int64_t>(packedBytes(dtype, *count)));
  auto packed = tensorFromProto(bytes, base_dir);
  if (!packed.ok()) {
    return packed.status().withContext(std::string(dtypeName(dtype)) + " tensor '" + t.name() + "' of shape " +
                                       shapeToString(shape) + ", packed " + std::to_string(8 / bitWidth(dtype)) +
                                       " elements per byte");
  }
  HostTensor h(dtype, shape);
  if (!h.data() && h.bytes()) return makeError(StatusCode::kIoError, "out of memory for tensor '", t.name(), "'");
  unpackSubByte(dtype, static_cast<const uint8_t*>(packed->data()), *count, static_cast<uint8_t*>(h.data()));
  return h;
}

}  // namespace gkrt
