// ONNX -> gkrt conversion (opset 11-21, static shapes).
//
//   OnnxImportOptions o;
//   o.input_shapes["x"] = {1, 3, 224, 224};           // for inputs with dynamic dims
//   ASSIGN_OR_RETURN(ir::Graph g, importOnnxFile("model.onnx", o));
//
// Initializers become constants; nodes whose inputs are all constant (shape
// arithmetic: Shape, Gather, Concat, Unsqueeze, ConstantOfShape, ...) are folded with
// the reference kernels; BatchNormalization after Conv folds into the Conv's weights.
// Every unsupported op or attribute is reported at once, naming node, op, opset.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/host_tensor.h"
#include "runtime/ir/graph.h"

namespace onnx {
class ModelProto;
class TensorProto;
class TensorShapeProto_Dimension;
}  // namespace onnx

namespace gkrt {

constexpr int64_t kNewestOnnxOpset = 28;

struct OnnxImportOptions {
  std::map<std::string, Shape> input_shapes;        // by input name
  std::vector<Shape> positional_input_shapes;       // for dynamic inputs not named above, by position
  // Graph inputs whose values are fixed now (shape parameters such as axes or pads
  // that gkrt needs when converting): they become constants.
  std::map<std::string, HostTensor> frozen_inputs;
  // Named dims fixed at a size in every input that names them (`gkrt convert --dim
  // kv_cache_dim=64`): a size the model names but always has.
  std::map<std::string, int64_t> dim_values;
};
// An input dim's size under the options: its value, a --dim size for its name, or
// kUnknownDim.
namespace onnx_import {
int64_t dimSize(const onnx::TensorShapeProto_Dimension& d, const OnnxImportOptions& o);
}

StatusOr<ir::Graph> importOnnxFile(const std::string& path, const OnnxImportOptions& options = {});
StatusOr<ir::Graph> importOnnxModel(const onnx::ModelProto& model, const std::string& base_dir,
                                    const OnnxImportOptions& options = {});
// gkrt's dtype for an ONNX TensorProto element type, or kUnsupported naming it.
StatusOr<DType> dtypeFromOnnx(int onnx_element_type);
// A TensorProto's data (raw, typed fields or external file relative to base_dir).
StatusOr<HostTensor> tensorFromProto(const onnx::TensorProto& t, const std::string& base_dir);
StatusOr<HostTensor> readTensorProtoFile(const std::string& path);
// A 4-bit or 2-bit TensorProto (ONNX packs two or four elements per byte, first in the
// low bits) as gkrt holds it: one element per byte, int4/int2 sign-extended.
StatusOr<HostTensor> unpackedTensorFromProto(const onnx::TensorProto& t, const std::string& base_dir, DType dtype);

}  // namespace gkrt
