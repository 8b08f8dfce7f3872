// The `cpu` backend: the production host backend, following the CPU column of the
// fusion tables. Fast paths: the fused-loop executor for elementwise clusters and ops
// (backends/cpu/fused/fused_elementwise.h) and a packed GEMM for MatMul/BatchMatMul/Gemm
// (backends/cpu/math/gemm.h), on one thread pool; other nodes run their reference kernels.
#pragma once

#include <map>
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/layout/blocked_layout.h"
#include "backends/cpu/quantization/onednn_int8.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  ~CpuBackend() override;
  const char* name() const override { return "cpu"; }
  FusionColumn fusionColumn() const override { return FusionColumn::kCpu; }
  bool supports(const ir::Graph& g, const ir::Node& node) const override;
  // BlockQuantMatMul's values, scales and offsets (its kernel streams them per launch).
  bool streamsConstantInput(const ir::Node& node, size_t k) const override;
  bool zeroesSubnormalWeights() const override { return options_.cpu_zero_subnormal_weights; }
  StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) override;
  Status finishCompile() override;

 private:
  cpu::LayoutUse layoutUse(const ir::Graph& g, const ir::Node& node);
  const cpu::LayoutPlan& layoutFor(const ir::Graph& g);
  int blockInUse() const;  // 0: every activation plain
  StatusOr<std::unique_ptr<Kernel>> compileConvEpilogueInLayout(const ir::Graph& g, const ir::Node& node,
                                                                const cpu::LayoutPlan& layout);

  BackendOptions options_;
  bool bf16_ = false;  // GEMMs in bf16 (cpu_precision.h)
  bool own_winograd_ = true;  // GKRT_CPU_WINOGRAD=onednn: oneDNN's Winograd only (comparisons)
  bool own_winograd_any_core_ = false;  // GKRT_CPU_WINOGRAD=own: gkrt's wherever it takes the shape
  bool own_gemv_ = true;  // GKRT_CPU_GEMV=off: one-row matmuls on oneDNN
  cpu::Int8Path int8_path_ = cpu::Int8Path::kAuto;  // from cpu_int8_float / cpu_int8_saturating
  bool own_int8_matmul_ = false;  // exact int8 matmuls on the own GEMM first (AVX2 tier, no VNNI)
  std::unique_ptr<cpu::ThreadPool> pool_;
  const ir::Graph* layout_graph_ = nullptr;  // the graph layout_ was planned for
  cpu::LayoutPlan layout_;
  bool channels_last_ = false;  // layout_ is a channels-last plan (decided before planning it)
  std::map<const ir::Node*, bool> is_fast_;  // oneDnnConvIsFast/oneDnnPoolIsFast per node of that graph
};

}  // namespace gkrt
