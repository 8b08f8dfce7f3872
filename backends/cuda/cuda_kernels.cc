#include "backends/cuda/cuda_kernels.h"

#include <algorithm>

namespace gkrt::cuda {

CudaStream::~CudaStream() {
  if (stream) dev->cu->streamDestroy(stream);
}

void CudaStream::beforeLaunch() {
  if (!timed) return;
  CUevent start = nullptr, end = nullptr;
  dev->cu->eventCreate(&start, CU_EVENT_DEFAULT);
  dev->cu->eventCreate(&end, CU_EVENT_DEFAULT);
  if (start) dev->cu->eventRecord(start, stream);
  timed->push_back({start, end});
}

Status CudaStream::afterLaunch(CUresult r, const std::string& what) {
  if (timed && !timed->empty() && timed->back().second) dev->cu->eventRecord(timed->back().second, stream);
  return check(*dev->cu, r, "launching " + what);
}

CudaModule::~CudaModule() {
  if (module) cu->moduleUnload(module);
}

namespace {

CUdeviceptr ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

class GeneratedKernel final : public Kernel {
 public:
  GeneratedKernel(std::shared_ptr<CudaStream> stream, codegen::RenderedKernel k, std::shared_ptr<KernelSlot> slot,
                  std::vector<CUdeviceptr> extra)
      : s_(std::move(stream)), k_(std::move(k)), slot_(std::move(slot)), extra_(std::move(extra)) {}
  ~GeneratedKernel() override {
    for (CUdeviceptr c : constants_) s_->dev->cu->memFree(c);
  }

  Status uploadConstants() {
    const Driver& cu = *s_->dev->cu;
    for (const ir::Tensor* t : k_.constants) {
      const size_t bytes = static_cast<size_t>(numElements(t->shape)) * dtypeSize(t->dtype);
      CUdeviceptr d = 0;
      RETURN_IF_ERROR(check(cu, cu.memAlloc(&d, std::max<size_t>(bytes, 8)), "allocating constant '" + t->name + "'"));
      constants_.push_back(d);
      RETURN_IF_ERROR(check(cu, cu.memcpyHtoDAsync(d, t->constant->data, bytes, s_->stream), "uploading constant '" + t->name + "'"));
    }
    return check(cu, cu.streamSynchronize(s_->stream), "uploading the constants of " + slot_->what);
  }

  std::string detail() const override { return "NVRTC " + slot_->entry; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    if (!slot_->function) {
      return makeError(StatusCode::kInternal, "cuda: kernel ", slot_->entry, " launched before the session's module was built");
    }
    args_.clear();
    for (const MutableTensorView& v : out) args_.push_back(ptr(v.data));
    for (const TensorView& v : in) args_.push_back(ptr(v.data));
    for (CUdeviceptr c : constants_) args_.push_back(c);
    for (CUdeviceptr e : extra_) args_.push_back(e);
    params_.clear();
    for (CUdeviceptr& a : args_) params_.push_back(&a);
    if (k_.items <= 0) return Status::Ok();
    unsigned block = kElementwiseBlock, grid = 0;
    if (!k_.reduce && !k_.gemm) {
      grid = static_cast<unsigned>(std::min<int64_t>((k_.items + block - 1) / block, kMaxElementwiseBlocks));
    } else {
      block = static_cast<unsigned>(k_.local_size);
      grid = static_cast<unsigned>(k_.gemm ? k_.items : std::min<int64_t>(k_.items, kMaxReduceBlocks));
    }
    s_->beforeLaunch();
    const CUresult r = s_->dev->cu->launchKernel(slot_->function, grid, 1, 1, block, 1, 1, 0, s_->stream, params_.data(), nullptr);
    return s_->afterLaunch(r, slot_->entry + " (" + slot_->what + ")");
  }

 private:
  static constexpr unsigned kElementwiseBlock = 256;
  static constexpr int64_t kMaxElementwiseBlocks = int64_t(1) << 22;  // grid-stride loop beyond
  static constexpr int64_t kMaxReduceBlocks = 65536;

  std::shared_ptr<CudaStream> s_;
  codegen::RenderedKernel k_;
  std::shared_ptr<KernelSlot> slot_;
  std::vector<CUdeviceptr> constants_;
  std::vector<CUdeviceptr> extra_;
  std::vector<CUdeviceptr> args_;  // sized at the first launch, reused after
  std::vector<void*> params_;
};

class CopyKernel final : public Kernel {
 public:
  explicit CopyKernel(std::shared_ptr<CudaStream> s) : s_(std::move(s)) {}
  std::string detail() const override { return "device copy"; }
  // The plan may hand the output the input's bytes (input dying here): then nothing moves.
  int inPlaceInput() const override { return 0; }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const size_t bytes = static_cast<size_t>(in[0].size()) * dtypeSize(in[0].dtype);
    if (bytes == 0 || in[0].data == out[0].data) return Status::Ok();
    s_->beforeLaunch();
    return s_->afterLaunch(s_->dev->cu->memcpyDtoDAsync(ptr(out[0].data), ptr(in[0].data), bytes, s_->stream), "a reshape copy");
  }

 private:
  std::shared_ptr<CudaStream> s_;
};

class KernelWithEpilogue final : public Kernel {
 public:
  KernelWithEpilogue(std::unique_ptr<Kernel> first, std::unique_ptr<Kernel> epilogue)
      : first_(std::move(first)), epilogue_(std::move(epilogue)) {}
  size_t workspaceBytes() const override { return first_->workspaceBytes(); }
  std::string detail() const override { return first_->detail() + " + " + epilogue_->detail(); }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    RETURN_IF_ERROR(first_->launch(in, out, workspace));
    const std::vector<MutableTensorView> y = {out[0]};
    return epilogue_->launch({TensorView{out[0].dtype, out[0].shape, out[0].data}}, y, nullptr);
  }

 private:
  std::unique_ptr<Kernel> first_, epilogue_;
};

class AllReduceKernel final : public Kernel {
 public:
  AllReduceKernel(std::shared_ptr<CudaStream> s, std::shared_ptr<Communicator> comm) : s_(std::move(s)), comm_(std::move(comm)) {}
  std::string detail() const override { return "NCCL AllReduce over " + std::to_string(comm_->size()) + " ranks"; }
  int inPlaceInput() const override { return 0; }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const size_t count = static_cast<size_t>(out[0].size());
    s_->beforeLaunch();
    CUresult r = CUDA_SUCCESS;
    if (in[0].data != out[0].data && count) r = s_->dev->cu->memcpyDtoDAsync(ptr(out[0].data), ptr(in[0].data), count * sizeof(float), s_->stream);
    Status st = r == CUDA_SUCCESS ? comm_->allReduceSumOnDevice(out[0].data, count, s_->stream) : Status::Ok();
    RETURN_IF_ERROR(s_->afterLaunch(r, "an AllReduce's copy"));
    return st;
  }

 private:
  std::shared_ptr<CudaStream> s_;
  std::shared_ptr<Communicator> comm_;
};

}  // namespace

std::unique_ptr<Kernel> makeAllReduceKernel(std::shared_ptr<CudaStream> stream, std::shared_ptr<Communicator> comm) {
  return std::make_unique<AllReduceKernel>(std::move(stream), std::move(comm));
}

std::unique_ptr<Kernel> makeKernelWithEpilogue(std::unique_ptr<Kernel> first, std::unique_ptr<Kernel> epilogue) {
  return std::make_unique<KernelWithEpilogue>(std::move(first), std::move(epilogue));
}

StatusOr<std::unique_ptr<Kernel>> makeGeneratedKernel(std::shared_ptr<CudaStream> stream, codegen::RenderedKernel k,
                                                      std::shared_ptr<KernelSlot> slot, std::vector<CUdeviceptr> extra) {
  auto kernel = std::make_unique<GeneratedKernel>(std::move(stream), std::move(k), std::move(slot), std::move(extra));
  RETURN_IF_ERROR(kernel->uploadConstants());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

std::unique_ptr<Kernel> makeCopyKernel(std::shared_ptr<CudaStream> stream) {
  return std::make_unique<CopyKernel>(std::move(stream));
}

}  // namespace gkrt::cuda
