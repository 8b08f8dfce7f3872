// MatMul/BatchMatMul/Gemm and ConvTranspose through oneDNN (Conv2D: onednn_conv.h) (Debian's libdnnl-dev), on the host
// builds that find it (GKRT_HAVE_DNNL). Primitives are created when the session is
// compiled; constant weights are reordered once into the layout oneDNN prefers;
// Gemm's C (beta 1) is a binary-add post-op, alpha an output scale; a convolution's
// bias is fused. oneDNN runs on OpenMP's threads, the pool the cpu backend's own
// kernels use (thread_pool.h).
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

#ifdef GKRT_HAVE_DNNL
namespace dnnl {
struct engine;
}
#endif

namespace gkrt::cpu {

#ifdef GKRT_HAVE_DNNL
// The one cpu engine every oneDNN kernel of this backend uses.
dnnl::engine& oneDnnEngine();
#endif

// Whether this build has oneDNN and it takes `node`.
bool canRunOneDnn(const ir::Graph& g, const ir::Node& node);

// `bf16`: a MatMul/BatchMatMul/Gemm takes bf16 operands (weights converted at compile,
// activations at launch) with float32 accumulation and output; callers ask only where
// the CPU has bf16 (cpu_precision.h). With `pool`, an erf GeLU ending a matmul's chain
// runs as gkrt's own pass on it (vector_math.h) instead of oneDNN's slower post-op.
StatusOr<std::unique_ptr<Kernel>> compileOneDnn(const ir::Graph& g, const ir::Node& node, bool bf16 = false,
                                                ThreadPool* pool = nullptr);

}  // namespace gkrt::cpu
