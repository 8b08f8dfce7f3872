#include "backends/cuda/cublaslt_matmul.h"

#include <cublasLt.h>

#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_library.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cuda {

struct CublasLt {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtGetVersion) getVersion;
  decltype(&::cublasLtMatmulDescCreate) descCreate;
  decltype(&::cublasLtMatmulDescDestroy) descDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) descSet;
  decltype(&::cublasLtMatrixLayoutCreate) layoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) layoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layoutSet;
  decltype(&::cublasLtMatmulPreferenceCreate) prefCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) prefDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) prefSet;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&::cublasLtMatmul) matmul;
  cublasLtHandle_t handle = nullptr;
  std::shared_ptr<CudaDevice> dev;
  ~CublasLt() {
    if (handle) destroy(handle);
  }
};

namespace {

Status ltCheck(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return makeError(StatusCode::kDeviceError, "cuda: cuBLASLt ", what, " failed (cublasStatus ", static_cast<int>(s), ")");
}

bool isOp(const ir::Node& node, const char* name) { return std::strcmp(node.op->name, name) == 0; }
Status unsupported(const std::string& why) { return makeError(StatusCode::kUnsupported, why); }

// Stride of an operand over the output's batch: a full batch, or one matrix for all.
bool batchStride(const Shape& operand, const Shape& out_batch, int64_t matrix, int64_t* stride) {
  const Shape b(operand.begin(), operand.end() - 2);
  if (numElements(b) == 1) return (*stride = 0), true;
  Shape padded(out_batch.size() - std::min(out_batch.size(), b.size()), 1);
  padded.insert(padded.end(), b.begin(), b.end());
  if (padded != out_batch) return false;
  *stride = matrix;
  return true;
}

}  // namespace

StatusOr<GemmPlan> gemmPlanFor(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || node.subgraph) return unsupported("not a GEMM");
  bool gemm = false;
  // MatMulAllReduce: one rank here (CudaBackend declines it across ranks), so x @ w + bias.
  for (const char* op : {"MatMul", "BatchMatMul", "MatMulBiasAdd", "MatMulAdd", "MatMulRelu", "MatMulGelu", "Gemm", "MatMulAllReduce"}) {
    gemm |= isOp(node, op);
  }
  if (!gemm) return unsupported("not a GEMM");  // (so other ops' reasons are their own, not cuBLASLt's dtype rule)
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return unsupported("cuBLASLt runs float32 GEMMs only");
  if (node.outputs.size() != 1 || g.tensors[node.outputs[0]].dtype != DType::kFloat32) return unsupported("cuBLASLt runs float32 GEMMs only");
  GemmPlan p;
  if (isOp(node, "MatMul") || isOp(node, "BatchMatMul") || isOp(node, "MatMulBiasAdd") || isOp(node, "MatMulAdd") ||
      isOp(node, "MatMulRelu") || isOp(node, "MatMulAllReduce")) {
    const auto& a = node.attrs.get<MatMulAttrs>();
    p.transpose_a = a.transpose_a, p.transpose_b = a.transpose_b;
  } else if (isOp(node, "MatMulGelu")) {
    p.activation = node.attrs.get<GeluAttrs>().approximate == GeluApprox::kTanh ? GemmPlan::Activation::kGeluTanh
                                                                                : GemmPlan::Activation::kGeluErf;
  } else if (isOp(node, "Gemm")) {
    const auto& a = node.attrs.get<GemmAttrs>();
    p.transpose_a = a.transpose_a, p.transpose_b = a.transpose_b, p.alpha = a.alpha;
    if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
      const Shape& c = g.tensors[node.inputs[2]].shape;
      const Shape& y = g.tensors[node.outputs[0]].shape;
      if (c == y) {
        p.c_input = 2, p.beta = a.beta;
      } else if (a.beta == 1.0f && numElements(c) == y.back() && (c.size() == 1 || (c.size() == 2 && c[0] == 1))) {
        p.bias_input = 2;
      } else {
        return unsupported("Gemm's C " + shapeToString(c) + " is neither the output's shape nor a row bias with beta 1");
      }
    }
  } else {
    return unsupported("not a GEMM");
  }
  if (isOp(node, "MatMulRelu")) p.activation = GemmPlan::Activation::kRelu;
  if (isOp(node, "MatMulBiasAdd") || isOp(node, "MatMulRelu") || isOp(node, "MatMulGelu") || isOp(node, "MatMulAllReduce")) {
    if (node.inputs.size() > 2 && node.inputs[2] >= 0) p.bias_input = 2;
  }
  if (isOp(node, "MatMulAdd")) {
    p.c_input = 2, p.beta = 1.0f;
    if (node.inputs.size() > 3 && node.inputs[3] >= 0) p.bias_input = 3;
  }
  if (node.inputs.size() < 2 || node.inputs[0] < 0 || node.inputs[1] < 0) return unsupported("a GEMM needs two operands");
  const Shape& sa = g.tensors[node.inputs[0]].shape;
  const Shape& sb = g.tensors[node.inputs[1]].shape;
  const Shape& sy = g.tensors[node.outputs[0]].shape;
  if (sa.size() < 2 || sb.size() < 2 || sy.size() < 2) return unsupported("cuBLASLt needs operands of rank >= 2");
  p.m = sy[sy.size() - 2], p.n = sy.back();
  p.k = p.transpose_a ? sa[sa.size() - 2] : sa.back();
  const Shape out_batch(sy.begin(), sy.end() - 2);
  p.batch = numElements(out_batch);
  if (!batchStride(sa, out_batch, p.m * p.k, &p.batch_stride_a) || !batchStride(sb, out_batch, p.k * p.n, &p.batch_stride_b)) {
    return unsupported("operand batch dims " + shapeToString(sa) + " x " + shapeToString(sb) + " broadcast partly (cuBLASLt batches are strided)");
  }
  if (p.c_input >= 0 && g.tensors[node.inputs[p.c_input]].shape != sy) return unsupported("the added matrix must have the output's shape");
  if (p.bias_input >= 0 && numElements(g.tensors[node.inputs[p.bias_input]].shape) != p.n) return unsupported("the bias must have N elements");
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) return unsupported("an empty GEMM");
  return p;
}

StatusOr<std::shared_ptr<CublasLt>> openCublasLt(const std::shared_ptr<CudaDevice>& dev) {
  static std::mutex mutex;
  static std::weak_ptr<CublasLt> open;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto alive = open.lock(); alive && alive->dev == dev) return alive;
  const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  ASSIGN_OR_RETURN(void* lib, openLibrary({name.c_str(), "libcublasLt.so"},
                                          "install cuBLAS (CUDA toolkit) or add its lib64 to LD_LIBRARY_PATH"));
  auto lt = std::make_shared<CublasLt>();
  Symbols sym{lib, ""};
  sym(lt->create, "cublasLtCreate");
  sym(lt->destroy, "cublasLtDestroy");
  sym(lt->getVersion, "cublasLtGetVersion");
  sym(lt->descCreate, "cublasLtMatmulDescCreate");
  sym(lt->descDestroy, "cublasLtMatmulDescDestroy");
  sym(lt->descSet, "cublasLtMatmulDescSetAttribute");
  sym(lt->layoutCreate, "cublasLtMatrixLayoutCreate");
  sym(lt->layoutDestroy, "cublasLtMatrixLayoutDestroy");
  sym(lt->layoutSet, "cublasLtMatrixLayoutSetAttribute");
  sym(lt->prefCreate, "cublasLtMatmulPreferenceCreate");
  sym(lt->prefDestroy, "cublasLtMatmulPreferenceDestroy");
  sym(lt->prefSet, "cublasLtMatmulPreferenceSetAttribute");
  sym(lt->heuristic, "cublasLtMatmulAlgoGetHeuristic");
  sym(lt->matmul, "cublasLtMatmul");
  if (!sym.missing.empty()) {
    return makeError(StatusCode::kUnsupported, "cuda: ", name, " lacks ", sym.missing, "; update the CUDA toolkit");
  }
  RETURN_IF_ERROR(dev->makeCurrent());
  RETURN_IF_ERROR(ltCheck(lt->create(&lt->handle), "creating a handle"));
  lt->dev = dev;
  open = lt;
  return lt;
}

namespace {

// Row-major Y = op(A) op(B) is column-major Y^T = op(B)^T op(A)^T: cuBLASLt's "A" is
// gkrt's B and its "B" is gkrt's A, with m = N and n = M.
class CublasLtMatmul final : public Kernel {
 public:
  CublasLtMatmul(std::shared_ptr<CublasLt> lt, std::shared_ptr<CudaStream> stream, GemmPlan p, std::string what,
                 cublasComputeType_t compute)
      : lt_(std::move(lt)), stream_(std::move(stream)), p_(p), what_(std::move(what)), compute_(compute) {}
  ~CublasLtMatmul() override {
    for (cublasLtMatrixLayout_t l : {la_, lb_, lc_}) if (l) lt_->layoutDestroy(l);
    if (desc_) lt_->descDestroy(desc_);
  }

  Status prepare() {
    RETURN_IF_ERROR(ltCheck(lt_->descCreate(&desc_, compute_, CUDA_R_32F), "creating a matmul descriptor"));
    const cublasOperation_t op_a = p_.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = p_.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    RETURN_IF_ERROR(ltCheck(lt_->descSet(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "setting TRANSA"));
    RETURN_IF_ERROR(ltCheck(lt_->descSet(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "setting TRANSB"));
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const bool bias = p_.bias_input >= 0;
    if (p_.activation == GemmPlan::Activation::kRelu) epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    else if (p_.activation == GemmPlan::Activation::kGeluTanh) epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    // (kGeluErf: the bias alone here; the backend runs the GeLU after)
    else if (bias) epilogue = CUBLASLT_EPILOGUE_BIAS;
    RETURN_IF_ERROR(ltCheck(lt_->descSet(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "setting the epilogue"));
    const uint64_t M = uint64_t(p_.m), N = uint64_t(p_.n), K = uint64_t(p_.k);
    // gkrt B (K x N row-major, or N x K transposed) is column-major N x K (or K x N).
    RETURN_IF_ERROR(layout(&la_, p_.transpose_b ? K : N, p_.transpose_b ? N : K, p_.batch_stride_b));
    RETURN_IF_ERROR(layout(&lb_, p_.transpose_a ? M : K, p_.transpose_a ? K : M, p_.batch_stride_a));
    RETURN_IF_ERROR(layout(&lc_, N, M, p_.m * p_.n));
    cublasLtMatmulPreference_t pref = nullptr;
    RETURN_IF_ERROR(ltCheck(lt_->prefCreate(&pref), "creating a preference"));
    const uint64_t ws = kCublasLtWorkspaceBytes;
    const uint32_t align = 16;  // arena tensors are 64-byte aligned; batch strides may be less
    Status s = ltCheck(lt_->prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "setting the workspace");
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      if (s.ok()) s = ltCheck(lt_->prefSet(pref, attr, &align, sizeof align), "setting the alignment");
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (s.ok()) s = ltCheck(lt_->heuristic(lt_->handle, desc_, la_, lb_, lc_, lc_, pref, 1, &result, &found), "choosing an algorithm");
    lt_->prefDestroy(pref);
    RETURN_IF_ERROR(s);
    if (found == 0) return makeError(StatusCode::kUnsupported, "cuda: cuBLASLt has no algorithm for ", what_);
    algo_ = result.algo;
    return Status::Ok();
  }

  size_t workspaceBytes() const override { return kCublasLtWorkspaceBytes; }
  std::string detail() const override {
    if (compute_ == CUBLAS_COMPUTE_32F_FAST_TF32) return "cuBLASLt tf32";
    if (compute_ == CUBLAS_COMPUTE_32F_FAST_16F) return "cuBLASLt fp16";
    if (compute_ == CUBLAS_COMPUTE_32F_FAST_16BF) return "cuBLASLt bf16";
    return "cuBLASLt fp32";
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    if (p_.bias_input >= 0) {
      const void* bias = in[size_t(p_.bias_input)].data;
      RETURN_IF_ERROR(ltCheck(lt_->descSet(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "setting the bias"));
    }
    const void* c = p_.c_input >= 0 ? in[size_t(p_.c_input)].data : out[0].data;
    const float beta = p_.c_input >= 0 ? p_.beta : 0.0f;
    stream_->beforeLaunch();
    const cublasStatus_t s = lt_->matmul(lt_->handle, desc_, &p_.alpha, in[1].data, la_, in[0].data, lb_, &beta, c, lc_,
                                         out[0].data, lc_, &algo_, workspace, workspace ? kCublasLtWorkspaceBytes : 0, stream_->stream);
    RETURN_IF_ERROR(stream_->afterLaunch(CUDA_SUCCESS, "cuBLASLt " + what_));
    return ltCheck(s, "matmul of " + what_);
  }

 private:
  Status layout(cublasLtMatrixLayout_t* l, uint64_t rows, uint64_t cols, int64_t batch_stride) {
    RETURN_IF_ERROR(ltCheck(lt_->layoutCreate(l, CUDA_R_32F, rows, cols, int64_t(rows)), "creating a matrix layout"));
    if (p_.batch == 1) return Status::Ok();
    const int32_t count = static_cast<int32_t>(p_.batch);
    RETURN_IF_ERROR(ltCheck(lt_->layoutSet(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "setting the batch"));
    return ltCheck(lt_->layoutSet(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof batch_stride), "setting the batch stride");
  }

  std::shared_ptr<CublasLt> lt_;
  std::shared_ptr<CudaStream> stream_;
  GemmPlan p_;
  std::string what_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  cublasComputeType_t compute_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> makeCublasLtMatmul(std::shared_ptr<CublasLt> lt, std::shared_ptr<CudaStream> stream, GemmPlan plan,
                                                     const std::string& what, Precision precision) {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // TF32 off: float32 results comparable with the cpu backend
  if (precision == Precision::kTFloat32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (precision == Precision::kFloat16) compute = CUBLAS_COMPUTE_32F_FAST_16F;
  if (precision == Precision::kBFloat16) compute = CUBLAS_COMPUTE_32F_FAST_16BF;
  RETURN_IF_ERROR(lt->dev->makeCurrent());
  auto k = std::make_unique<CublasLtMatmul>(std::move(lt), stream, plan, what, compute);
  RETURN_IF_ERROR(k->prepare());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace gkrt::cuda
