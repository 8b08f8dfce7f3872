// The `cuda` backend: fused clusters rendered to CUDA C++ (backends/codegen) and built
// by NVRTC for the device's compute capability, cuBLASLt for GEMMs with their bias and
// activation epilogues, device copies for Reshape-class ops, one stream per session,
// pinned host staging for inputs and outputs, and an on-disk cache of the built module.
// The driver is loaded at run time (backends/cuda/cuda_driver.h): without a GPU,
// create() says "cuda: unavailable: <reason>". It follows the GPU column of the fusion
// tables; nodes it declines (cuda_support.h) fall back to the cpu backend with copies.
//
//   ASSIGN_OR_RETURN(auto backend, CudaBackend::create(options));
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cublaslt_matmul.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_library_kernels.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "backends/program_cache.h"

namespace gkrt {

class CudaBackend : public Backend {
 public:
  static StatusOr<std::unique_ptr<Backend>> create(const BackendOptions& options);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  FusionColumn fusionColumn() const override { return FusionColumn::kGpu; }
  bool supports(const ir::Graph& g, const ir::Node& node) const override;
  std::string unsupportedReason(const ir::Graph& g, const ir::Node& node) const override;
  StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) override;
  Status finishCompile() override;

  bool isHost() const override { return false; }
  bool addressableMemory() const override { return true; }  // one planned device arena per session
  StatusOr<void*> allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  Status copyToDevice(void* dst, const void* src, size_t bytes) override;
  Status copyToHost(void* dst, const void* src, size_t bytes) override;
  Status synchronize() override;
  StatusOr<bool> copyFromBackend(Backend& from, void* dst, const void* src, size_t bytes) override;
  // The first run launches kernel by kernel; the second is captured into a CUDA graph,
  // which that and every later run replays with one cuGraphLaunch. GKRT_CUDA_GRAPHS=0
  // keeps every run uncaptured.
  Status runLaunches(const std::function<Status()>& launch_all, bool replayable) override;
  // Whether runs are replayed from a captured CUDA graph now.
  bool replaying() const { return graph_ != nullptr; }
  bool startKernelTimer() override;
  StatusOr<double> stopKernelTimer() override;

  // How the last finishCompile() got the session's module: "cache", "compiled" or "none".
  const char* lastProgramSource() const { return last_program_; }
  const cuda::CudaDevice& device() const { return *stream_->dev; }

 private:
  CudaBackend(std::shared_ptr<cuda::CudaStream> stream, std::string cache_dir, bool graphs)
      : stream_(std::move(stream)), cache_(std::move(cache_dir), "cuda", ".cubin"), graphs_(graphs) {}
  StatusOr<std::vector<unsigned char>> moduleImage(const std::string& source, const std::vector<cuda::SourcePart>& parts);
  Status stage(size_t bytes);
  StatusOr<std::unique_ptr<Kernel>> compileConvEpilogue(const ir::Graph& g, const ir::Node& node);
  // A convolution on cuDNN or as a GEMM (cuda::makeConvKernel, GKRT_CUDA_CONV).
  StatusOr<std::unique_ptr<Kernel>> compileConv(const ir::Graph& g, const ir::Node& node, const cuda::ConvPlan& plan);
  // A kernel of ours in the session's module, rendered under the entry name it gets.
  StatusOr<std::unique_ptr<Kernel>> addGeneratedKernel(const cuda::KernelRender& render, const std::string& what);
  // cuDNN, opened at the first convolution; false (reason logged once) when it cannot be.
  bool cudnnUsable() const;
  // How this backend runs `node` (cuda_support.h), with cuDNN's availability settled.
  cuda::CudaKernelKind kindOf(const ir::Graph& g, const ir::Node& node, std::string* why = nullptr) const;
  // Ok, or the error a library kernel recorded in the fault record during the last run.
  Status takeFault();

  std::shared_ptr<cuda::CudaStream> stream_;
  std::shared_ptr<cuda::CublasLt> cublaslt_;  // opened by the first GEMM
  mutable std::shared_ptr<cuda::Cudnn> cudnn_;  // opened by the first convolution
  mutable int cudnn_state_ = 0;                 // 0 not tried, 1 usable, -1 not loadable
  cuda::FaultRecord* fault_ = nullptr;          // pinned, written by the device
  std::vector<std::string> fault_what_;         // by fault id: the kernel's node and ops
  ProgramCache cache_;
  std::vector<std::shared_ptr<cuda::KernelSlot>> pending_;
  int next_kernel_ = 0;
  cuda::ConvMode conv_mode_ = cuda::ConvMode::kAuto;
  const char* last_program_ = "none";
  void* staging_ = nullptr;  // pinned host memory for copies in and out
  size_t staging_bytes_ = 0;
  std::vector<std::pair<CUevent, CUevent>> timed_;
  bool graphs_ = true;  // GKRT_CUDA_GRAPHS != 0, and no capture failed
  int uncaptured_runs_ = 0;
  CUgraphExec graph_ = nullptr;
  Precision precision_ = Precision::kFloat32;  // BackendOptions::precision, for the cuBLASLt kernels
  int ranks_ = 1;  // tensor-parallel ranks (BackendOptions::communicator)
  std::shared_ptr<Communicator> device_comm_;  // the communicator, where it sums device memory (NCCL)
};

}  // namespace gkrt
