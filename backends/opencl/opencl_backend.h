// The `opencl` backend: fused clusters rendered to OpenCL C (backends/codegen), hand-
// written GEMM/convolution/pooling/softmax/layernorm kernels, device buffers, and an
// on-disk program cache. It follows the GPU column of the fusion tables. Nodes it does
// not run go to the cpu backend through explicit copies (runtime/device_fallback.h).
//
// All of a session's kernels form one OpenCL program, built (or loaded from the cache)
// once in finishCompile(); a second start with the same model, options and driver
// loads the binary instead of compiling.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/opencl/cl_device.h"
#include "backends/opencl/opencl_kernels.h"
#include "backends/program_cache.h"

namespace gkrt {

class OpenClBackend : public Backend {
 public:
  static StatusOr<std::unique_ptr<Backend>> create(const BackendOptions& options);
  ~OpenClBackend() override;

  const char* name() const override { return "opencl"; }
  FusionColumn fusionColumn() const override { return FusionColumn::kGpu; }
  bool supports(const ir::Graph& g, const ir::Node& node) const override;
  std::string unsupportedReason(const ir::Graph& g, const ir::Node& node) const override;
  StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) override;
  Status finishCompile() override;

  bool isHost() const override { return false; }
  StatusOr<void*> allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  Status copyToDevice(void* dst, const void* src, size_t bytes) override;
  Status copyToHost(void* dst, const void* src, size_t bytes) override;
  Status synchronize() override;
  bool startKernelTimer() override;
  StatusOr<double> stopKernelTimer() override;

  const opencl::ClDevice& device() const { return *dev_; }
  struct SourcePart {
    int first_line;
    std::string name;
  };
  // Compiles `source` (kernel `parts[k].name` starts at line `parts[k].first_line`);
  // a failure names the kernels the compiler complained about, with its build log.
  StatusOr<cl_program> buildProgram(const std::string& source, const std::vector<SourcePart>& parts);

  // How the last finishCompile() got the session's program of generated kernels (or,
  // without one, the library's when it built it): "cache", "compiled" or "none".
  const char* lastProgramSource() const { return last_program_; }

 private:
  OpenClBackend(std::shared_ptr<opencl::ClDevice> dev, std::string cache_dir)
      : dev_(std::move(dev)), cache_(std::move(cache_dir), "opencl", ".clbin") {}
  StatusOr<cl_program> programFor(const std::string& source, const std::vector<SourcePart>& parts);
  // A convolution epilogue: the library convolution, then a generated kernel over its output.
  std::string convEpilogueRefusal(const ir::Graph& g, const ir::Node& node) const;
  StatusOr<std::unique_ptr<Kernel>> compileConvEpilogue(const ir::Graph& g, const ir::Node& node);

  std::shared_ptr<opencl::ClDevice> dev_;
  ProgramCache cache_;
  std::string cache_options_;  // the build options as the cache keys them (create())
  std::vector<std::shared_ptr<opencl::KernelSlot>> pending_;
  int next_kernel_ = 0;
  const char* last_program_ = "none";
  int ranks_ = 1;  // tensor-parallel ranks (BackendOptions::communicator)
  // Gather's out-of-range indices: the session's fault record (codegen::KernelFaultRecord
  // in device memory, made with the first Gather) and, by fault id, the kernels' nodes.
  cl_mem fault_ = nullptr;
  std::vector<std::string> fault_what_;
  // Ok, or the error a kernel recorded during the last run (the record is then cleared).
  Status takeFault();
  std::vector<cl_event> timed_events_;  // launches recorded by the kernel timer
};

}  // namespace gkrt
