// Specialising a model with dynamic dims to one set of input shapes.
//
//   ir::Graph g = ir::cloneGraph(model);
//   RETURN_IF_ERROR(checkInputShapes(g, {{"x", {1, 3, 480, 640}}}));
//   RETURN_IF_ERROR(specializeShapes(g, {{"x", {1, 3, 480, 640}}}));
//   // every tensor of g now has a static shape; no dynamic-shape op is left
//
// Shapes are inferred from the inputs; the shape arithmetic the converter kept (Shape,
// Gather, Concat, ... on small tensors) becomes constants; ops taking those values as
// shape operands (DynamicReshape, DynamicSlice, ...) become their static forms. The
// result is the graph the fusion pipeline and the backends compile, exactly as for a
// model converted with fixed sizes.
#pragma once

#include <map>
#include <string>

#include "runtime/ir/graph.h"

namespace gkrt {

// Checks `shapes` (by input name) against the inputs' declared shapes: same rank,
// static dims unchanged, no negative dims, and every dim symbol ("batch", "height")
// bound to one value across inputs. Errors name the input and the dim.
Status checkInputShapes(const ir::Graph& g, const std::map<std::string, Shape>& shapes);

// Whether the graph holds shape arithmetic (Shape or an op with shape operands).
bool hasShapeArithmetic(const ir::Graph& g);

// Sets the inputs' shapes, then infers, folds and lowers as above. Fails, naming the
// tensor, if a shape is still unknown afterwards.
Status specializeShapes(ir::Graph& g, const std::map<std::string, Shape>& shapes);

}  // namespace gkrt
