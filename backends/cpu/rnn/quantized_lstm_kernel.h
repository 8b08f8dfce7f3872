// DynamicQuantizeLSTM (runtime/ir/ops/recurrent_quant.h) on the cpu backend: X quantized
// to uint8 once, then X W for every step and direction as one exact int8 GEMM (on all
// threads); per step, h quantized to uint8 and h R exact, the two rescaled and added as
// the reference adds them, and the gates in one vectorised loop (lstmDefaultGates); the
// two directions of a bidirectional op on two threads. The products: vpdpbusd where the
// CPU has AVX-512 VNNI (int8_vnni_gemm.h, weights as int8 and the zero points' terms
// taken off after); elsewhere int8_gemm.h, or for h R of hidden sizes up to 128 float32
// sums of the integer products (exact below 2^24) by the float LSTM's register-blocked
// loop (faster than the int8 GEMM's per-call set-up there). W and R are packed when the session is compiled. The integer products are
// the reference's; only sigmoid/tanh's approximations differ (~3e-7 relative). Cases
// with peepholes, clip, coupled gates or other activations run the reference kernel.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunQuantizedLstm(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileQuantizedLstm(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
