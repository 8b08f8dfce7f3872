#include "backends/cpu/cpu_backend.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/math/gemv_kernel.h"
#include "backends/cpu/quantization/block_quant_matmul_kernel.h"
#include "backends/cpu/nn/blocked_pool.h"
#include "backends/cpu/tensor/reshape_cluster_kernel.h"
#include "backends/cpu/tensor/broadcast_kernel.h"
#include "backends/cpu/tensor/pad_kernel.h"
#include "backends/cpu/tensor/slice_kernel.h"
#include "backends/cpu/tensor/channel_gather_kernel.h"
#include "backends/cpu/layout/int8_layout.h"
#include "backends/cpu/nn/conv_epilogue_kernel.h"
#include "backends/cpu/nn/conv_kernel.h"
#include "backends/cpu/isa/cpu_precision.h"
#include "backends/cpu/fused/float_class_kernel.h"
#include "backends/cpu/fused/fused_elementwise.h"
#include "backends/cpu/fused/fused_reduce.h"
#include "backends/cpu/math/matmul_kernel.h"
#include "backends/cpu/nn/norm_kernels.h"
#include "backends/cpu/onednn/onednn_conv.h"
#include "backends/cpu/quantization/int8_gemm.h"
#include "backends/cpu/quantization/onednn_int8.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "runtime/ir/channels_last_ends.h"
#include "backends/cpu/onednn/onednn_pool_concat.h"
#include "backends/cpu/rnn/onednn_recurrent.h"
#include "backends/cpu/nn/pattern_kernels.h"
#include "backends/cpu/quantization/quant_kernels.h"
#include "backends/cpu/rnn/quantized_lstm_kernel.h"
#include "backends/cpu/rnn/recurrent_kernel.h"
#include "backends/cpu/tensor/resize_kernel.h"
#include "backends/cpu/tensor/split_kernel.h"
#include "backends/cpu/tensor/transpose_kernel.h"
#include "backends/cpu/nn/winograd_kernel.h"
#include "backends/cpu/nn/window_conv_kernel.h"
#include "backends/reference/reference_backend.h"
#include "runtime/ir/op_def.h"
#include "runtime/base/log.h"

namespace gkrt {

CpuBackend::CpuBackend(const BackendOptions& options)
    : options_(options), pool_(std::make_unique<cpu::ThreadPool>(options.num_threads)) {
  // The environment overrides of the cpu backend's options (comparisons, debugging).
  if (const char* env = std::getenv("GKRT_CPU_INT8")) {
    const std::string v = env;
    options_.cpu_int8_saturating |= v == "saturating";
    options_.cpu_int8_float |= v == "float";
    static bool warned = false;  // once per process, not per backend
    if (v != "saturating" && v != "float" && !std::exchange(warned, true)) {
      GKRT_LOG_WARNING("GKRT_CPU_INT8='", v, "' is not a choice; use 'float' or 'saturating' (unset: the default int8 path)");
    }
  }
  if (const char* env = std::getenv("GKRT_CPU_LAYOUT")) {
    const std::string v = env;
    if (v == "plain") options_.cpu_blocked_layout = false;
    if (v == "nhwc" || v == "blocked") options_.cpu_channels_last = v == "nhwc" ? 1 : 0;
    static bool warned = false;
    if (v != "plain" && v != "nhwc" && v != "blocked" && !std::exchange(warned, true)) {
      GKRT_LOG_WARNING("GKRT_CPU_LAYOUT='", v, "' is not a choice; use 'plain', 'blocked' or 'nhwc' (unset: chosen per graph)");
    }
  }
  if (const char* env = std::getenv("GKRT_CPU_WINOGRAD")) {  // off: direct only; onednn: not gkrt's own; own: any core
    const std::string v = env;
    if (v == "off") options_.cpu_winograd = false;
    if (v == "onednn") own_winograd_ = false;
    if (v == "own") own_winograd_any_core_ = true;
    static bool warned = false;
    if (v != "off" && v != "onednn" && v != "own" && !std::exchange(warned, true)) {
      GKRT_LOG_WARNING("GKRT_CPU_WINOGRAD='", v, "' is not a choice; use 'off', 'onednn' or 'own' (unset: gkrt's own F(4x4,3x3) where it takes the convolution and is the faster on this core, else oneDNN's)");
    }
  }
  if (const char* env = std::getenv("GKRT_CPU_GEMV")) {  // off: one-row matmuls on oneDNN
    const std::string v = env;
    own_gemv_ = v != "off";
    static bool warned = false;
    if (v != "off" && v != "on" && !std::exchange(warned, true)) {
      GKRT_LOG_WARNING("GKRT_CPU_GEMV='", v, "' is not a choice; use 'off' or 'on' (unset: gkrt's GEMV for one to four rows)");
    }
  }
  if (const char* env = std::getenv("GKRT_CPU_SUBNORMALS")) {  // keep: weights as the model holds them
    const std::string v = env;
    if (v == "keep") options_.cpu_zero_subnormal_weights = false;
    static bool warned = false;
    if (v != "keep" && v != "zero" && !std::exchange(warned, true)) {
      GKRT_LOG_WARNING("GKRT_CPU_SUBNORMALS='", v, "' is not a choice; use 'keep' or 'zero' (unset: float32 GEMM and convolution weights below 2^-126 read as zero)");
    }
  }
  bf16_ = cpu::cpuUsesBf16(options_);
  int8_path_ = options_.cpu_int8_float       ? cpu::Int8Path::kFloat
               : options_.cpu_int8_saturating ? cpu::Int8Path::kSaturating
                                              : cpu::Int8Path::kAuto;
  const cpu::CpuTier& tier = cpu::cpuTier();
  own_int8_matmul_ = int8_path_ == cpu::Int8Path::kAuto && tier.has(cpu::CpuIsa::kAvx2) &&
                     !tier.has(cpu::CpuIsa::kAvx512) && !tier.avx_vnni;
}

CpuBackend::~CpuBackend() = default;

// A convolution cluster with channels-last ends (conv_transpose_fold) only where oneDNN
// has a fast convolution for it: elsewhere fusion keeps the Transposes outside.
bool CpuBackend::supports(const ir::Graph& g, const ir::Node& node) const {
  ir::ChannelsLastEnds ends;
  if (ir::channelsLastEnds(node, &ends)) return cpu::oneDnnConvChannelsLastIsFast(g, node);
  return node.op && node.op->reference;
}

// How the kernel compile() picks for `node` treats activation layouts.
cpu::LayoutUse CpuBackend::layoutUse(const ir::Graph& g, const ir::Node& node) {
  const bool conv = cpu::canRunOneDnnConv(g, node), pool = !conv && cpu::canRunOneDnnPoolOrConcat(g, node);
  if (conv || pool) {
    auto it = is_fast_.find(&node);
    if (it == is_fast_.end()) {
      const bool fast = conv ? cpu::oneDnnConvIsFast(g, node, blockInUse(), channels_last_)
                             : cpu::oneDnnPoolIsFast(g, node, blockInUse(), channels_last_);
      it = is_fast_.emplace(&node, fast).first;
    }
    if (it->second) return cpu::LayoutUse::kAdapts;
  }
  if (cpu::canRunChannelGather(g, node)) return cpu::LayoutUse::kSame;
  // A channels-last plan: elementwise clusters take NHWC, gkrt's other blocked kernels not.
  if (channels_last_) {
    const bool ew = cpu::canRunElementwise(g, node) && cpu::elementwiseTakesBlocked(g, node);
    return ew ? cpu::LayoutUse::kAgnostic : cpu::LayoutUse::kPlain;
  }
  // Pooling oneDNN has no fast kernel for: gkrt's own, input and output in one layout.
  if (cpu::canRunBlockedPool(g, node)) return cpu::LayoutUse::kSame;
  // Per-tensor Q/DQ on 4-D tensors: their loop converts between any of the layouts.
  if (cpu::quantTakesLayouts(g, node)) return cpu::LayoutUse::kAdapts;
  if (cpu::canRunElementwise(g, node) && cpu::elementwiseTakesBlocked(g, node)) return cpu::LayoutUse::kAgnostic;
  if (cpu::canRunResize(g, node) || cpu::splitTakesBlocked(g, node, blockInUse())) return cpu::LayoutUse::kSame;
  return cpu::LayoutUse::kPlain;
}

int CpuBackend::blockInUse() const { return options_.cpu_blocked_layout ? cpu::preferredBlock() : 0; }

// The layout plan of the graph being compiled, made at its first node; finishCompile()
// drops it (the next session's graph gets its own).
const cpu::LayoutPlan& CpuBackend::layoutFor(const ir::Graph& g) {
  if (layout_graph_ != &g) {
    is_fast_.clear();  // probed for the plan's kind
    const auto nhwc_fast = [&](const ir::Graph& owner, const ir::Node& conv) {
      return cpu::oneDnnConvIsFast(owner, conv, blockInUse(), /*channels_last=*/true);
    };
    channels_last_ = blockInUse() > 0 && (options_.cpu_channels_last > 0 ||
                                          (options_.cpu_channels_last < 0 && cpu::channelsLastSuits(g, blockInUse(), nhwc_fast)));
    layout_ = cpu::planLayouts(g, blockInUse(), channels_last_, [&](const ir::Node& n) { return layoutUse(g, n); });
    cpu::planInt8Nhwc(g, &layout_, [&](const ir::Node& n, int t) {  // nothing without a block
      if (n.op && std::string(n.op->name) == "QLinearConv") {
        return cpu::canRunOneDnnInt8(g, n) && (t == n.inputs[0] || t == n.outputs[0]);
      }
      if (cpu::canRunByteLookup(g, n)) return t == n.inputs[1] || t == n.outputs[0];
      if (cpu::canRunNhwcConcat(g, n)) {
        const DType y = g.tensors[size_t(n.outputs[0])].dtype;
        return y == DType::kInt8 || y == DType::kUInt8;
      }
      if (cpu::canRunBytePool(g, n)) return t == n.inputs[0] || t == n.outputs[0];
      return cpu::quantTakesLayouts(g, n);
    });
    layout_graph_ = &g;
  }
  return layout_;
}

// A convolution epilogue as the convolution's own kernel, then the chain as one
// elementwise loop over the (plain) output. The convolution reads its input in the
// layout the graph's plan gave it.
StatusOr<std::unique_ptr<Kernel>> CpuBackend::compileConvEpilogueInLayout(const ir::Graph& g, const ir::Node& node,
                                                                          const cpu::LayoutPlan& layout) {
  if (!node.outputs.empty() && layout.isBlocked(node.outputs[0])) {
    return makeError(StatusCode::kUnsupported, "cpu: the epilogue loop of ", node.name, " runs on plain outputs");
  }
  const ir::Graph& body = *node.subgraph;
  cpu::LayoutPlan head;
  head.block = layout.block;
  head.channels_last = layout.channels_last;
  head.blocked.assign(body.tensors.size(), 0);
  for (size_t k = 0; k < node.inputs.size() && k < body.inputs.size(); ++k) {
    if (layout.isBlocked(node.inputs[k])) head.blocked[body.inputs[k]] = 1;
  }
  return cpu::compileConvEpilogue(node, *pool_, [&](const ir::Graph& b, const ir::Node& n) {
    if (cpu::canRunOneDnnConv(b, n)) {
      auto conv = cpu::compileOneDnnConv(b, n, &head, /*allow_ref=*/false, options_.cpu_winograd);
      if (conv.ok()) return conv;
      // oneDNN has only its reference code for this case (e.g. a plain-layout depthwise
      // 5x5 with AVX-512): the own kernel where it takes the case (plain input only).
      if (!head.isBlocked(n.inputs[0]) && cpu::canRunConvOrPool(b, n)) return cpu::compileConvOrPool(b, n, *pool_);
      conv = cpu::compileOneDnnConv(b, n, &head, /*allow_ref=*/true);
      if (conv.ok()) return conv;
    }
    if (head.isBlocked(n.inputs[0])) {
      return StatusOr<std::unique_ptr<Kernel>>(makeError(StatusCode::kUnsupported, "no convolution reads blocked input"));
    }
    return cpu::compileConvOrPool(b, n, *pool_);
  });
}

Status CpuBackend::finishCompile() {
  layout_graph_ = nullptr;
  channels_last_ = false;
  layout_ = {};
  is_fast_.clear();
  return Status::Ok();
}

// Fast paths first: convolutions (with their epilogues), pooling and concat on oneDNN
// in the graph's layout plan; elementwise clusters and ops as one tiled loop, clusters
// with reductions as passes of such loops over rows, GEMMs on oneDNN or the packed
// GEMM; convolution, pooling, softmax, layernorm and transpose on their own kernels;
// LSTM, GRU and RNN on oneDNN's RNN primitives or their own kernel; Resize, Split and
// Concat (inputs and output in one layout) on their own kernels; every other node
// runs its reference kernel. A node whose tensors the layout plan made blocked only
// ever gets a kernel that takes that layout (layoutUse).
bool CpuBackend::streamsConstantInput(const ir::Node& node, size_t k) const {
  return node.op && std::string(node.op->name) == "BlockQuantMatMul" && k >= 1 && k <= 3;
}

StatusOr<std::unique_ptr<Kernel>> CpuBackend::compile(const ir::Graph& g, const ir::Node& node) {
  const cpu::LayoutPlan& layout = layoutFor(g);
  if (cpu::canRunOneDnnConvChannelsLast(g, node)) {  // plain ends (layoutUse): NHWC bytes, as fusion made them
    auto k = cpu::compileOneDnnConvChannelsLast(g, node, /*allow_ref=*/true);
    return k.ok() ? std::move(k) : makeReferenceKernel(node);
  }
  const cpu::LayoutUse use = layoutUse(g, node);
  bool touches_blocked = false;
  for (int t : node.inputs) touches_blocked |= layout.isBlocked(t);
  for (int t : node.outputs) touches_blocked |= layout.isBlocked(t);
  if (cpu::canRunOneDnnConv(g, node)) {
    if (!touches_blocked && cpu::canRunWindowConv(g, node)) return cpu::compileWindowConv(g, node, *pool_);
    if (options_.cpu_winograd && own_winograd_) {
      auto w = cpu::compileWinogradConv(g, node, layout, *pool_, own_winograd_any_core_);
      if (w.ok()) return w;  // else oneDNN's direct convolution
    }
    auto k = cpu::compileOneDnnConv(g, node, &layout, /*allow_ref=*/false, options_.cpu_winograd);
    if (k.ok()) return k;
    // A slow epilogue (e.g. a residual in plain layout): the convolution alone, in the
    // layout plan's input layout, then the chain as one loop.
    if (isConvEpilogue(node)) {
      auto seq = compileConvEpilogueInLayout(g, node, layout);
      if (seq.ok()) return seq;
    }
    // oneDNN has only its reference code here: the own convolution on plain tensors where
    // it takes the case (its direct and depthwise loops run in ms, oneDNN's ref:any in
    // seconds), else oneDNN's.
    if (!touches_blocked && !node.subgraph && cpu::canRunConvOrPool(g, node)) return cpu::compileConvOrPool(g, node, *pool_);
    if (touches_blocked || !node.subgraph) return cpu::compileOneDnnConv(g, node, &layout, /*allow_ref=*/true);
  }
  if (cpu::quantTakesLayouts(g, node)) {  // int8 side NCHW or NHWC, float side NCHW or blocked
    const int f = node.op->name == std::string("QuantizeLinear") ? node.inputs[0] : node.outputs[0];
    const int i = node.op->name == std::string("QuantizeLinear") ? node.outputs[0] : node.inputs[0];
    return cpu::compileQuantElementwise(g, node, *pool_, layout.isNhwc(i), layout.isBlocked(f) ? layout.block : 0);
  }
  if (!node.outputs.empty() && layout.isNhwc(node.outputs[0]) && cpu::canRunNhwcConcat(g, node)) {  // int8 NHWC (every operand: tied)
    return cpu::compileNhwcConcat(g, node, *pool_);
  }
  if (cpu::concatCopiesIn(g, node, layout.blocked, layout.channels_last ? 0 : layout.block)) {  // one layout: plain copies
    return cpu::compileConcat(g, node, *pool_, layout.isBlocked(node.outputs[0]) ? layout.block : 0);
  }
  if (cpu::canRunByteLookup(g, node)) return cpu::compileByteLookup(g, node, *pool_);
  if (cpu::canRunBytePool(g, node)) return cpu::compileBytePool(g, node, *pool_, layout.isNhwc(node.inputs[0]));
  if (cpu::canRunChannelGather(g, node)) {
    const auto blockOf = [&](int t) { return layout.isBlocked(t) ? layout.blockOf(g.tensors[t].shape[1]) : 1; };
    return cpu::compileChannelGather(g, node, *pool_, blockOf(node.inputs[0]), blockOf(node.outputs[0]));
  }
  if (cpu::canRunBlockedPool(g, node) && layout.isBlocked(node.inputs[0]) && !layout.channels_last) {
    return cpu::compileBlockedPool(g, node, *pool_, layout.block, layout.isBlocked(node.outputs[0]));
  }
  if (cpu::canRunOneDnnPoolOrConcat(g, node)) {
    auto k = cpu::compileOneDnnPoolOrConcat(g, node, &layout, /*allow_ref=*/touches_blocked);
    if (k.ok() || touches_blocked) return k;
  }
  if (!touches_blocked) {  // plain tensors only
    if (own_gemv_ && cpu::canRunGemv(g, node)) return cpu::compileGemv(g, node, *pool_);
    if (cpu::canRunBlockQuantMatMul(g, node)) return cpu::compileBlockQuantMatMul(g, node, *pool_);
    if (cpu::canRunReshapeCluster(g, node)) return cpu::compileReshapeCluster(g, node);
    if (cpu::canRunSlice(g, node)) return cpu::compileSlice(g, node, *pool_);
    if (cpu::canRunPad(g, node)) return cpu::compilePad(g, node, *pool_);
    if (cpu::canRunBroadcast(g, node)) return cpu::compileBroadcast(g, node, *pool_);
    if (cpu::canRunFloatClass(g, node)) return cpu::compileFloatClass(node, *pool_);
    if (cpu::canRunMatMul(g, node) && cpu::isTinyMatMul(g, node)) return cpu::compileMatMul(g, node, *pool_);  // below oneDNN's call cost
  }
  if (cpu::canRunPattern(g, node)) return cpu::compilePattern(g, node, *pool_, options_);
  if (touches_blocked && use == cpu::LayoutUse::kSame) {
    if (cpu::canRunResize(g, node)) return cpu::compileResize(g, node, *pool_, layout.block);
    return cpu::compileSplit(g, node, *pool_, layout.block);
  }
  if (touches_blocked && use != cpu::LayoutUse::kAgnostic) {
    return makeError(StatusCode::kInternal, "cpu: ", node.name, " has no kernel for channel-blocked tensors; "
                     "run with GKRT_CPU_LAYOUT=plain and report this model");
  }
  if (cpu::canRunElementwise(g, node)) {
    const bool blocked = !node.outputs.empty() && layout.isBlocked(node.outputs[0]);
    return cpu::compileElementwise(g, node, *pool_, blocked ? layout.blockOf(g.tensors[node.outputs[0]].shape[1]) : 0);
  }
  if (cpu::canRunReduce(g, node)) return cpu::compileReduce(g, node, *pool_);
  if (cpu::canRunOneDnn(g, node)) {
    auto k = cpu::compileOneDnn(g, node, bf16_, pool_.get());
    // A float32 matmul against constant 2-D weights for which oneDNN has only its
    // gemm:jit (no brgemm, as on AVX2): gkrt's GEMM with the weights packed once ran
    // SmolLM2's prefill projections 1.47x faster (AVX2 EPYC, 1 thread).
    if (k.ok() && !bf16_ && !node.subgraph && (*k)->detail().find("gemm:jit") != std::string::npos &&
        cpu::canRunMatMul(g, node) && g.tensors[size_t(node.inputs[1])].isConstant() &&
        g.tensors[size_t(node.inputs[1])].shape.size() == 2) {
      return cpu::compileMatMul(g, node, *pool_);
    }
    if (k.ok()) return k;  // else our own GEMM / convolution
  }
  if (isConvEpilogue(node)) {
    auto k = compileConvEpilogueInLayout(g, node, layout);
    if (k.ok()) return k;  // else the reference kernel of the whole chain
  }
  if (cpu::canRunQuantElementwise(g, node)) return cpu::compileQuantElementwise(g, node, *pool_);
  // AVX2 without VNNI: oneDNN's exact int8 matmul multiplies the int8 values as float32
  // (twice the weight bytes of the own GEMM's int16 pairs, half the products an
  // instruction): the own GEMM ran ddddocr's 20x1024x8210 MatMulIntegerToFloat in 2.2-3.0
  // ms against oneDNN's 4.7-5.8 (2 threads, AVX2 EPYC).
  if (own_int8_matmul_ && cpu::canRunInt8Gemm(g, node) && !layout.isNhwc(node.inputs[0]) &&
      !layout.isNhwc(node.outputs[0])) {
    return cpu::compileInt8Gemm(g, node, *pool_);
  }
  if (cpu::canRunOneDnnInt8(g, node)) {
    const bool conv = node.op->name == std::string("QLinearConv") || node.op->name == std::string("ConvInteger");
    auto k = cpu::compileOneDnnInt8(g, node, int8_path_, *pool_, conv && layout.isNhwc(node.inputs[0]),
                                    conv && layout.isNhwc(node.outputs[0]));
    if (k.ok()) return k;  // else our own int8 GEMM or the reference kernel
    if (layout.isNhwc(node.inputs[0]) || layout.isNhwc(node.outputs[0])) {
      return makeError(StatusCode::kInternal, "cpu: ", node.name, " has NHWC int8 tensors but oneDNN declines it (",
                       k.status().message(), "); run with GKRT_CPU_LAYOUT=plain and report this model");
    }
    GKRT_LOG_INFO("cpu: oneDNN declines ", node.name, ": ", k.status().message());
  }
  if (cpu::canRunInt8Gemm(g, node)) return cpu::compileInt8Gemm(g, node, *pool_);
  if (cpu::canRunMatMul(g, node)) return cpu::compileMatMul(g, node, *pool_);
  if (cpu::canRunConvOrPool(g, node)) return cpu::compileConvOrPool(g, node, *pool_);
  if (cpu::canRunNorm(g, node)) return cpu::compileNorm(g, node, *pool_);
  if (cpu::canRunTranspose(g, node)) return cpu::compileTranspose(g, node, *pool_);
  if (cpu::canRunOneDnnRecurrent(g, node) && !cpu::ownRecurrentIsFaster(g, node)) {
    auto k = cpu::compileOneDnnRecurrent(g, node);
    if (k.ok()) return k;  // else our own recurrent kernel
  }
  if (cpu::canRunRecurrent(g, node)) return cpu::compileRecurrent(g, node, *pool_);
  if (cpu::canRunQuantizedLstm(g, node)) return cpu::compileQuantizedLstm(g, node, *pool_);
  if (cpu::canRunResize(g, node)) return cpu::compileResize(g, node, *pool_);
  if (cpu::canRunSplit(g, node)) return cpu::compileSplit(g, node, *pool_);
  return makeReferenceKernel(node);
}

}  // namespace gkrt
