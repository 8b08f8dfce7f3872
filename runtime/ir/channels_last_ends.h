// Convolution clusters with channels-last ends. tf2onnx writes each TensorFlow
// convolution as Transpose (NHWC -> NCHW) -> Conv -> Transpose (NCHW -> NHWC), a 1-D one
// with an ExpandDims/Squeeze beside them: three passes over the data where oneDNN's
// convolution reads and writes NHWC itself. The fusion pass conv_transpose_fold moves
// such Transposes (and the Squeeze/Reshape beside them) into the convolution's cluster;
// the cpu backend's oneDNN convolution then reads its input and writes its output as
// NHWC bytes, and every other backend runs the cluster's body op by op. Both sides ask
// these helpers, so they agree on which clusters qualify.
#pragma once

#include <vector>

#include "runtime/ir/graph.h"

namespace gkrt::ir {

// Whether Transpose(x, perm) of a 4-D x gives an NCHW tensor whose NHWC order is x's
// own (dims of 1 move nothing): [N,H,W,C] with (0,3,1,2); [N,L,C,1] with (0,2,1,3).
bool transposeKeepsNhwcBytes(const Shape& x, const Ints& perm);

// The dims of an NCHW tensor y labelled 0..3 (N, C, H, W), -1 for a dim of 1.
std::vector<int> nchwLabels(const Shape& y);
// The labels after a layout-only node (Squeeze, Unsqueeze, Reshape, Flatten: dims of 1
// added or removed; Transpose: permuted) from `in` to `out`; false for any other node.
bool relabelThrough(const Node& n, const Shape& in, const Shape& out, std::vector<int>* labels);
// Whether the labelled dims, in order, are N, H, W, C (the bytes of y as NHWC).
bool labelsAreNhwc(const std::vector<int>& labels);

// Where a fused node's body is [Transpose] Conv2D [epilogue] [layout tail]: `in` when
// it starts with a Transpose (transposeKeepsNhwcBytes) read only by the Conv2D as its
// input, `out` when it ends with layout-only nodes that order the epilogue's result as
// NHWC bytes (at least one of the two).
struct ChannelsLastEnds {
  bool in = false, out = false;
  size_t conv = 0;      // index of the Conv2D in the body
  size_t tail = 0;      // index of the first layout node after the epilogue (nodes.size(): none)
  int x_input = -1;     // position in the body's inputs of the Transpose's input (in)
  int conv_x = -1;      // the Conv2D's input tensor in the body
  int chain_end = -1;   // the epilogue's result in the body (the tail's input)
};
bool channelsLastEnds(const Node& node, ChannelsLastEnds* e);

}  // namespace gkrt::ir
