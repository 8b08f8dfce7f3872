// A one-channel 1-D convolution over a signal, as audio models write their STFT or
// filterbank front end (a Conv1d with a fixed basis: silero's 258 filters of 256 taps at
// stride 128): Conv2D x [N, 1, 1, W], w [C, 1, 1, K], strides [1, s], no padding or
// dilation, one group, an optional bias, plain tensors, at least 32 windows (N x T).
// Every output position's input is a window of K contiguous samples, so the convolution
// is one GEMM of the windows [N * T, K] (copied into rows) by the filters' transpose
// [K, C] (prepared once at compile), then each batch's [T, C] written out as [C, T].
// The GEMM is a oneDNN matmul with the bias where oneDNN has more than its reference
// code for it (else gkrt's packed GEMM). oneDNN's convolution ran silero_vad_seq's 80 windows on its blocked
// brgconv with a reorder to plain per launch: 0.141 ms, the model 0.355 ms at 1 thread;
// with gkrt's GEMM 0.124-0.132 and 0.322-0.366; with oneDNN's brgemm matmul 0.077 and
// 0.272 (AMX Xeon; 2 threads 0.048 and 0.233).
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/ir/graph.h"

namespace gkrt::cpu {

bool canRunWindowConv(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compileWindowConv(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
