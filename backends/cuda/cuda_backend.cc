#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/codegen/cluster_renderer.h"
#include "backends/conv_epilogue.h"
#include "backends/cuda/conv_epilogue_kernel.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"
#include "runtime/base/log.h"

namespace gkrt {
namespace {

int countLines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// The node, its fused ops and its first output's shape: what a failing launch names.
std::string describe(const ir::Graph& g, const ir::Node& node) {
  std::string ops;
  if (node.subgraph) {
    for (const ir::Node& n : node.subgraph->nodes) ops += (ops.empty() ? "" : "+") + std::string(n.op ? n.op->name : "?");
  } else {
    ops = node.op->name;
  }
  const std::string shape = node.outputs.empty() || node.outputs[0] < 0 ? "" : " -> " + shapeToString(g.tensors[node.outputs[0]].shape);
  return node.name + ": " + ops + shape;
}

}  // namespace

StatusOr<std::unique_ptr<Backend>> CudaBackend::create(const BackendOptions& options) {
  ASSIGN_OR_RETURN(auto dev, cuda::openDevice(options.device));
  RETURN_IF_ERROR(dev->makeCurrent());
  auto stream = std::make_shared<cuda::CudaStream>();
  stream->dev = dev;
  RETURN_IF_ERROR(cuda::check(*dev->cu, dev->cu->streamCreate(&stream->stream, CU_STREAM_NON_BLOCKING), "creating a stream"));
  std::string dir = options.program_cache_dir ? *options.program_cache_dir : defaultProgramCacheDir("cuda");
  GKRT_LOG_INFO("cuda: ", dev->name, " (sm_", dev->cc_major, dev->cc_minor, ", ", dev->sm_count, " SMs), driver ",
                dev->cu->version, ", NVRTC ", cuda::nvrtcVersion());
  const char* graphs = std::getenv("GKRT_CUDA_GRAPHS");
  const bool use_graphs = !(graphs && std::string(graphs) == "0");
  auto backend = std::unique_ptr<CudaBackend>(new CudaBackend(std::move(stream), std::move(dir), use_graphs));
  backend->precision_ = options.precision;
#ifdef GKRT_HAVE_CUDNN
  ASSIGN_OR_RETURN(backend->conv_mode_, cuda::convModeOf(std::getenv("GKRT_CUDA_CONV")));
#endif
  if (options.communicator) backend->ranks_ = options.communicator->size();
  if (options.communicator && options.communicator->onDevice()) backend->device_comm_ = options.communicator;
  return std::unique_ptr<Backend>(std::move(backend));
}

CudaBackend::~CudaBackend() {
  if (graph_) stream_->dev->cu->graphExecDestroy(graph_);
  for (auto& e : timed_) {
    if (e.first) stream_->dev->cu->eventDestroy(e.first);
    if (e.second) stream_->dev->cu->eventDestroy(e.second);
  }
  if (staging_) stream_->dev->cu->memFreeHost(staging_);
  if (fault_) stream_->dev->cu->memFreeHost(fault_);
}

bool CudaBackend::cudnnUsable() const {
  if (!cuda::cudnnBuilt()) return false;
  if (cudnn_state_ == 0) {
#ifdef GKRT_HAVE_CUDNN
    auto dnn = cuda::openCudnn(stream_->dev);
    if (dnn.ok()) {
      cudnn_ = *dnn;
      cudnn_state_ = 1;
    } else {
      GKRT_LOG_WARNING(dnn.status().message(), "; convolutions fall back to the cpu backend");
      cudnn_state_ = -1;
    }
#endif
  }
  return cudnn_state_ == 1;
}

Status CudaBackend::takeFault() {
  if (!fault_ || fault_->kernel == 0) return Status::Ok();
  const int id = fault_->kernel - 1;
  const std::string what = id >= 0 && size_t(id) < fault_what_.size() ? fault_what_[size_t(id)] : "a kernel";
  const Status s = makeError(StatusCode::kInvalidArgument, "cuda: ", what, ": index ", fault_->value, " at position ",
                             fault_->position, " is out of range (the output is not valid)");
  *fault_ = cuda::FaultRecord{};
  return s;
}

cuda::CudaKernelKind CudaBackend::kindOf(const ir::Graph& g, const ir::Node& node, std::string* why) const {
  // AllReduce and MatMulAllReduce across ranks sum on the device where the communicator can.
  const bool collective = node.op && !node.subgraph && (std::strcmp(node.op->name, "AllReduce") == 0 || std::strcmp(node.op->name, "MatMulAllReduce") == 0);
  if (collective && device_comm_) {
    if (std::strcmp(node.op->name, "MatMulAllReduce") == 0) return cuda::cudaKernelKind(g, node, why, true);  // its GEMM (cuBLASLt)
    for (int t : node.inputs) {
      if (t < 0 || g.tensors[t].dtype != DType::kFloat32) {
        if (why) *why = "AllReduce over NCCL sums float32 only here";
        return cuda::CudaKernelKind::kNone;
      }
    }
    return cuda::CudaKernelKind::kCopy;  // compile() makes it the NCCL AllReduce
  }
  if (std::string refusal = deviceCollectiveRefusal(node, ranks_); !refusal.empty()) {
    if (why) *why = refusal;
    return cuda::CudaKernelKind::kNone;
  }
  const bool conv = cuda::convPlanFor(g, node).ok();  // only a convolution needs cuDNN loaded
  return cuda::cudaKernelKind(g, node, why, conv ? cudnnUsable() : true);
}

bool CudaBackend::supports(const ir::Graph& g, const ir::Node& node) const {
  return kindOf(g, node) != cuda::CudaKernelKind::kNone;
}

std::string CudaBackend::unsupportedReason(const ir::Graph& g, const ir::Node& node) const {
  std::string why;
  kindOf(g, node, &why);
  return why;
}

StatusOr<std::unique_ptr<Kernel>> CudaBackend::compile(const ir::Graph& g, const ir::Node& node) {
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  switch (kindOf(g, node)) {
    case cuda::CudaKernelKind::kCudnnConv: {
#ifdef GKRT_HAVE_CUDNN
      if (isConvEpilogue(node)) return compileConvEpilogue(g, node);
      ASSIGN_OR_RETURN(cuda::ConvPlan plan, cuda::convPlanFor(g, node));
      return compileConv(g, node, plan);
#else
      break;
#endif
    }
    case cuda::CudaKernelKind::kLibrary: {
      auto slot = std::make_shared<cuda::KernelSlot>();
      slot->entry = "gk" + std::to_string(next_kernel_++);
      slot->what = describe(g, node);
      std::vector<CUdeviceptr> extra;
      const int fault_id = static_cast<int>(fault_what_.size());
      if (codegen::usesFaultRecord(node)) {
        if (!fault_) {
          void* p = nullptr;
          RETURN_IF_ERROR(cuda::check(*stream_->dev->cu, stream_->dev->cu->memAllocHost(&p, sizeof(cuda::FaultRecord)),
                                      "allocating the fault record"));
          fault_ = static_cast<cuda::FaultRecord*>(p);
          *fault_ = cuda::FaultRecord{};
        }
        fault_what_.push_back(slot->what);
        extra.push_back(reinterpret_cast<CUdeviceptr>(fault_));  // unified addressing: the host pointer is the device's
      }
      ASSIGN_OR_RETURN(codegen::RenderedKernel k, cuda::renderLibraryKernel(g, node, slot->entry, fault_id));
      slot->source = k.source;
      pending_.push_back(slot);
      return cuda::makeGeneratedKernel(stream_, std::move(k), std::move(slot), std::move(extra));
    }
    case cuda::CudaKernelKind::kCopy:
      if (device_comm_ && std::strcmp(node.op->name, "AllReduce") == 0) return cuda::makeAllReduceKernel(stream_, device_comm_);
      return cuda::makeCopyKernel(stream_);
    case cuda::CudaKernelKind::kCublasLt: {
      if (!cublaslt_) {
        ASSIGN_OR_RETURN(cublaslt_, cuda::openCublasLt(stream_->dev));
      }
      ASSIGN_OR_RETURN(cuda::GemmPlan plan, cuda::gemmPlanFor(g, node));
      // MatMulAllReduce across ranks: the bias once in the sum (rank 0 adds it).
      if (device_comm_ && std::strcmp(node.op->name, "MatMulAllReduce") == 0 && device_comm_->rank() != 0) {
        plan.bias_input = -1;
      }
      ASSIGN_OR_RETURN(auto gemm, cuda::makeCublasLtMatmul(cublaslt_, stream_, plan, describe(g, node), precision_));
      if (device_comm_ && std::strcmp(node.op->name, "MatMulAllReduce") == 0) {
        return cuda::makeKernelWithEpilogue(std::move(gemm), cuda::makeAllReduceKernel(stream_, device_comm_));
      }
      if (plan.activation != cuda::GemmPlan::Activation::kGeluErf) return gemm;
      ASSIGN_OR_RETURN(auto gelu, addGeneratedKernel([&](const std::string& entry) { return cuda::renderErfGeluEpilogue(g, node, entry); },
                                                     describe(g, node) + " (its GeLU)"));
      return cuda::makeKernelWithEpilogue(std::move(gemm), std::move(gelu));
    }
    case cuda::CudaKernelKind::kGenerated:
      return addGeneratedKernel([&](const std::string& entry) { return codegen::renderCluster(g, node, entry, codegen::cudaDialect()); },
                                describe(g, node));
    case cuda::CudaKernelKind::kNone:
      break;
  }
  return makeError(StatusCode::kUnsupported, "cuda: cannot run ", describe(g, node), ": ", unsupportedReason(g, node));
}

// A convolution and its epilogue: one cuDNN call where its fused form covers the chain,
// else the convolution and a generated kernel over its output.
StatusOr<std::unique_ptr<Kernel>> CudaBackend::compileConvEpilogue(const ir::Graph& g, const ir::Node& node) {
#ifndef GKRT_HAVE_CUDNN
  return makeError(StatusCode::kUnsupported, "cuda: this build has no cuDNN for ", describe(g, node));
#else
  ASSIGN_OR_RETURN(ConvEpilogueSplit split, splitConvEpilogue(node));
  ASSIGN_OR_RETURN(cuda::ConvEpiloguePlan plan, cuda::convEpiloguePlanFor(node));
  ASSIGN_OR_RETURN(auto conv, compileConv(g, node, plan.conv));
  std::unique_ptr<Kernel> rest;
  if (!plan.whole) {
    ASSIGN_OR_RETURN(rest, addGeneratedKernel([&](const std::string& entry) {
      return codegen::renderCluster(g, split.rest, entry, codegen::cudaDialect());
    }, describe(g, node) + " (its epilogue)"));
  }
  const bool has_bias = split.conv_operands.size() > 2 && (split.conv_operands[2].input >= 0 || split.conv_operands[2].constant);
  return cuda::makeConvEpilogueKernel(stream_, split, std::move(conv), std::move(rest), plan.whole && !has_bias ? plan.conv.k : 0,
                                      plan.residual_input);
#endif
}

StatusOr<std::unique_ptr<Kernel>> CudaBackend::compileConv(const ir::Graph& g, const ir::Node& node, const cuda::ConvPlan& plan) {
#ifndef GKRT_HAVE_CUDNN
  return makeError(StatusCode::kUnsupported, "cuda: this build has no cuDNN for ", describe(g, node));
#else
  if (!cublaslt_ && conv_mode_ != cuda::ConvMode::kCudnn && cuda::convGemmApplies(plan)) {
    auto lt = cuda::openCublasLt(stream_->dev);  // without it every convolution stays on cuDNN
    if (lt.ok()) cublaslt_ = *lt;
  }
  auto generated = [this](const cuda::KernelRender& render, const std::string& what) { return addGeneratedKernel(render, what); };
  return cuda::makeConvKernel(cudnn_, cublaslt_, stream_, plan, describe(g, node), precision_, conv_mode_, generated);
#endif
}

StatusOr<std::unique_ptr<Kernel>> CudaBackend::addGeneratedKernel(const cuda::KernelRender& render, const std::string& what) {
  auto slot = std::make_shared<cuda::KernelSlot>();
  slot->entry = "gk" + std::to_string(next_kernel_++);
  slot->what = what;
  ASSIGN_OR_RETURN(codegen::RenderedKernel k, render(slot->entry));
  slot->source = k.source;
  pending_.push_back(slot);
  return cuda::makeGeneratedKernel(stream_, std::move(k), std::move(slot));
}

// The module image of `source`: from the cache, else compiled by NVRTC and stored.
StatusOr<std::vector<unsigned char>> CudaBackend::moduleImage(const std::string& source, const std::vector<cuda::SourcePart>& parts) {
  const cuda::CudaDevice& dev = *stream_->dev;
  const int cc = dev.cc_major * 10 + dev.cc_minor;
  const std::string key = ProgramCache::keyFor(source, "nvrtc " + cuda::nvrtcVersion() + " cc " + std::to_string(cc), dev.identity());
  if (auto bin = cache_.load(key)) {
    last_program_ = "cache";
    return *bin;
  }
  ASSIGN_OR_RETURN(cuda::NvrtcImage img, cuda::compileCuda(source, cc, parts));
  last_program_ = "compiled";
  cache_.store(key, img.bytes);
  return img.bytes;
}

// One module for every generated kernel of the session.
Status CudaBackend::finishCompile() {
  if (pending_.empty()) return Status::Ok();
  last_program_ = "none";
  std::string source = codegen::cudaDialect().preamble;
  std::vector<cuda::SourcePart> parts;
  for (const auto& slot : pending_) {
    parts.push_back({countLines(source) + 1, slot->entry + " (" + slot->what + ")"});
    source += slot->source;
  }
  const cuda::Driver& cu = *stream_->dev->cu;
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  ASSIGN_OR_RETURN(std::vector<unsigned char> image, moduleImage(source, parts));
  auto module = std::make_shared<cuda::CudaModule>();
  module->cu = &cu;
  CUresult r = cu.moduleLoadData(&module->module, image.data());
  if (r != CUDA_SUCCESS && std::string(last_program_) == "cache") {
    GKRT_LOG_WARNING("cuda: the cached module was rejected by the driver (", cuda::errorName(cu, r), "); rebuilding it");
    cache_.remove(ProgramCache::keyFor(source, "nvrtc " + cuda::nvrtcVersion() + " cc " +
                                                   std::to_string(stream_->dev->cc_major * 10 + stream_->dev->cc_minor),
                                       stream_->dev->identity()));
    ASSIGN_OR_RETURN(cuda::NvrtcImage img, cuda::compileCuda(source, stream_->dev->cc_major * 10 + stream_->dev->cc_minor, parts));
    last_program_ = "compiled";
    image = std::move(img.bytes);
    r = cu.moduleLoadData(&module->module, image.data());
  }
  RETURN_IF_ERROR(cuda::check(cu, r, "loading the session's module"));
  for (const auto& slot : pending_) {
    RETURN_IF_ERROR(cuda::check(cu, cu.moduleGetFunction(&slot->function, module->module, slot->entry.c_str()),
                                "finding kernel " + slot->entry + " (" + slot->what + ")"));
    slot->module = module;
  }
  pending_.clear();
  return Status::Ok();
}

StatusOr<void*> CudaBackend::allocate(size_t bytes) {
  const cuda::Driver& cu = *stream_->dev->cu;
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  CUdeviceptr p = 0;
  RETURN_IF_ERROR(cuda::check(cu, cu.memAlloc(&p, std::max<size_t>(bytes, 4)),
                              "allocating " + std::to_string(bytes) + " bytes on " + stream_->dev->name));
  return reinterpret_cast<void*>(p);
}

void CudaBackend::deallocate(void* ptr) {
  if (ptr) stream_->dev->cu->memFree(dptr(ptr));
}

// Pinned staging memory of at least `bytes`; grows only at the first run of a shape.
Status CudaBackend::stage(size_t bytes) {
  if (bytes <= staging_bytes_) return Status::Ok();
  const cuda::Driver& cu = *stream_->dev->cu;
  if (staging_) cu.memFreeHost(staging_);
  staging_ = nullptr;
  const size_t grown = std::max(bytes, 2 * staging_bytes_);  // constants arrive one by one at compile
  staging_bytes_ = 0;
  RETURN_IF_ERROR(cuda::check(cu, cu.memAllocHost(&staging_, grown), "allocating " + std::to_string(grown) + " bytes of pinned host memory"));
  staging_bytes_ = grown;
  return Status::Ok();
}

Status CudaBackend::copyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  const cuda::Driver& cu = *stream_->dev->cu;
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  RETURN_IF_ERROR(stage(bytes));
  std::memcpy(staging_, src, bytes);
  RETURN_IF_ERROR(cuda::check(cu, cu.memcpyHtoDAsync(dptr(dst), staging_, bytes, stream_->stream),
                              "copying " + std::to_string(bytes) + " bytes to the device"));
  // The staging buffer is reused by the next copy.
  return cuda::check(cu, cu.streamSynchronize(stream_->stream), "copying " + std::to_string(bytes) + " bytes to the device");
}

StatusOr<bool> CudaBackend::copyFromBackend(Backend& from, void* dst, const void* src, size_t bytes) {
  if (std::strcmp(from.name(), "cuda") != 0) return false;
  auto* other = static_cast<CudaBackend*>(&from);  // the only backend named cuda (no RTTI in minimal builds)
  if (other->stream_->dev != stream_->dev) return false;
  if (bytes == 0) return true;
  const cuda::Driver& cu = *stream_->dev->cu;
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  RETURN_IF_ERROR(other->synchronize());  // its last run wrote `src`
  const std::string what = "copying " + std::to_string(bytes) + " bytes between two plans' device memory";
  RETURN_IF_ERROR(cuda::check(cu, cu.memcpyDtoDAsync(dptr(dst), dptr(src), bytes, stream_->stream), what));
  RETURN_IF_ERROR(cuda::check(cu, cu.streamSynchronize(stream_->stream), what));
  return true;
}

Status CudaBackend::copyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  const cuda::Driver& cu = *stream_->dev->cu;
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  RETURN_IF_ERROR(stage(bytes));
  RETURN_IF_ERROR(cuda::check(cu, cu.memcpyDtoHAsync(staging_, dptr(src), bytes, stream_->stream),
                              "copying " + std::to_string(bytes) + " bytes from the device"));
  RETURN_IF_ERROR(cuda::check(cu, cu.streamSynchronize(stream_->stream), "copying " + std::to_string(bytes) + " bytes from the device"));
  std::memcpy(dst, staging_, bytes);
  return takeFault();
}

Status CudaBackend::synchronize() {
  RETURN_IF_ERROR(cuda::check(*stream_->dev->cu, stream_->dev->cu->streamSynchronize(stream_->stream), "waiting for the device"));
  return takeFault();
}

Status CudaBackend::runLaunches(const std::function<Status()>& launch_all, bool replayable) {
  const cuda::Driver& cu = *stream_->dev->cu;
  RETURN_IF_ERROR(stream_->dev->makeCurrent());
  if (stream_->timed) return launch_all();  // kernel by kernel when timing
  if (graph_) return cuda::check(cu, cu.graphLaunch(graph_, stream_->stream), "replaying the session's CUDA graph");
  if (!replayable || !graphs_ || uncaptured_runs_++ == 0) return launch_all();  // the first run warms up
  RETURN_IF_ERROR(cuda::check(cu, cu.streamBeginCapture(stream_->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                              "starting a CUDA graph capture"));
  const Status launched = launch_all();
  CUgraph graph = nullptr;
  CUresult r = cu.streamEndCapture(stream_->stream, &graph);
  if (r == CUDA_SUCCESS && launched.ok()) r = cu.graphInstantiate(&graph_, graph, 0);
  if (graph) cu.graphDestroy(graph);
  RETURN_IF_ERROR(launched);
  if (r != CUDA_SUCCESS) {
    GKRT_LOG_WARNING("cuda: capturing the session into a CUDA graph failed (", cuda::errorName(cu, r),
                     "); it runs kernel by kernel");
    graphs_ = false;
    graph_ = nullptr;
    return launch_all();
  }
  GKRT_LOG_INFO("cuda: the session's launches are captured in a CUDA graph; later runs replay it");
  return cuda::check(cu, cu.graphLaunch(graph_, stream_->stream), "replaying the session's CUDA graph");
}

bool CudaBackend::startKernelTimer() {
  timed_.clear();
  stream_->timed = &timed_;
  return true;
}

StatusOr<double> CudaBackend::stopKernelTimer() {
  stream_->timed = nullptr;
  const cuda::Driver& cu = *stream_->dev->cu;
  Status done = synchronize();
  double seconds = 0;
  for (auto& [start, end] : timed_) {
    float ms = 0;
    if (done.ok() && start && end) done = cuda::check(cu, cu.eventElapsedTime(&ms, start, end), "reading a kernel's time");
    seconds += ms * 1e-3;
    if (start) cu.eventDestroy(start);
    if (end) cu.eventDestroy(end);
  }
  timed_.clear();
  RETURN_IF_ERROR(done);
  return seconds;
}

}  // namespace gkrt
