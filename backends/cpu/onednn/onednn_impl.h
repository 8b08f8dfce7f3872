// What oneDNN picked for a primitive, held against what the cpu backend accepts.
//
//   impl_ = pd.impl_info_str();
//   if (isReferenceImpl(impl_)) ...try another format, or gkrt's own kernel...
//   bool slowPath() const override { return isReferenceImpl(impl_); }   // bench --profile: [slow path]
//
// oneDNN always has an implementation: where no optimised one takes the shapes, formats
// and ISA it falls back to reference code ("ref:any", "simple_nchw:any", "gemm:ref"),
// 10-50x slower. The cpu backend never takes one silently.
#pragma once

#include <string>

#ifdef GKRT_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace gkrt::cpu {

// Whether `impl` (impl_info_str) names oneDNN's reference-grade code.
bool isReferenceImpl(const std::string& impl);

#ifdef GKRT_HAVE_DNNL
// Whether two descriptors of one tensor place every element at the same byte (a plain
// and a channel-blocked [1, C, 1, 1] map, C a multiple of the block): no reorder needed.
bool sameBytes(const dnnl::memory::desc& a, const dnnl::memory::desc& b);
#endif

}  // namespace gkrt::cpu
