#include "backends/cuda/cudnn_conv.h"

#include <cstring>
#include <mutex>

// cuDNN 9 marks its convolution API deprecated (in favour of the graph API); it is
// still shipped and is what a plain Conv2D needs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>

#include "backends/cuda/cuda_library.h"

namespace gkrt::cuda {

struct Cudnn {
  decltype(&::cudnnCreate) create;
  decltype(&::cudnnDestroy) destroy;
  decltype(&::cudnnGetVersion) getVersion;
  decltype(&::cudnnGetErrorString) errorString;
  decltype(&::cudnnSetStream) setStream;
  decltype(&::cudnnCreateTensorDescriptor) tensorCreate;
  decltype(&::cudnnSetTensor4dDescriptor) tensorSet;
  decltype(&::cudnnDestroyTensorDescriptor) tensorDestroy;
  decltype(&::cudnnCreateFilterDescriptor) filterCreate;
  decltype(&::cudnnSetFilter4dDescriptor) filterSet;
  decltype(&::cudnnDestroyFilterDescriptor) filterDestroy;
  decltype(&::cudnnCreateConvolutionDescriptor) convCreate;
  decltype(&::cudnnSetConvolution2dDescriptor) convSet;
  decltype(&::cudnnSetConvolutionGroupCount) convSetGroups;
  decltype(&::cudnnSetConvolutionMathType) convSetMath;
  decltype(&::cudnnDestroyConvolutionDescriptor) convDestroy;
  decltype(&::cudnnGetConvolution2dForwardOutputDim) outputDim;
  decltype(&::cudnnFindConvolutionForwardAlgorithm) findAlgo;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) heuristicAlgo;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize) workspaceSize;
  decltype(&::cudnnConvolutionForward) forward;
  decltype(&::cudnnAddTensor) addTensor;
  decltype(&::cudnnCreateActivationDescriptor) activationCreate;
  decltype(&::cudnnSetActivationDescriptor) activationSet;
  decltype(&::cudnnDestroyActivationDescriptor) activationDestroy;
  decltype(&::cudnnActivationForward) activationForward;
  decltype(&::cudnnConvolutionBiasActivationForward) forwardFused;
  cudnnHandle_t handle = nullptr;
  CUstream stream = nullptr;  // the stream the handle was last set to
  std::mutex mutex;           // one handle, shared by the device's sessions
  std::shared_ptr<CudaDevice> dev;
  ~Cudnn() {
    if (handle) destroy(handle);
  }
};

namespace {

Status unsupported(const std::string& why) { return makeError(StatusCode::kUnsupported, why); }

Status dnnCheck(const Cudnn& d, cudnnStatus_t s, const std::string& what) {
  if (s == CUDNN_STATUS_SUCCESS) return Status::Ok();
  return makeError(StatusCode::kDeviceError, "cuda: cuDNN ", what, " failed (", d.errorString ? d.errorString(s) : "?", ")");
}

}  // namespace

StatusOr<std::shared_ptr<Cudnn>> openCudnn(const std::shared_ptr<CudaDevice>& dev) {
  static std::mutex mutex;
  static std::weak_ptr<Cudnn> open;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto alive = open.lock(); alive && alive->dev == dev) return alive;
  const std::string name = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
  ASSIGN_OR_RETURN(void* lib, openLibrary({name.c_str()}, "install cuDNN 9 or add its lib folder to LD_LIBRARY_PATH"));
  auto d = std::make_shared<Cudnn>();
  Symbols sym{lib, ""};
  sym(d->create, "cudnnCreate");
  sym(d->destroy, "cudnnDestroy");
  sym(d->getVersion, "cudnnGetVersion");
  sym(d->errorString, "cudnnGetErrorString");
  sym(d->setStream, "cudnnSetStream");
  sym(d->tensorCreate, "cudnnCreateTensorDescriptor");
  sym(d->tensorSet, "cudnnSetTensor4dDescriptor");
  sym(d->tensorDestroy, "cudnnDestroyTensorDescriptor");
  sym(d->filterCreate, "cudnnCreateFilterDescriptor");
  sym(d->filterSet, "cudnnSetFilter4dDescriptor");
  sym(d->filterDestroy, "cudnnDestroyFilterDescriptor");
  sym(d->convCreate, "cudnnCreateConvolutionDescriptor");
  sym(d->convSet, "cudnnSetConvolution2dDescriptor");
  sym(d->convSetGroups, "cudnnSetConvolutionGroupCount");
  sym(d->convSetMath, "cudnnSetConvolutionMathType");
  sym(d->convDestroy, "cudnnDestroyConvolutionDescriptor");
  sym(d->outputDim, "cudnnGetConvolution2dForwardOutputDim");
  sym(d->findAlgo, "cudnnFindConvolutionForwardAlgorithm");
  sym(d->heuristicAlgo, "cudnnGetConvolutionForwardAlgorithm_v7");
  sym(d->workspaceSize, "cudnnGetConvolutionForwardWorkspaceSize");
  sym(d->forward, "cudnnConvolutionForward");
  sym(d->addTensor, "cudnnAddTensor");
  sym(d->activationCreate, "cudnnCreateActivationDescriptor");
  sym(d->activationSet, "cudnnSetActivationDescriptor");
  sym(d->activationDestroy, "cudnnDestroyActivationDescriptor");
  sym(d->activationForward, "cudnnActivationForward");
  sym(d->forwardFused, "cudnnConvolutionBiasActivationForward");
  if (!sym.missing.empty()) return unsupported("cuda: " + name + " lacks " + sym.missing + "; install cuDNN 9");
  if (d->getVersion() / 10000 != CUDNN_MAJOR) {
    return unsupported("cuda: " + name + " is version " + std::to_string(d->getVersion()) + ", built against " + std::to_string(CUDNN_VERSION));
  }
  RETURN_IF_ERROR(dev->makeCurrent());
  RETURN_IF_ERROR(dnnCheck(*d, d->create(&d->handle), "creating a handle"));
  d->dev = dev;
  open = d;
  return d;
}

namespace {

class CudnnConv final : public Kernel {
 public:
  CudnnConv(std::shared_ptr<Cudnn> dnn, std::shared_ptr<CudaStream> stream, const ConvPlan& p, std::string what, cudnnMathType_t math)
      : d_(std::move(dnn)), s_(std::move(stream)), p_(p), what_(std::move(what)), math_(math) {}
  ~CudnnConv() override {
    for (cudnnTensorDescriptor_t t : {x_, y_, b_}) if (t) d_->tensorDestroy(t);
    if (w_) d_->filterDestroy(w_);
    if (act_) d_->activationDestroy(act_);
    if (conv_) d_->convDestroy(conv_);
  }

  Status prepare() {
    const Cudnn& d = *d_;
    RETURN_IF_ERROR(dnnCheck(d, d.tensorCreate(&x_), "creating a tensor descriptor"));
    RETURN_IF_ERROR(dnnCheck(d, d.tensorCreate(&y_), "creating a tensor descriptor"));
    RETURN_IF_ERROR(dnnCheck(d, d.filterCreate(&w_), "creating a filter descriptor"));
    RETURN_IF_ERROR(dnnCheck(d, d.convCreate(&conv_), "creating a convolution descriptor"));
    RETURN_IF_ERROR(dnnCheck(d, d.tensorSet(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p_.n, p_.c, p_.h, p_.w), "describing the input of " + what_));
    RETURN_IF_ERROR(dnnCheck(d, d.tensorSet(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p_.n, p_.k, p_.oh, p_.ow), "describing the output of " + what_));
    RETURN_IF_ERROR(dnnCheck(d, d.filterSet(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, p_.k, p_.c / p_.groups, p_.kh, p_.kw),
                             "describing the weights of " + what_));
    RETURN_IF_ERROR(dnnCheck(d, d.convSet(conv_, p_.pad_h, p_.pad_w, p_.stride_h, p_.stride_w, p_.dil_h, p_.dil_w,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "describing " + what_));
    RETURN_IF_ERROR(dnnCheck(d, d.convSetGroups(conv_, p_.groups), "setting the groups of " + what_));
    RETURN_IF_ERROR(dnnCheck(d, d.convSetMath(conv_, math_), "setting the math type of " + what_));
    int n = 0, c = 0, h = 0, w = 0;
    RETURN_IF_ERROR(dnnCheck(d, d.outputDim(conv_, x_, w_, &n, &c, &h, &w), "computing the output of " + what_));
    if (n != p_.n || c != p_.k || h != p_.oh || w != p_.ow) {
      return makeError(StatusCode::kInternal, "cuda: cuDNN computes output [", n, ", ", c, ", ", h, ", ", w, "] for ", what_);
    }
    if (p_.bias) {
      RETURN_IF_ERROR(dnnCheck(d, d.tensorCreate(&b_), "creating a tensor descriptor"));
      RETURN_IF_ERROR(dnnCheck(d, d.tensorSet(b_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, p_.k, 1, 1), "describing the bias of " + what_));
    }
    if (p_.relu) {
      RETURN_IF_ERROR(dnnCheck(d, d.activationCreate(&act_), "creating an activation descriptor"));
      RETURN_IF_ERROR(dnnCheck(d, d.activationSet(act_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), "describing the ReLU of " + what_));
    }
    return chooseAlgorithm();
  }

  size_t workspaceBytes() const override { return workspace_; }
  std::string detail() const override {
    return "cuDNN algo " + std::to_string(static_cast<int>(algo_)) + (math_ == CUDNN_FMA_MATH ? " fp32" : " tensor-op") +
           (!p_.relu ? "" : fused_ ? (p_.residual ? ", bias+residual+ReLU in the call" : ", bias+ReLU in the call")
                                   : ", bias/residual/ReLU as cuDNN calls after it");
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    Cudnn& d = *d_;
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.stream != s_->stream) {
      RETURN_IF_ERROR(dnnCheck(d, d.setStream(d.handle, reinterpret_cast<cudaStream_t>(s_->stream)), "setting the stream"));
      d.stream = s_->stream;
    }
    const float one = 1.0f, zero = 0.0f;
    void* ws = workspace_ ? workspace : nullptr;
    s_->beforeLaunch();
    cudnnStatus_t r = CUDNN_STATUS_NOT_SUPPORTED;
    if (p_.relu && fused_) {
      // z is the residual, or the output itself with alpha2 = 0 (cuDNN allows z == y).
      const void* z = p_.residual ? in[3].data : out[0].data;
      const float alpha2 = p_.residual ? 1.0f : 0.0f;
      r = d.forwardFused(d.handle, &one, x_, in[0].data, w_, in[1].data, conv_, algo_, ws, workspace_, &alpha2, y_, z, b_,
                         in[2].data, act_, y_, out[0].data);
      if (r == CUDNN_STATUS_NOT_SUPPORTED) fused_ = false;  // this algorithm has no fused form: the calls below from now on
    }
    if (!(p_.relu && fused_)) {
      r = d.forward(d.handle, &one, x_, in[0].data, w_, in[1].data, conv_, algo_, ws, workspace_, &zero, y_, out[0].data);
      if (r == CUDNN_STATUS_SUCCESS && p_.bias) r = d.addTensor(d.handle, &one, b_, in[2].data, &one, y_, out[0].data);
      if (r == CUDNN_STATUS_SUCCESS && p_.residual) r = d.addTensor(d.handle, &one, y_, in[3].data, &one, y_, out[0].data);
      if (r == CUDNN_STATUS_SUCCESS && p_.relu) r = d.activationForward(d.handle, act_, &one, y_, out[0].data, &zero, y_, out[0].data);
    }
    RETURN_IF_ERROR(s_->afterLaunch(CUDA_SUCCESS, "cuDNN " + what_));
    return dnnCheck(d, r, "convolution " + what_);
  }

 private:
  // cuDNN times its algorithms on scratch buffers; the fastest one of the asked math
  // type within the workspace limit wins. Heuristics if timing is refused.
  Status chooseAlgorithm() {
    Cudnn& d = *d_;
    std::lock_guard<std::mutex> lock(d.mutex);
    constexpr int kAsk = 8;
    cudnnConvolutionFwdAlgoPerf_t perf[kAsk];
    int found = 0;
    // Timed on the default stream: the handle may still name a finished session's stream.
    RETURN_IF_ERROR(dnnCheck(d, d.setStream(d.handle, nullptr), "setting the stream"));
    d.stream = nullptr;
    cudnnStatus_t r = d.findAlgo(d.handle, x_, w_, conv_, y_, kAsk, &found, perf);
    if (r != CUDNN_STATUS_SUCCESS) {
      found = 0;
      RETURN_IF_ERROR(dnnCheck(d, d.heuristicAlgo(d.handle, x_, w_, conv_, y_, kAsk, &found, perf), "choosing an algorithm for " + what_));
    }
    for (int i = 0; i < found; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kCudnnMaxWorkspaceBytes) continue;
      if (math_ == CUDNN_FMA_MATH && perf[i].mathType != CUDNN_FMA_MATH) continue;  // DEFAULT_MATH permits TF32
      algo_ = perf[i].algo;
      size_t bytes = 0;
      RETURN_IF_ERROR(dnnCheck(d, d.workspaceSize(d.handle, x_, w_, conv_, y_, algo_, &bytes), "sizing the workspace of " + what_));
      workspace_ = bytes;
      return Status::Ok();
    }
    return unsupported("cuda: cuDNN has no usable algorithm for " + what_);
  }

  std::shared_ptr<Cudnn> d_;
  std::shared_ptr<CudaStream> s_;
  ConvPlan p_;
  std::string what_;
  cudnnMathType_t math_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  bool fused_ = true;  // cleared when cuDNN refuses the fused call for the chosen algorithm
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> makeCudnnConv(std::shared_ptr<Cudnn> dnn, std::shared_ptr<CudaStream> stream, const ConvPlan& plan,
                                                const std::string& what, Precision precision) {
  // float32: FMA math only (no TF32), so results compare with the cpu backend.
  const cudnnMathType_t math = precision == Precision::kFloat32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  RETURN_IF_ERROR(dnn->dev->makeCurrent());
  auto k = std::make_unique<CudnnConv>(std::move(dnn), std::move(stream), plan, what, math);
  RETURN_IF_ERROR(k->prepare());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace gkrt::cuda

#pragma GCC diagnostic pop
