// A model from a .gkm file, or from an ONNX file converted in memory with `gkrt
// convert`'s options, for the commands that take a model (run, bench, dump, info,
// bisect) and for the Python package.
//
//   ImportArgs a;                                   // --input-shape, --freeze, --dim
//   ASSIGN_OR_RETURN(ir::Graph g, loadAnyModel("squeezenet.onnx", a));
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "runtime/host_tensor.h"
#include "runtime/ir/graph.h"

namespace gkrt::tools {

// What conversion takes, parsed.
struct ImportOptions {
  std::map<std::string, Shape> input_shapes;        // fixed sizes for inputs with dynamic dims
  std::map<std::string, HostTensor> frozen_inputs;  // graph inputs made constants (shape parameters)
  std::map<std::string, int64_t> dim_values;        // named dims fixed at a size
  bool gguf_int8_activations = true;                // a .gguf decoder's quantized matmuls (gguf_import.h)
};

// The same options as the command line writes them.
struct ImportArgs {
  std::vector<std::string> input_shapes;  // name=1,3,224,224
  std::vector<std::string> freeze;        // name=file.npy
  std::vector<std::string> dims;          // name=64
  std::string gguf_activations = "int8";  // int8 | float32
  // --freeze and --dim (the commands that run a model take --input-shape from SessionArgs
  // and copy it here).
  void addTo(CLI::App* cmd);
  StatusOr<ImportOptions> parse() const;
};

// True when gkrt was built with ONNX import (Debian's libonnx-dev).
bool onnxImportBuiltIn();
// .gkm by its file identifier, GGUF by its magic; anything else is read as ONNX (an
// error naming both formats when it is neither).
StatusOr<ir::Graph> loadAnyModel(const std::string& path, const ImportArgs& args);
StatusOr<ir::Graph> loadAnyModel(const std::string& path, const ImportOptions& options);
StatusOr<ir::Graph> loadAnyModelBytes(const std::string& bytes, const ImportOptions& options);
// Converts a GGUF decoder (tools/gguf/gguf_import.h) or an ONNX file (`gkrt convert`'s
// import step).
StatusOr<ir::Graph> importModel(const std::string& path, const ImportOptions& options);
// Converts an ONNX file.
StatusOr<ir::Graph> importOnnx(const std::string& path, const ImportOptions& options);

}  // namespace gkrt::tools
