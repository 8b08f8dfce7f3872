// The small differences between the C-like kernel languages the renderer writes:
// OpenCL C now, CUDA C++ (NVRTC) next. Everything else about a kernel is shared.
//
//   const KernelDialect& d = openclDialect();
//   src += d.kernel_prefix + std::string(" gk0(") + d.global_ptr + " float* out0, ...";
#pragma once

#include <string>

#include "runtime/ir/dtype.h"

namespace gkrt::codegen {

struct KernelDialect {
  const char* name;           // "opencl", "cuda"
  const char* preamble;       // defines GK_INF and GK_NAN
  const char* kernel_prefix;  // before the kernel's name
  const char* global_ptr;     // qualifier of a pointer to global memory
  const char* local_array;    // qualifier of a work-group (block) shared array
  const char* barrier;        // work-group barrier for shared memory
  const char* group_id;       // this work-group's index (dimension 0)
  const char* num_groups;
  const char* local_id;
  const char* local_size;
  const char* global_id;
  const char* global_size;
  const char* long_type;      // 64-bit signed integer type
  const char* uchar_type;     // 8-bit unsigned (bool storage)
  bool float_suffix;          // math functions spelled expf, erff, ... (CUDA)
  const char* program_constant;  // qualifier of a read-only array at program (file) scope
  const char* ulong_type;        // 64-bit unsigned integer type
  const char* schar_type;        // 8-bit signed ("char" is signed in OpenCL C only)
  const char* ushort_type;       // 16-bit unsigned
  const char* uint_type;         // 32-bit unsigned

  // A float math function by its C name ("exp", "erf", "rsqrt", "fmod", ...).
  std::string math(const char* fn) const { return float_suffix ? std::string(fn) + "f" : std::string(fn); }
  // The C type of an element type the renderer handles (float32, bool, int8, uint8, int32,
  // int64); null otherwise. 8-bit values are moved, compared, selected and cast (to any
  // type; from integers and bool only), never computed on (op_expressions.cc).
  const char* typeName(DType t) const;
  // The C type of any integer element type (8 to 64 bits, signed or not), float32 and
  // bool; null otherwise. For values the kernels only move or index with.
  const char* cTypeName(DType t) const;
};

const KernelDialect& openclDialect();
const KernelDialect& cudaDialect();

// A float literal that reads back bit-exactly ("0x1.8p+1f", "GK_INF", "-GK_INF", "GK_NAN").
std::string floatLiteral(float v);

}  // namespace gkrt::codegen
