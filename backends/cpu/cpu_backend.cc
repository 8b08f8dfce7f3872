#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/conv_kernel.h"
#include "backends/cpu/fused_elementwise.h"
#include "backends/cpu/fused_reduce.h"
#include "backends/cpu/matmul_kernel.h"
#include "backends/cpu/norm_kernels.h"
#include "backends/cpu/onednn_kernels.h"
#include "backends/cpu/onednn_recurrent.h"
#include "backends/cpu/pattern_kernels.h"
#include "backends/cpu/recurrent_kernel.h"
#include "backends/cpu/transpose_kernel.h"
#include "backends/reference/reference_backend.h"
#include "runtime/ir/op_def.h"

namespace gkrt {

CpuBackend::CpuBackend(const BackendOptions& options)
    : options_(options), pool_(std::make_unique<cpu::ThreadPool>(options.num_threads)) {}

CpuBackend::~CpuBackend() = default;

bool CpuBackend::supports(const ir::Graph&, const ir::Node& node) const { return node.op && node.op->reference; }

// Fast paths first: elementwise clusters and ops as one tiled loop, clusters with
// reductions as passes of such loops over rows, GEMMs on oneDNN or the packed GEMM;
// convolution, pooling, softmax, layernorm and transpose on their own kernels; LSTM,
// GRU and RNN on oneDNN's RNN primitives or their own kernel; every
// other node runs its reference kernel.
StatusOr<std::unique_ptr<Kernel>> CpuBackend::compile(const ir::Graph& g, const ir::Node& node) {
  if (cpu::canRunPattern(g, node)) return cpu::compilePattern(g, node, *pool_, options_);
  if (cpu::canRunElementwise(g, node)) return cpu::compileElementwise(g, node, *pool_);
  if (cpu::canRunReduce(g, node)) return cpu::compileReduce(g, node, *pool_);
  if (cpu::canRunOneDnn(g, node)) {
    auto k = cpu::compileOneDnn(g, node);
    if (k.ok()) return k;  // else our own GEMM / convolution
  }
  if (cpu::canRunMatMul(g, node)) return cpu::compileMatMul(g, node, *pool_);
  if (cpu::canRunConvOrPool(g, node)) return cpu::compileConvOrPool(g, node, *pool_);
  if (cpu::canRunNorm(g, node)) return cpu::compileNorm(g, node, *pool_);
  if (cpu::canRunTranspose(g, node)) return cpu::compileTranspose(g, node, *pool_);
  if (cpu::canRunOneDnnRecurrent(g, node)) {
    auto k = cpu::compileOneDnnRecurrent(g, node);
    if (k.ok()) return k;  // else our own recurrent kernel
  }
  if (cpu::canRunRecurrent(g, node)) return cpu::compileRecurrent(g, node, *pool_);
  return makeReferenceKernel(node);
}

}  // namespace gkrt
