// Keeping an ONNX model's dynamic dims (`gkrt convert` without --input-shape).
//
// The converter works on static shapes. A model whose inputs have dynamic dims is
// converted twice, with those dims set to two different trial sizes (each named dim,
// "height" say, one size per trial; unnamed dims each their own). Values computed from
// the input's dims are kept as graph ops (Shape, Gather, Concat, ...) and the ops that
// take them as shape operands in their dynamic forms (DynamicReshape, DynamicSlice, ...),
// which a session folds and lowers once it knows the input shapes
// (runtime/shape_specialize.h). If the two graphs agree in every node, attribute and
// constant, nothing in the model depends on the sizes except computed shapes, so the
// graph is right for every size: it is kept, with the shapes that differed marked
// unknown. If they disagree, some converter baked a size into an attribute or constant:
// conversion fails, naming the node, rather than produce a model that is only right at
// one size.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ir/graph.h"
#include "tools/onnx/onnx_import.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace gkrt::onnx_import {

// Two trial shapes per dynamic input (those not given in the options).
using DimProbe = std::pair<std::map<std::string, Shape>, std::map<std::string, Shape>>;

// The trial sizes to try in turn; empty when no input has a dynamic dim left.
std::vector<DimProbe> dynamicDimProbes(const onnx::ModelProto& model, const OnnxImportOptions& options);

// The graph valid at every size, from the two trial conversions, or an error naming the
// node that depends on the sizes.
StatusOr<ir::Graph> mergeProbeGraphs(const onnx::ModelProto& model, const OnnxImportOptions& options, ir::Graph a,
                                     const ir::Graph& b);

// One conversion (onnx_import.cc): inputs named in `probe` take those shapes and are
// marked dynamic.
StatusOr<ir::Graph> convertGraph(const onnx::ModelProto& model, const std::string& base_dir,
                                 const OnnxImportOptions& options, const std::map<std::string, Shape>* probe);

}  // namespace gkrt::onnx_import
