#include "fusion/passes/pattern_passes.h"

namespace gkrt::passes {

// on_cpu / on_gpu: measured (docs/fusion-and-flags.md, "Pattern passes"). Under the gpu column, measured on
// an H200 (bench/README.md, 2026-11-26): the attention passes (the rendered FlashAttention
// kernel) and the GEMM bias/residual epilogues (cuBLASLt) take the zoo transformer block
// from 0.99x to 0.88x PyTorch's best, so they are on. Measured again on an H200
// (2026-11-27, two runs): add_layer_norm_fusion takes the block from 0.0707 to 0.0659-0.0673
// ms and MiniLM from 0.669 to 0.634 ms, add_rms_norm_fusion with inference_swiglu_fusion
// SmolLM2's decode from 503 to 522 tokens/s (fp32) and 323 to 328 (int4): on. The other
// passes stay off there (GeLU epilogue 1.5% on the block, one Q/K/V GEMM none: sibling
// merge already makes it one). The quantised RmsNorm passes are on under cpu (their int8 kernel replaces
// two reference kernels), and so is inference_qbmm_add_fusion (QuantBatchMatMul on
// oneDNN's VNNI int8 matmul: 3.7x the float32 GEMM on the dequantized weights).
const std::vector<PatternPass>& patternPasses() {
  static const std::vector<PatternPass> p = {
      // The tiled attention kernel (backends/cpu/nn/flash_attention_kernel.cc) runs as fast as
      // oneDNN's two batched matmuls, the softmax and the head transposes it replaces, with
      // half the kernels and no score matrix in the arena (docs/fusion-and-flags.md): on under cpu.
      {"FlashAttentionFusionV1", fuseFlashAttentionV1, true, true},
      {"FlashAttentionFusionV2", fuseFlashAttentionV2, true, true},
      {"add_layer_norm_fusion", fuseAddLayerNorm, true, true},
      {"add_layer_norm_v3_fusion", fuseAddLayerNormV3, true, false},
      {"add_layer_norm_ext_fusion", fuseAddLayerNormExt, true, false},
      {"inference_swiglu_fusion", fuseSwiGLU, true, true},
      {"inference_matmul_split_fusion", fuseMatMulSplit, true, false},
      {"shape_reshape", fuseShapeReshape, true, true},
      {"shape_reshape_2", fuseShapeReshape2, true, true},
      {"add_rms_norm_quant_fusion", fuseAddRmsNormQuant, true, false},
      {"rms_norm_quant_fusion", fuseRmsNormQuant, true, false},
      {"add_rms_norm_fusion", fuseAddRmsNorm, true, true},
      {"add_cast_rms_norm_cast_fusion", fuseAddCastRmsNormCast, true, false},
      {"MatMulAllReduce", fuseMatMulAllReduce, true, false},
      {"split_concat_fusion", fuseSplitConcat, false, false},
      {"matmul_elem_biasadd_fusion", fuseMatMulBiasAdd, true, true},
      {"matmul_elem_add_fusion", fuseMatMulAdd, true, true},
      {"matmul_elem_relu_fusion", fuseMatMulRelu, true, false},
      {"matmul_elem_gelu_fusion", fuseMatMulGelu, true, false},
      {"inference_qbmm_add_fusion", fuseQbmmAdd, true, false},
      {"inference_qbmm_allreduce_add_fusion", fuseQbmmAllReduceAdd, true, false},
  };
  return p;
}

}  // namespace gkrt::passes
