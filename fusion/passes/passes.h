// Every fusion pass: rewrites ctx.graph in place and says whether it changed it.
#pragma once

#include <set>

#include "fusion/fusion_context.h"

namespace gkrt::passes {

using PassResult = StatusOr<bool>;

PassResult eliminateDeadNodes(FusionContext& ctx);      // nodes nothing reads
PassResult foldConstants(FusionContext& ctx);           // nodes of constants -> constants
PassResult eliminateCommonSubexpressions(FusionContext& ctx);
PassResult simplifyArithmetic(FusionContext& ctx);      // x*1, x+0, --x, pow(x,2), casts
// Node i ends a chain of Mul/Add/Sub by constants: rewritten as one Mul and one Add
// (affine_chain.cc). A rule of simplifyArithmetic.
bool foldAffineChain(ir::Graph& g, size_t i);
// Node i is a BatchNorm whose parameters are constants: rewritten as x * s + t (a Mul
// inserted before it, the BatchNorm becoming the Add; affine_chain.cc). A rule of
// simplifyArithmetic.
bool foldBatchNormAffine(ir::Graph& g, size_t i);
PassResult optimizeTransforms(FusionContext& ctx);      // reshape/transpose pairs
PassResult expandOps(FusionContext& ctx);               // Appendix 1 column -> basic ops
PassResult clusterOps(FusionContext& ctx);              // Appendix 2 column -> Fused nodes
PassResult splitClusters(FusionContext& ctx);           // pattern rules, limits, stitching
PassResult fuseParallel(FusionContext& ctx);            // independent clusters sharing inputs
PassResult fuseQuantDqOpQ(FusionContext& ctx);            // QDQ around Conv/MatMul/Add/Mul -> QLinear ops
PassResult fuseMatMulIntegerToFloat(FusionContext& ctx);  // dynamic quantization's dequant chain -> MatMulIntegerToFloat
PassResult moveGatherBeforeDequantize(FusionContext& ctx);  // Gather(dequantized int8 table) -> dequantized Gather(int8)
PassResult fuseInt8WeightDynamicQuant(FusionContext& ctx);  // MatMul(x, int8 weights dequantized) -> BlockQuantMatMul, int8 x
PassResult sinkSqueezes(FusionContext& ctx);  // Conv2D -> Squeeze -> elementwise as Conv2D -> elementwise -> Squeeze
PassResult fuseStackedReduce(FusionContext& ctx);  // ReduceMax/Min/Sum over a Concat of size-1 slices -> Maximum/Minimum/Add chain
PassResult fuseOneHotMatMul(FusionContext& ctx);  // MatMul(Cast(Equal(ids, iota)), W) -> Gather of W's rows
PassResult foldConvTransposes(FusionContext& ctx);  // NHWC<->NCHW Transposes around a Conv2D into its cluster (cpu)
PassResult fuseChannelShuffle(FusionContext& ctx);  // Reshape -> Transpose -> Reshape channel shuffle -> Gather
// The outputs of the nodes (MatMul and its two DequantizeLinear) of every match of
// inference_qbmm_add_fusion, which ConstantFolding and the matmul_elem add passes leave
// to it when it will run (quant_dq_op_q_fusion.cc).
std::set<int> qbmmAddTensors(const ir::Graph& g);

// Points every reader of tensor `from` (nodes and graph outputs) at `to`.
void replaceUses(ir::Graph& g, int from, int to);
// Whether tensor t is a graph output.
bool isGraphOutput(const ir::Graph& g, int t);
// The node writing tensor t, or -1 (a graph input or constant).
int producerOf(const ir::Graph& g, int t);
// How many nodes read tensor t (a graph output counts as one more reader).
int readers(const ir::Graph& g, int t);

}  // namespace gkrt::passes
