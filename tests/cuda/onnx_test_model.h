// An ONNX test model as the conformance runner loads it: input shapes from the
// test_data_set_0/input_K.pb files beside model.onnx (for dynamic dims). Models whose
// shape parameters are graph inputs (the runner freezes those) do not convert here.
//
//   ASSIGN_OR_RETURN(ir::Graph g, loadOnnxTestModel("build/onnx_node_tests/test_abs/model.onnx"));
#pragma once

#include <string>

#include "runtime/ir/graph.h"

namespace gkrt {

StatusOr<ir::Graph> loadOnnxTestModel(const std::string& path);

}  // namespace gkrt
