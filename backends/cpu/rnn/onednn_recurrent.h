// LSTM, GRU and RNN through oneDNN's RNN primitives (lstm_forward with peepholes,
// gru_forward, lbr_gru_forward for linear_before_reset, vanilla_rnn_forward), on the
// host builds that have oneDNN (GKRT_HAVE_DNNL). ONNX's gate order (LSTM i, o, f, c) is
// mapped to oneDNN's (i, f, c, o) and the weights reordered into the layout the
// primitive picks once, at session compile. Cases oneDNN has no form for (clip,
// input_forget, sequence_lens, activations other than the defaults, RNN other than
// Tanh/Relu/Sigmoid) stay on the cpu backend's own kernel (recurrent_kernel.h).
#pragma once

#include <memory>

#include "backends/backend.h"

namespace gkrt::cpu {

bool canRunOneDnnRecurrent(const ir::Graph& g, const ir::Node& node);
StatusOr<std::unique_ptr<Kernel>> compileOneDnnRecurrent(const ir::Graph& g, const ir::Node& node);

}  // namespace gkrt::cpu
