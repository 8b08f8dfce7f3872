// Data-movement ops the GPU backends run from one rendered source in either kernel
// dialect (kernel_dialect.h), shapes baked in: the ops convolutional detectors and
// segmenters put between their convolutions (YOLO's C2f Splits, FPN upsampling), which
// would otherwise go to the cpu backend with a copy each way.
//
//  - Split (any element type of 1, 2, 4 or 8 bytes): one pass over the input, each
//    element stored into the output that holds its position on the axis (bits copied).
//  - Resize (NCHW, the last two axes): the per-axis source positions and weights are
//    computed on the host with the reference kernel's functions (ops::resizeSourceCoord,
//    resizeNearestIndex, resizeCubicTaps, in double) and baked into the source as
//    program-scope tables, so nearest picks exactly the reference's pixel (bits copied,
//    any element type) and linear/cubic (float32) weigh the same taps in the same
//    order, in float32 instead of double.
//  - Tile, BroadcastTo (what the expander makes of Tile), and Pad by reflection or edge
//    copies (any element type): each output element
//    reads one input element at an offset summed over the axes (constant Pad is the
//    cluster renderer's).
//  - ArgMax / ArgMin (+WithValue) of float32: one work-item per output scans the axis,
//    the reference's comparisons (the first extreme wins; a NaN never replaces the best).
//  - CumSum (float32, int32, int64): one work-item per line runs the prefix sum (float32
//    sums in float32 where the reference sums in double).
//
// Launch: elementwise (a grid-stride loop over `items` input or output elements).
// Arguments: the outputs, then the node's inputs (Resize: its data input only).
#pragma once

#include <cstdint>
#include <string>

#include "backends/codegen/cluster_renderer.h"

namespace gkrt::codegen {

// `node` as kernel `name`; kUnsupported "not a movement kernel" for other ops, or the
// reason this one does not fit (element type, rank, mode).
StatusOr<RenderedKernel> renderMovementKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                              const KernelDialect& d);

// Whether `status` (from renderMovementKernel) only says the op is not a movement op.
bool notAMovementKernel(const Status& status);

// What a kernel records when it meets bad data: the GPU backends keep one per session
// (device memory the host reads after a run) and report the first error it holds.
struct KernelFaultRecord {
  int32_t kernel;    // the writing kernel's fault id + 1; 0 while nothing went wrong
  int32_t pad;
  int64_t value;     // the bad index
  int64_t position;  // where it was in the indices
};

// Gather(x, indices) along its axis, or GatherElements (indices of x's rank, the output
// of their shape), x of any element type of 1, 2, 4 or 8 bytes, integer indices, negative
// ones from the end, as kernel `name`. The indices arrive at run time,
// so an out-of-range one cannot fail at compile: the kernel zeroes that output element
// and records the first such index in the KernelFaultRecord passed after its inputs,
// with `fault_id` + 1 as its kernel. kUnsupported "not a movement kernel" for other ops.
StatusOr<RenderedKernel> renderGatherKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                            const KernelDialect& d, int fault_id);
// Whether `node`'s kernel takes the fault record (renderGatherKernel's ops).
bool usesFaultRecord(const ir::Node& node);

}  // namespace gkrt::codegen
