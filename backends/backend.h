// The backend contract: what every backend (reference, cpu, opencl, cuda) provides.
//
//   ASSIGN_OR_RETURN(auto backend, createBackend("cpu"));
//   if (backend->supports(graph, node)) {
//     ASSIGN_OR_RETURN(auto kernel, backend->compile(graph, node));   // at session compile
//     RETURN_IF_ERROR(kernel->launch(inputs, outputs, workspace));      // at run
//   }
//
// Required: name, fusionColumn, supports, compile. Memory and synchronisation have
// host defaults; device backends override them. A node is a basic op, a Fused node
// (subgraph of basic ops) or a pattern kernel; fusion decided which, never a backend.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ir/fusion_column.h"
#include "runtime/ir/graph.h"
#include "runtime/ir/tensor_view.h"

namespace gkrt {

class Communicator;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Views point at this backend's memory; shapes are the ones the kernel was compiled for.
  virtual Status launch(const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs,
                        void* workspace) = 0;
  virtual size_t workspaceBytes() const { return 0; }
  // An input whose bytes output 0 may take over when that input dies here (the kernel
  // reads every element before writing it at the same index); -1 = none.
  virtual int inPlaceInput() const { return -1; }
  // Inputs this kernel finds already in place when they lie inside output 0 at a byte
  // offset (a multiple of 64): the session may plan them there, and the kernel then
  // skips their copies (a batch-1 Concat's pieces).
  struct HostedInput {
    int input;
    size_t offset;
  };
  virtual std::vector<HostedInput> hostedInputs() const { return {}; }
  // What `gkrt bench --profile` shows beside the kernel's ops: the implementation and
  // the layout reorders it does per launch, e.g. "oneDNN jit:avx2, 1 reorder".
  virtual std::string detail() const { return ""; }
  // Layout reorders this kernel runs per launch (counted by `gkrt bench --profile`).
  virtual int reorders() const { return 0; }
  // Whether it runs a library's reference-grade code (oneDNN's "ref:any", "simple_nchw",
  // "gemm:ref"): `gkrt bench --profile` marks it [slow path], the session logs it once.
  virtual bool slowPath() const { return false; }
};

// The arithmetic precision a backend is asked to compute GEMMs and convolutions in.
enum class Precision { kFloat32, kBFloat16, kTFloat32, kFloat16 };
const char* precisionName(Precision p);  // "f32", "bf16", "tf32", "fp16"

struct BackendOptions {
  int num_threads = 0;  // 0 = all cores
  // Device backends: which device. opencl: "platform:device" indices or part of the
  // device's name; empty = the first GPU, else the first device.
  std::string device;
  // Where compiled device programs are kept between runs; unset = the per-user cache
  // ($GKRT_CACHE_DIR, $XDG_CACHE_HOME/gkrt or ~/.cache/gkrt); "" = no cache.
  std::optional<std::string> program_cache_dir;
  // cpu: keep activations channel-blocked between the kernels that take it
  // (backends/cpu/layout/blocked_layout.h); off for a device backend's cpu fallback, whose
  // graph has nodes other backends run. GKRT_CPU_LAYOUT=plain also turns it off.
  bool cpu_blocked_layout = true;
  // cpu, with cpu_blocked_layout: activations NHWC instead of channel-blocked across the
  // graph (blocked_layout.h): -1 where channelsLastSuits the graph (grouped convolutions
  // with groups of channels oneDNN cannot block), 0 never, 1 always.
  // GKRT_CPU_LAYOUT=nhwc / blocked set 1 / 0.
  int cpu_channels_last = -1;
  // cpu: 3x3 stride-1 convolutions on blocked activations as Winograd F(4x4, 3x3)
  // (backends/cpu/nn/winograd_kernel.h) where it pays off; GKRT_CPU_WINOGRAD=off too.
  bool cpu_winograd = true;
  // cpu, int8 GEMMs/convolutions on CPUs without VNNI: oneDNN's u8s8 kernels, which
  // saturate 16-bit pair sums as onnxruntime's do (GKRT_CPU_INT8=saturating), instead of
  // the exact float32 path (backends/cpu/quantization/onednn_int8.h).
  bool cpu_int8_saturating = false;
  // cpu: the exact float32 path for every int8 GEMM/convolution, VNNI or not
  // (GKRT_CPU_INT8=float; tests, and timing the path CPUs without VNNI take).
  bool cpu_int8_float = false;
  // cpu: float32 GEMM and convolution weights below 2^-126 read as zero (x86 cores take
  // ~100 cycles a multiply on a subnormal; runtime/ir/subnormal_weights.h says why that
  // is below float32's resolution). GKRT_CPU_SUBNORMALS=keep keeps them.
  bool cpu_zero_subnormal_weights = true;
  // Tensor-parallel runs: this rank's communicator (runtime/base/communicator.h), which
  // AllReduce kernels sum through; null = one device, AllReduce is the identity.
  std::shared_ptr<Communicator> communicator;
  // GEMMs (and convolutions where a backend says so) in a narrower type with float32
  // accumulation: kBFloat16 on cpu where the CPU computes bf16 natively (AVX512_BF16, AMX),
  // elsewhere float32 with a one-line notice (backends/cpu/isa/cpu_precision.h); on cuda the
  // cuBLASLt compute type (kTFloat32, kFloat16, kBFloat16; float32 tensors, TF32 off by
  // default). Other backends take only kFloat32.
  Precision precision = Precision::kFloat32;
};

// AllReduce and MatMulAllReduce on a backend without a device collective (opencl, cuda
// today). With one rank the sum over the ranks is the value itself, so they are a copy
// and a MatMul + bias, which such a backend runs. Across `ranks` > 1 the sum needs the
// ranks' communicator: returns why the node goes to the cpu backend (whose kernels sum
// through BackendOptions::communicator); "" where the backend may run it.
std::string deviceCollectiveRefusal(const ir::Node& node, int ranks);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* name() const = 0;
  virtual FusionColumn fusionColumn() const = 0;
  // Whether compile() can handle this node (op, dtypes, shapes); other nodes fall back
  // to the reference backend.
  virtual bool supports(const ir::Graph& g, const ir::Node& node) const = 0;
  // Why supports() said no, for the fallback's log line ("" = no reason given).
  virtual std::string unsupportedReason(const ir::Graph& g, const ir::Node& node) const { return ""; }
  // Prepares everything the node needs; called when a session is compiled, never in run.
  // `node` outlives the kernel.
  virtual StatusOr<std::unique_ptr<Kernel>> compile(const ir::Graph& g, const ir::Node& node) = 0;
  // Called once after compile() of every node of a session, before any launch: device
  // backends build the session's program here (one build for all kernels).
  virtual Status finishCompile() { return Status::Ok(); }
  // Whether this backend's kernel for `node` reads constant input k as it is, whole, at
  // every launch (no packed copy of its own): the session then places such constants in
  // huge-page memory (runtime/streamed_weights.h). Default: none.
  virtual bool streamsConstantInput(const ir::Node& node, size_t k) const { return false; }
  // Whether the session gives this backend float32 weights with their subnormal values
  // zeroed (runtime/ir/subnormal_weights.h). Default: as the model holds them.
  virtual bool zeroesSubnormalWeights() const { return false; }

  // Optional: memory and ordering. Host defaults below.
  virtual bool isHost() const { return true; }
  // Whether allocate()'s pointers may be offset to address inside an allocation (host
  // memory, CUDA device memory; not OpenCL's cl_mem handles). Such backends get one
  // planned arena per session; others one allocation per tensor.
  virtual bool addressableMemory() const { return isHost(); }
  virtual StatusOr<void*> allocate(size_t bytes);
  virtual void deallocate(void* ptr);
  virtual Status copyToDevice(void* dst, const void* src, size_t bytes);
  virtual Status copyToHost(void* dst, const void* src, size_t bytes);
  virtual Status synchronize() { return Status::Ok(); }
  // Optional: copies `bytes` at `src`, memory of `from` (another session plan's backend),
  // to `dst` of this one without a trip through the host. False when it cannot (the
  // caller copies through the host); the cuda backend can between plans on one device,
  // and two host backends' memory is the same memory (one memcpy, no staging copy).
  virtual StatusOr<bool> copyFromBackend(Backend& from, void* dst, const void* src, size_t bytes) {
    if (!isHost() || !from.isHost() || !addressableMemory() || !from.addressableMemory()) return false;
    std::memcpy(dst, src, bytes);
    return true;
  }
  // Optional: runs one inference's launches (`launch_all`, every step in order). A device
  // backend may record them once and replay the recording on later runs (cuda: a CUDA
  // graph after the first run); it may only when `replayable`: every step is its own
  // kernel (no host fallback, no control flow decided on the host).
  virtual Status runLaunches(const std::function<Status()>& launch_all, bool replayable) { return launch_all(); }

  // Optional: device timers for `gkrt bench --profile`. After startKernelTimer()
  // returns true the backend records its launches; stopKernelTimer() waits for them and
  // returns their device-side time in seconds, and stops recording. Backends without
  // device timers return false, and callers time with the host clock.
  virtual bool startKernelTimer() { return false; }
  virtual StatusOr<double> stopKernelTimer() { return makeError(StatusCode::kInternal, name(), " has no kernel timer"); }
};

// Backends compiled into this build, e.g. {"reference", "cpu"}.
std::vector<std::string> availableBackends();
// A backend by name; an unknown or unavailable name lists the available ones.
StatusOr<std::unique_ptr<Backend>> createBackend(const std::string& name, const BackendOptions& options = {});

}  // namespace gkrt
