// Subnormal float32 weights read as zero.
//
// x86 cores finish a multiply or FMA that takes or yields a subnormal (|v| < 2^-126) in
// microcode, about a hundred cycles instead of one. Trained weights hold such values
// (PP-OCRv4's recogniser: 12,970 of one squeeze-excitation layer's 57,600 weights, and
// whole output channels of them), and one such lane slows its vector's every FMA: that
// layer took 0.14 ms instead of 0.01. A weight below 2^-126 moves a sum of products by
// less than 2^-126 times the sum of |the other factors|, under float32's resolution of
// any normal output, so a backend that asks (the cpu backend; BackendOptions::cpu_zero_
// subnormal_weights; GKRT_CPU_SUBNORMALS=keep keeps them) gets them as zeros.
//
//   int64_t n = ir::zeroSubnormalWeights(graph);  // after fusion, before compiling
#pragma once

#include <cstdint>

#include "runtime/ir/graph.h"

namespace gkrt::ir {

// Replaces every float32 constant of `g` (and of its fused nodes' subgraphs) that only
// product inputs read (OpDef::product_inputs) and that holds a subnormal by a copy with
// those values zero; a constant any other input reads stays as it is. Returns how many
// values it zeroed.
int64_t zeroSubnormalWeights(Graph& g);

}  // namespace gkrt::ir
