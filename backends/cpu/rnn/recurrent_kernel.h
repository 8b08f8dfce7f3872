// LSTM, GRU and RNN on the cpu backend, for every case the op allows (peepholes,
// sequence_lens, clip, any activation, both layouts): the input products X W^T of all
// steps in one packed GEMM (gemm.h), then per step the recurrent product H R^T (R kept
// transposed so each step streams it once) and one fused cell loop per batch row with
// the gates' activations vectorised (vector_math.h). W, R, B and P are packed when the
// session is compiled; the two directions of a bidirectional op run on two threads.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

// float32 LSTM/GRU/RNN whose W, R and (when given) B and P are constants.
bool canRunRecurrent(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileRecurrent(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
