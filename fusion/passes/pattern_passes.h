// The seeds' Appendix 3: MindSpore's Ascend pattern passes ("fusion_group" stage), each
// matching the subgraph MindSpore matches (FUSION_NOTES §6) and replacing it by one
// pattern op (runtime/ir/ops/pattern_ops.cc). They run after preprocess and before the
// expander, so the ops they look for (LayerNorm, GeLU, Softmax) are still whole.
//
// Defaults per table column: every pass runs under the ascend profile (Appendix 3);
// under cpu and gpu only those that measured faster there (docs/fusion-and-flags.md, "Pattern passes").
#pragma once

#include <vector>

#include "fusion/passes/passes.h"

namespace gkrt::passes {

struct PatternPass {
  const char* name;            // MindSpore's pass name, as enable_pass/disable_pass take it
  PassResult (*run)(FusionContext&);
  bool on_cpu, on_gpu;         // on by default under that column (ascend: always)
};

// Appendix 3, in its order; ids in the "fusion_group" stage follow it.
const std::vector<PatternPass>& patternPasses();

// gkrt's own preprocess pass: rewrites the forms ONNX exporters write (LayerNorm as
// ReduceMean/Sub/Pow/Sqrt/Div, GeLU as Erf or tanh formulas, x*Sigmoid(x)) into the
// ops the pattern passes look for.
PassResult recognizeExportedPatterns(FusionContext& ctx);
// gkrt's own preprocess pass: the exported rotary position embedding as one Rotary node
// (rotary_fusion.cc; rotary_embedding_fusion in enable_pass/disable_pass).
PassResult fuseRotaryEmbedding(FusionContext& ctx);
// gkrt's own preprocess pass: matmuls sharing their activation as one matmul + Split
// (sibling_matmul_merge.cc), for inference_matmul_split_fusion and the SwiGLU pass.
PassResult mergeSiblingMatMuls(FusionContext& ctx);

// One function per pass (files fusion/passes/pattern_*.cc).
PassResult fuseFlashAttentionV1(FusionContext& ctx);
PassResult fuseFlashAttentionV2(FusionContext& ctx);
PassResult fuseAddLayerNorm(FusionContext& ctx);
PassResult fuseAddLayerNormV3(FusionContext& ctx);
PassResult fuseAddLayerNormExt(FusionContext& ctx);
PassResult fuseSwiGLU(FusionContext& ctx);
PassResult fuseMatMulSplit(FusionContext& ctx);
PassResult fuseShapeReshape(FusionContext& ctx);
PassResult fuseShapeReshape2(FusionContext& ctx);
PassResult fuseAddRmsNormQuant(FusionContext& ctx);
PassResult fuseRmsNormQuant(FusionContext& ctx);
PassResult fuseAddRmsNorm(FusionContext& ctx);
PassResult fuseAddCastRmsNormCast(FusionContext& ctx);
PassResult fuseMatMulAllReduce(FusionContext& ctx);
PassResult fuseSplitConcat(FusionContext& ctx);
PassResult fuseMatMulBiasAdd(FusionContext& ctx);
PassResult fuseMatMulAdd(FusionContext& ctx);
PassResult fuseMatMulRelu(FusionContext& ctx);
PassResult fuseMatMulGelu(FusionContext& ctx);
PassResult fuseQbmmAdd(FusionContext& ctx);
PassResult fuseBlockQuantBias(FusionContext& ctx);  // the BlockQuantMatMul half of fuseQbmmAdd
PassResult fuseQbmmAllReduceAdd(FusionContext& ctx);

}  // namespace gkrt::passes
