#include "backends/cuda/conv_gemm.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "runtime/base/log.h"

namespace gkrt::cuda {
namespace {

std::string num(int64_t v) { return std::to_string(v) + "LL"; }
int64_t rows(const ConvPlan& p) { return int64_t(p.c) * p.kh * p.kw; }      // C*R*S
int64_t pixels(const ConvPlan& p) { return int64_t(p.oh) * p.ow; }          // P
size_t alignUp(size_t b) { return (b + 255) & ~size_t(255); }
size_t columnBytes(const ConvPlan& p) {
  return convGemmIsDirect(p) ? 0 : alignUp(size_t(p.n) * size_t(rows(p)) * size_t(pixels(p)) * sizeof(float));
}

#ifdef GKRT_HAVE_CUDNN
// The GEMM form: [im2col into the workspace], cuBLASLt, [bias/residual/ReLU in place].
class ConvAsGemm final : public Kernel {
 public:
  ConvAsGemm(const ConvPlan& p, std::unique_ptr<Kernel> im2col, std::unique_ptr<Kernel> gemm, std::unique_ptr<Kernel> epilogue,
             std::string why)
      : p_(p), im2col_(std::move(im2col)), gemm_(std::move(gemm)), epilogue_(std::move(epilogue)), why_(std::move(why)) {
    // The views launch() hands on, made here so that a launch only sets their pointers.
    const Shape cols{p_.n, rows(p_), pixels(p_)};
    im2col_in_.assign(1, TensorView{DType::kFloat32, {p_.n, p_.c, p_.h, p_.w}, nullptr});
    cols_out_.assign(1, MutableTensorView{DType::kFloat32, cols, nullptr});
    gemm_in_.assign({TensorView{DType::kFloat32, {p_.k, rows(p_)}, nullptr}, TensorView{DType::kFloat32, cols, nullptr}});
    if (p_.bias) epilogue_in_.push_back(TensorView{DType::kFloat32, {p_.k}, nullptr});
    if (p_.residual) epilogue_in_.push_back(TensorView{DType::kFloat32, {p_.n, p_.k, p_.oh, p_.ow}, nullptr});
  }

  size_t workspaceBytes() const override { return columnBytes(p_) + gemm_->workspaceBytes(); }
  std::string detail() const override {
    return std::string(im2col_ ? "im2col + " : "") + gemm_->detail() + " GEMM" + (epilogue_ ? " + epilogue kernel" : "") +
           (why_.empty() ? "" : " (" + why_ + ")");
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* workspace) override {
    char* ws = static_cast<char*>(workspace);
    gemm_in_[0].data = in[1].data;
    gemm_in_[1].data = in[0].data;
    if (im2col_) {
      im2col_in_[0].data = in[0].data;
      cols_out_[0].data = ws;
      RETURN_IF_ERROR(im2col_->launch(im2col_in_, cols_out_, nullptr));
      gemm_in_[1].data = ws;
    }
    RETURN_IF_ERROR(gemm_->launch(gemm_in_, out, ws ? ws + columnBytes(p_) : nullptr));
    if (!epilogue_) return Status::Ok();
    size_t k = 0;
    if (p_.bias) epilogue_in_[k++].data = in[2].data;
    if (p_.residual) epilogue_in_[k].data = in[3].data;
    return epilogue_->launch(epilogue_in_, out, nullptr);
  }

 private:
  ConvPlan p_;
  std::unique_ptr<Kernel> im2col_, gemm_, epilogue_;
  std::string why_;
  std::vector<TensorView> im2col_in_, gemm_in_, epilogue_in_;
  std::vector<MutableTensorView> cols_out_;
};

// Device buffers for timing a kernel at compile, freed on scope exit.
struct Scratch {
  const Driver& cu;
  std::vector<CUdeviceptr> owned;
  explicit Scratch(const Driver& d) : cu(d) {}
  ~Scratch() { for (CUdeviceptr p : owned) cu.memFree(p); }
  StatusOr<void*> alloc(size_t bytes) {
    CUdeviceptr p = 0;
    RETURN_IF_ERROR(check(cu, cu.memAlloc(&p, std::max<size_t>(bytes, 256)), "allocating scratch memory to time a convolution"));
    owned.push_back(p);
    return reinterpret_cast<void*>(p);
  }
};

// Milliseconds a launch of `k` takes on `s`: 3 warm-up launches, then the mean of 10.
StatusOr<float> timeLaunches(CudaStream& s, Kernel& k, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                             void* ws) {
  const Driver& cu = *s.dev->cu;
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(k.launch(in, out, ws));
  CUevent a = nullptr, b = nullptr;
  RETURN_IF_ERROR(check(cu, cu.eventCreate(&a, CU_EVENT_DEFAULT), "creating an event"));
  Status st = check(cu, cu.eventCreate(&b, CU_EVENT_DEFAULT), "creating an event");
  constexpr int kRuns = 10;
  float ms = 0.0f;
  if (st.ok()) st = check(cu, cu.eventRecord(a, s.stream), "recording an event");
  for (int i = 0; i < kRuns && st.ok(); ++i) st = k.launch(in, out, ws);
  if (st.ok()) st = check(cu, cu.eventRecord(b, s.stream), "recording an event");
  if (st.ok()) st = check(cu, cu.eventSynchronize(b), "timing a convolution");
  if (st.ok()) st = check(cu, cu.eventElapsedTime(&ms, a, b), "reading an event");
  cu.eventDestroy(a);
  if (b) cu.eventDestroy(b);
  RETURN_IF_ERROR(st);
  return ms / kRuns;
}

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}
#endif  // GKRT_HAVE_CUDNN

}  // namespace

StatusOr<ConvMode> convModeOf(const char* v) {
  if (!v || !*v || std::strcmp(v, "auto") == 0) return ConvMode::kAuto;
  if (std::strcmp(v, "cudnn") == 0) return ConvMode::kCudnn;
  if (std::strcmp(v, "gemm") == 0) return ConvMode::kGemm;
  return makeError(StatusCode::kInvalidArgument, "GKRT_CUDA_CONV=", v, ": expected auto, cudnn or gemm");
}

bool convGemmApplies(const ConvPlan& p) { return p.groups == 1 && p.n > 0 && p.k > 0 && pixels(p) > 0; }

bool convGemmIsDirect(const ConvPlan& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0 && p.oh == p.h && p.ow == p.w;
}

codegen::RenderedKernel renderIm2col(const ConvPlan& p, const std::string& name) {
  codegen::RenderedKernel k;
  k.name = name;
  k.items = int64_t(p.n) * rows(p) * pixels(p);
  const std::string P = num(pixels(p)), CRS = num(rows(p)), OW = num(p.ow), S = num(p.kw), RS = num(int64_t(p.kh) * p.kw);
  const std::string H = num(p.h), W = num(p.w);
  // cols[n][c*R*S + r*S + s][oh*OW + ow] = x[n][c][oh*sh - ph + r*dh][ow*sw - pw + s*dw], 0 outside
  k.source = "extern \"C\" __global__ void " + name + "(float* cols, const float* x) {\n"
             "  const long long n = " + num(k.items) + ";\n"
             "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
             "    const long long q = i % " + P + ", row = (i / " + P + ") % " + CRS + ", img = i / (" + P + " * " + CRS + ");\n"
             "    const long long c = row / " + RS + ", r = (row / " + S + ") % " + num(p.kh) + ", s = row % " + S + ";\n"
             "    const long long h = (q / " + OW + ") * " + num(p.stride_h) + " - " + num(p.pad_h) + " + r * " + num(p.dil_h) + ";\n"
             "    const long long w = (q % " + OW + ") * " + num(p.stride_w) + " - " + num(p.pad_w) + " + s * " + num(p.dil_w) + ";\n"
             "    cols[i] = (h >= 0 && h < " + H + " && w >= 0 && w < " + W + ") ? x[((img * " + num(p.c) + " + c) * " + H +
             " + h) * " + W + " + w] : 0.0f;\n"
             "  }\n"
             "}\n";
  return k;
}

StatusOr<codegen::RenderedKernel> renderConvEpilogue(const ConvPlan& p, const std::string& name) {
  if (!p.bias && !p.residual && !p.relu) return makeError(StatusCode::kUnsupported, "nothing to apply after the GEMM");
  codegen::RenderedKernel k;
  k.name = name;
  k.items = int64_t(p.n) * p.k * pixels(p);
  std::string args = "float* y";
  if (p.bias) args += ", const float* bias";
  if (p.residual) args += ", const float* residual";
  // ReLU as `v < 0 ? 0 : v`: a NaN stays NaN, as the reference's Maximum(x, 0) keeps it.
  k.source = "extern \"C\" __global__ void " + name + "(" + args + ") {\n"
             "  const long long n = " + num(k.items) + ";\n"
             "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
             "    float v = y[i];\n" +
             (p.bias ? "    v += bias[(i / " + num(pixels(p)) + ") % " + num(p.k) + "];\n" : std::string()) +
             (p.residual ? "    v += residual[i];\n" : "") +
             (p.relu ? "    v = v < 0.0f ? 0.0f : v;\n" : "") +
             "    y[i] = v;\n"
             "  }\n"
             "}\n";
  return k;
}

#ifdef GKRT_HAVE_CUDNN
StatusOr<std::unique_ptr<Kernel>> makeConvKernel(std::shared_ptr<Cudnn> dnn, std::shared_ptr<CublasLt> lt,
                                                 std::shared_ptr<CudaStream> stream, const ConvPlan& plan, const std::string& what,
                                                 Precision precision, ConvMode mode, const GeneratedKernelMaker& generated) {
  const bool gemm_ok = lt && convGemmApplies(plan);
  if (mode == ConvMode::kCudnn || !gemm_ok) return makeCudnnConv(dnn, stream, plan, what, precision);

  GemmPlan g;  // gkrt's row-major terms: weights [K, CRS] x columns [CRS, P] per image
  g.m = plan.k;
  g.n = pixels(plan);
  g.k = rows(plan);
  g.batch = plan.n;
  g.batch_stride_a = 0;
  g.batch_stride_b = rows(plan) * pixels(plan);
  auto gemm = makeCublasLtMatmul(lt, stream, g, what + " (as a GEMM)", precision);
  if (!gemm.ok()) {
    if (mode == ConvMode::kGemm) GKRT_LOG_WARNING("cuda: ", what, " cannot run as a GEMM (", gemm.status().message(), "); cuDNN runs it");
    return makeCudnnConv(dnn, stream, plan, what, precision);
  }
  std::string why = "GKRT_CUDA_CONV=gemm";
  if (mode == ConvMode::kAuto) {
    // cuDNN's pick (its fused call where the plan has one) against the GEMM alone plus the
    // im2col and epilogue kernels' traffic at 1.5 TB/s and 3 us each (they are not built
    // before the session's module).
    auto made = makeCudnnConv(dnn, stream, plan, what, precision);
    if (!made.ok()) return made;
    std::unique_ptr<Kernel> cudnn = std::move(*made);
    const Driver& cu = *stream->dev->cu;
    Scratch s(cu);
    const size_t x_bytes = size_t(plan.n) * plan.c * plan.h * plan.w * sizeof(float);
    const size_t w_bytes = size_t(plan.k) * rows(plan) * sizeof(float);
    const size_t y_bytes = size_t(plan.n) * plan.k * pixels(plan) * sizeof(float);
    const size_t cols_bytes = size_t(plan.n) * rows(plan) * pixels(plan) * sizeof(float);
    ASSIGN_OR_RETURN(void* x, s.alloc(std::max(x_bytes, cols_bytes)));
    ASSIGN_OR_RETURN(void* w, s.alloc(w_bytes));
    ASSIGN_OR_RETURN(void* b, s.alloc(size_t(plan.k) * sizeof(float)));
    ASSIGN_OR_RETURN(void* r, s.alloc(y_bytes));
    ASSIGN_OR_RETURN(void* y, s.alloc(y_bytes));
    ASSIGN_OR_RETURN(void* ws, s.alloc(std::max(cudnn->workspaceBytes(), (*gemm)->workspaceBytes())));
    const MutableTensorView out{DType::kFloat32, {plan.n, plan.k, plan.oh, plan.ow}, y};
    std::vector<TensorView> cin{{DType::kFloat32, {plan.n, plan.c, plan.h, plan.w}, x}, {DType::kFloat32, {plan.k, rows(plan)}, w}};
    if (plan.bias) cin.push_back({DType::kFloat32, {plan.k}, b});
    if (plan.residual) cin.push_back({DType::kFloat32, out.shape, r});
    ASSIGN_OR_RETURN(const float cudnn_ms, timeLaunches(*stream, *cudnn, cin, {out}, ws));
    const std::vector<TensorView> gin{cin[1], {DType::kFloat32, {plan.n, rows(plan), pixels(plan)}, x}};
    ASSIGN_OR_RETURN(const float gemm_ms, timeLaunches(*stream, **gemm, gin, {out}, ws));
    double extra = 0.0;
    if (!convGemmIsDirect(plan)) extra += 3e-3 + double(cols_bytes + x_bytes) / 1.5e9;
    if (plan.bias || plan.residual || plan.relu) extra += 3e-3 + double(y_bytes) * (plan.residual ? 3 : 2) / 1.5e9;
    why = "cuDNN " + fixed(cudnn_ms, 4) + " ms, GEMM " + fixed(gemm_ms, 4) + " + " + fixed(extra, 4) + " ms";
    logf(LogLevel::kDebug, "cuda: ", what, ": ", why);
    if (gemm_ms + extra >= 0.9 * cudnn_ms) return cudnn;
  }
  std::unique_ptr<Kernel> im2col, epilogue;
  if (!convGemmIsDirect(plan)) {
    ASSIGN_OR_RETURN(im2col, generated([&plan](const std::string& name) -> StatusOr<codegen::RenderedKernel> { return renderIm2col(plan, name); },
                                       what + " (its im2col)"));
  }
  if (plan.bias || plan.residual || plan.relu) {
    ASSIGN_OR_RETURN(epilogue, generated([&plan](const std::string& name) { return renderConvEpilogue(plan, name); },
                                         what + " (bias/residual/ReLU after its GEMM)"));
  }
  return std::unique_ptr<Kernel>(new ConvAsGemm(plan, std::move(im2col), std::move(*gemm), std::move(epilogue), why));
}
#endif

}  // namespace gkrt::cuda
