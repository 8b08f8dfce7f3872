// LSTM, GRU and RNN on the cpu backend, for every case the op allows (peepholes,
// sequence_lens, clip, any activation, both layouts): the input products X W^T of all
// steps in one packed GEMM (gemm.h), then per step the recurrent product H R^T (R kept
// transposed so each step streams it once) and one fused cell loop per batch row with
// the gates' activations vectorised (vector_math.h); an LSTM with the default gates and
// no sequence lengths takes every batch row's step in one pass over R and its gates in
// one loop (sigmoid/tanh from row_math.h's exp), R^T's panels walked forwards and
// backwards on alternate steps so that each step starts on what the cache still holds.
// W, R, B and P are packed when the session is compiled; the two directions of a
// bidirectional op run on two threads.
#pragma once

#include <memory>

#include <vector>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/ir/ops/recurrent.h"

namespace gkrt::cpu {

// float32 LSTM/GRU/RNN whose W, R and (when given) B and P are constants.
bool canRunRecurrent(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileRecurrent(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);
// True for the LSTMs this kernel runs faster than oneDNN's RNN primitive: ONNX's default
// activations, no clip, peepholes or coupled gates, and a hidden size up to 64, or 128 for
// one batch row (every
// batch row a step in one pass over R, the gates in one vectorised loop). Measured on a
// 2-core AVX-512 EPYC, 2 threads: hidden 24 (onnxruntime's quantized LSTM test model)
// 5 us against 15-17; 50 steps of hidden 64, 59 against 82; 12 steps of 2 x 64, 22
// against 21; hidden 128 and more stay faster on oneDNN (1.75 against 1.44 ms at 100
// steps of 8 x 128; 0.19 against 0.05 ms for one step of 512; ddddocr's 20 steps of 1 x
// 512 each way, 6.6 against 5.8 ms at 1 thread) except one row of 128 (silero_vad_seq's
// 16 steps: 0.079 against 0.097 ms at 1 thread, 0.07 both at 2). On a core with
// full-width AVX-512 (a 2-core Intel Xeon) the own kernel wins for one batch row up to 512
// over 4 steps or more, so there it takes those: 20 steps of 1 x 512 each way 8.8-10.1
// against 12.7-13.8 ms, one way 4.4-4.6 against 6.1-6.2, 4 steps 0.88-0.92 against
// 1.29-1.43, 20 steps of 256 0.57 against 0.75 (1 thread); one step of 512 stays on oneDNN
// (0.37 against 0.31 ms), as does one step of 256 (0.078 against 0.040).
bool ownRecurrentIsFaster(const ir::Graph& g, const ir::Node& node);

// acc[b][0:n] += sum_k h[b][k] * rt[k * ldr + 0:n] for `rows` rows of h (stride K) and acc
// (stride lda): R^T's rows streamed once for all rows, 16-column groups in registers.
void addRowsTimes(const float* h, int64_t rows, const float* rt, int64_t K, int64_t ldr, int64_t n, float* acc, int64_t lda);

// The LSTM cell's elementwise part with ONNX's default activations (sigmoid, tanh, tanh)
// and no clip, peepholes or coupled gates: g = [i, o, f, c~] pre-activations (H each),
// c and h updated in place, in one vectorised loop (also quantized_lstm_kernel.cc's).
void lstmDefaultGates(const float* g, int64_t H, float* c, float* h);
// The same for units [0, n) of gates H apart (a thread's share of the units).
void lstmDefaultGatesOf(const float* g, int64_t H, int64_t n, float* c, float* h);

// What the recurrent kernels (this one and quantized_lstm_kernel.cc) share around their
// steps: a launch's sequence_lens into `lens` (seq for every row when `in` is null or
// absent; an error names a length outside 0..seq), direction d's rows [batch][H] from the
// op's initial state (ONNX layout; zeros without one), and the final-state outputs
// out[1] (Y_h) and out[2] (Y_c, LSTM) from each direction's rows.
Status readSequenceLengths(const ops::RecurrentSpec& s, const TensorView* in, std::vector<int64_t>* lens);
void loadInitialState(const ops::RecurrentSpec& s, int64_t d, const float* init, float* rows);
void storeFinalStates(const ops::RecurrentSpec& s, const std::vector<MutableTensorView>& out, const float* const* h_rows,
                      const float* const* c_rows);

}  // namespace gkrt::cpu
