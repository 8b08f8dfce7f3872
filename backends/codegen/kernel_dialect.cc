#include "backends/codegen/kernel_dialect.h"

#include <cmath>
#include <cstdio>

namespace gkrt::codegen {

const KernelDialect& openclDialect() {
  static const KernelDialect d{
      "opencl",
      "#define GK_INF as_float(0x7f800000)\n#define GK_NAN as_float(0x7fc00000)\n",
      "__kernel void", "__global", "__local", "barrier(CLK_LOCAL_MEM_FENCE)",
      "get_group_id(0)", "get_num_groups(0)", "get_local_id(0)", "get_local_size(0)",
      "get_global_id(0)", "get_global_size(0)", "long", "uchar", false, "__constant", "ulong",
      "char", "ushort", "uint"};
  return d;
}

const KernelDialect& cudaDialect() {
  static const KernelDialect d{
      "cuda",
      "#define GK_INF __int_as_float(0x7f800000)\n#define GK_NAN __int_as_float(0x7fc00000)\n",
      "extern \"C\" __global__ void", "", "__shared__", "__syncthreads()",
      "blockIdx.x", "gridDim.x", "threadIdx.x", "blockDim.x",
      "(blockIdx.x * blockDim.x + threadIdx.x)", "(gridDim.x * blockDim.x)", "long long", "unsigned char", true,
      "__device__ const", "unsigned long long", "signed char", "unsigned short", "unsigned int"};
  return d;
}

const char* KernelDialect::typeName(DType t) const {
  switch (t) {
    case DType::kFloat32: case DType::kBool: case DType::kUInt8: case DType::kInt8: case DType::kInt32: case DType::kInt64:
      return cTypeName(t);
    default: return nullptr;
  }
}

const char* KernelDialect::cTypeName(DType t) const {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kBool: return uchar_type;
    case DType::kUInt8: return uchar_type;
    case DType::kInt8: return schar_type;
    case DType::kInt16: return "short";
    case DType::kUInt16: return ushort_type;
    case DType::kInt32: return "int";
    case DType::kUInt32: return uint_type;
    case DType::kInt64: return long_type;
    case DType::kUInt64: return ulong_type;
    default: return nullptr;
  }
}

std::string floatLiteral(float v) {
  if (std::isnan(v)) return "GK_NAN";
  if (std::isinf(v)) return v > 0 ? "GK_INF" : "(-GK_INF)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(v));
  return v < 0 ? "(" + std::string(buf) + ")" : std::string(buf);
}

}  // namespace gkrt::codegen
