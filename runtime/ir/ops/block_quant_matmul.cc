// BlockQuantMatMul (runtime/ir/ops/block_quant_matmul.h): rules and the reference kernel.
#include "runtime/ir/ops/block_quant_matmul.h"

#include <vector>

#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::ops {

StatusOr<BlockQuantDims> blockQuantDims(const Shape& x, const Shape& w, const Shape& scales, const Shape* offsets,
                                        const Shape* bias, const QuantAttrs& a) {
  auto bad = [](auto&&... parts) { return makeError(StatusCode::kInvalidArgument, "BlockQuantMatMul ", parts...); };
  BlockQuantDims d;
  d.nibbles = a.to == DType::kUInt4 || a.to == DType::kInt4;
  d.signed_nibbles = a.to == DType::kInt4;
  if (!d.nibbles && a.to != DType::kInt8) return bad("stores uint4, int4 or int8 values, got to=", dtypeName(a.to));
  if (a.precision != DType::kFloat32 && a.precision != DType::kInt8) {
    return bad("precision must be float32 or int8, got ", dtypeName(a.precision));
  }
  d.int8_activations = a.precision == DType::kInt8;
  d.block = a.block_size;
  if (d.block < 2 || d.block % 2 != 0) return bad("block_size must be even and >= 2, got ", d.block);
  if (x.empty() || x.back() <= 0) return bad("x ", shapeToString(x), " needs a last dim K > 0");
  if (w.size() != 3) return bad("w must be [N, blocks, blob], got ", shapeToString(w));
  d.K = x.back();
  d.N = w[0];
  d.blocks = (d.K + d.block - 1) / d.block;
  d.blob = d.nibbles ? d.block / 2 : d.block;
  if (w[1] != d.blocks || w[2] != d.blob) {
    return bad("w ", shapeToString(w), " must be [N, ceil(K / B), ", d.nibbles ? "B / 2" : "B", "] = [N, ", d.blocks, ", ", d.blob,
               "] for K ", d.K, " and B ", d.block);
  }
  if (scales != Shape{d.N, d.blocks}) return bad("scales ", shapeToString(scales), " must be [N, blocks] = [", d.N, ", ", d.blocks, "]");
  if (offsets && *offsets != Shape{d.N, d.blocks}) {
    return bad("offsets ", shapeToString(*offsets), " must be [N, blocks] = [", d.N, ", ", d.blocks, "]");
  }
  if (bias && *bias != Shape{d.N}) return bad("bias ", shapeToString(*bias), " must be [N] = [", d.N, "]");
  d.offsets = offsets != nullptr;
  d.bias = bias != nullptr;
  d.M = numElements(x) / d.K;
  return d;
}

namespace {

const Shape* shapeOrNull(const In& in, size_t k) { return k < in.size() && in[k] ? &in[k]->shape : nullptr; }

Status dtypeBlockQuantMatMul(const ir::Node& n, const In& in, std::vector<DType>& out) {
  const auto& a = n.attrs.get<QuantAttrs>();
  const DType want_w = a.to == DType::kInt8 ? DType::kInt8 : DType::kUInt8;
  if (in[0]->dtype != DType::kFloat32) return makeError(StatusCode::kInvalidArgument, "BlockQuantMatMul x must be float32, got ", dtypeName(in[0]->dtype));
  if (in[1]->dtype != want_w) {
    return makeError(StatusCode::kInvalidArgument, "BlockQuantMatMul w must be ", dtypeName(want_w), " bytes for to=", dtypeName(a.to),
                     ", got ", dtypeName(in[1]->dtype));
  }
  for (size_t k = 2; k < in.size(); ++k) {
    if (in[k] && in[k]->dtype != DType::kFloat32) {
      return makeError(StatusCode::kInvalidArgument, "BlockQuantMatMul input ", k, " must be float32, got ", dtypeName(in[k]->dtype));
    }
  }
  out = {DType::kFloat32};
  return Status::Ok();
}

Status shapeBlockQuantMatMul(const ir::Node& n, const In& in, std::vector<Shape>& out) {
  ASSIGN_OR_RETURN(BlockQuantDims d, blockQuantDims(in[0]->shape, in[1]->shape, in[2]->shape, shapeOrNull(in, 3), shapeOrNull(in, 4),
                                                    n.attrs.get<QuantAttrs>()));
  Shape y = in[0]->shape;
  y.back() = d.N;
  out = {y};
  return Status::Ok();
}

Status blockQuantMatMulKernel(const KernelContext& c) {
  const auto present = [&](size_t k) { return c.inputs.size() > k && c.in(k).data != nullptr; };
  ASSIGN_OR_RETURN(BlockQuantDims d, blockQuantDims(c.in(0).shape, c.in(1).shape, c.in(2).shape, present(3) ? &c.in(3).shape : nullptr,
                                                    present(4) ? &c.in(4).shape : nullptr, c.node.attrs.get<QuantAttrs>()));
  const float* x = c.in(0).as<float>();
  const uint8_t* w = static_cast<const uint8_t*>(c.in(1).data);
  const float* scales = c.in(2).as<float>();
  const float* offsets = present(3) ? c.in(3).as<float>() : nullptr;
  const float* bias = present(4) ? c.in(4).as<float>() : nullptr;
  float* y = c.out(0).as<float>();
  auto q = [&](int64_t n, int64_t k) -> int {
    const uint8_t* blk = w + (n * d.blocks + k / d.block) * d.blob;
    const int64_t i = k % d.block;
    if (!d.nibbles) return static_cast<int8_t>(blk[i]);
    const int u = (blk[i / 2] >> (4 * (i % 2))) & 15;
    return d.signed_nibbles && u >= 8 ? u - 16 : u;
  };
  std::vector<int8_t> xq(size_t(d.block));
  std::vector<float> sx(size_t(d.blocks));
  std::vector<int32_t> qsum(size_t(d.blocks));
  std::vector<int8_t> xrow(size_t(d.blocks * d.block));
  for (int64_t m = 0; m < d.M; ++m) {
    const float* xr = x + m * d.K;
    if (d.int8_activations) {
      for (int64_t b = 0; b < d.blocks; ++b) {
        const int64_t k0 = b * d.block, len = std::min(d.block, d.K - k0);
        sx[size_t(b)] = quantizeActivationBlock(xr + k0, len, xrow.data() + k0, &qsum[size_t(b)]);
      }
    }
    for (int64_t n = 0; n < d.N; ++n) {
      double acc = bias ? bias[n] : 0.0;
      for (int64_t b = 0; b < d.blocks; ++b) {
        const int64_t k0 = b * d.block, k1 = std::min(d.K, k0 + d.block);
        const double s = scales[n * d.blocks + b], o = offsets ? offsets[n * d.blocks + b] : 0.0;
        if (d.int8_activations) {
          int64_t dot = 0;
          for (int64_t k = k0; k < k1; ++k) dot += int64_t(xrow[size_t(k)]) * q(n, k);
          acc += double(sx[size_t(b)]) * (s * double(dot) + o * double(qsum[size_t(b)]));
        } else {
          for (int64_t k = k0; k < k1; ++k) acc += double(xr[k]) * (q(n, k) * s + o);
        }
      }
      y[m * d.N + n] = static_cast<float>(acc);
    }
  }
  return Status::Ok();
}

}  // namespace

void registerBlockQuantMatMulOps(std::vector<OpDef>& t) {
  if constexpr (opSelected("BlockQuantMatMul")) {
    t.push_back({"BlockQuantMatMul", OpClass::kOpaque, 3, 5, 1, 1, AttrKind::kQuant, dtypeBlockQuantMatMul, shapeBlockQuantMatMul,
                 blockQuantMatMulKernel,
                 "(x, w, scales, offsets?, bias?) -> x @ (q * scale + offset) per block of B rows of K (+ bias); uint4, "
                 "int4 or int8 values kept in their blocks, activations optionally int8 per block (gkrt's own)"});
  }
}

}  // namespace gkrt::ops
