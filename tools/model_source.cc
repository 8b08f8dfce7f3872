#include "tools/model_source.h"

#include <cstdlib>
#include <fstream>

#include "runtime/model_io.h"
#include "tools/gguf/gguf_import.h"
#include "tools/gguf/gguf_summary.h"
#include "tools/npy.h"
#include "tools/parse_args.h"
#ifdef GKRT_HAVE_ONNX
#include <onnx/onnx_pb.h>

#include "tools/onnx/onnx_import.h"
#endif

namespace gkrt::tools {
namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The flatbuffer file identifier sits at bytes 4..7.
bool hasGkmIdentifier(const std::string& head) { return head.size() >= 8 && head.compare(4, 4, kModelFileIdentifier) == 0; }

std::string printableIdentifier(const std::string& head) {
  std::string id = head.size() >= 8 ? head.substr(4, 4) : std::string();
  for (char& ch : id) if (ch < 32 || ch > 126) ch = '?';
  return id;
}

#ifdef GKRT_HAVE_ONNX
OnnxImportOptions toOnnxOptions(const ImportOptions& o) {
  OnnxImportOptions x;
  x.input_shapes = o.input_shapes;
  x.frozen_inputs = o.frozen_inputs;
  x.dim_values = o.dim_values;
  return x;
}
#endif

[[maybe_unused]] Status noOnnx(const std::string& what) {
  return makeError(StatusCode::kUnsupported, what,
                   ": this gkrt was built without ONNX import (no libonnx-dev libprotobuf-dev at build time); convert "
                   "the model with a gkrt that has `gkrt convert`, or install them and rebuild");
}

Status neither(const std::string& what, const std::string& head, const Status& onnx_error) {
  return makeError(StatusCode::kInvalidModel, what, " is neither a gkrt model (file identifier '", printableIdentifier(head),
                   "', expected '", kModelFileIdentifier, "') nor an ONNX model (", onnx_error.message(), ")");
}

}  // namespace

void ImportArgs::addTo(CLI::App* cmd) {
  cmd->add_option("--freeze", freeze, "an .onnx model: fix a graph input to the values of name=file.npy (shape parameters)");
  cmd->add_option("--dim", dims, "an .onnx model: fix a named dim at a size in every input, name=64");
  cmd->add_option("--gguf-activations", gguf_activations,
                  "a .gguf model: the activations of its quantized matmuls, int8 per block as llama.cpp (default) or float32");
}

StatusOr<ImportOptions> ImportArgs::parse() const {
  ImportOptions o;
  for (const std::string& spec : input_shapes) {
    std::string name;
    Shape shape;
    RETURN_IF_ERROR(parseShapeAssignment(spec, &name, &shape));
    o.input_shapes[name] = shape;
  }
  for (const std::string& spec : freeze) {
    std::string name, path;
    RETURN_IF_ERROR(splitAssignment(spec, "--freeze", &name, &path));
    auto t = readNpy(path);
    if (!t.ok()) return t.status().withContext("--freeze " + name);
    o.frozen_inputs[name] = std::move(t).value();
  }
  if (gguf_activations != "int8" && gguf_activations != "float32") {
    return makeError(StatusCode::kInvalidArgument, "--gguf-activations ", gguf_activations, ": give int8 or float32");
  }
  o.gguf_int8_activations = gguf_activations == "int8";
  for (const std::string& spec : dims) {
    std::string name, size;
    RETURN_IF_ERROR(splitAssignment(spec, "--dim", &name, &size));
    char* end = nullptr;
    const long long v = std::strtoll(size.c_str(), &end, 10);
    if (size.empty() || *end != '\0' || v < 0) {
      return makeError(StatusCode::kInvalidArgument, "--dim ", spec, ": give NAME=SIZE with a size >= 0, e.g. --dim kv_cache_dim=64");
    }
    o.dim_values[name] = v;
  }
  return o;
}

bool onnxImportBuiltIn() {
#ifdef GKRT_HAVE_ONNX
  return true;
#else
  return false;
#endif
}

namespace {
StatusOr<ir::Graph> importOnnxUnnamed(const std::string& path, const ImportOptions& options) {
#ifdef GKRT_HAVE_ONNX
  return importOnnxFile(path, toOnnxOptions(options));
#else
  return noOnnx(path);
#endif
}
}  // namespace

StatusOr<ir::Graph> importModel(const std::string& path, const ImportOptions& options) {
  if (gguf::looksLikeGguf(path)) {
    if (!options.input_shapes.empty() || !options.frozen_inputs.empty() || !options.dim_values.empty()) {
      return makeError(StatusCode::kInvalidArgument, "'", path, "' is a GGUF file: --input-shape, --freeze and --dim are for "
                       "ONNX models (a GGUF decoder keeps its sequence and cache dims dynamic)");
    }
    gguf::ImportOptions g;
    g.int8_activations = options.gguf_int8_activations;
    return gguf::importGguf(path, g);
  }
  return importOnnx(path, options);
}

StatusOr<ir::Graph> importOnnx(const std::string& path, const ImportOptions& options) {
  auto g = importOnnxUnnamed(path, options);
  if (!g.ok() && onnxImportBuiltIn()) return g.status().withContext(path);
  return g;
}

StatusOr<ir::Graph> loadAnyModel(const std::string& path, const ImportArgs& args) {
  ASSIGN_OR_RETURN(ImportOptions o, args.parse());
  return loadAnyModel(path, o);
}

StatusOr<ir::Graph> loadAnyModel(const std::string& path, const ImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return loadModelFile(path);  // its error names the path and the cause
  std::string head(8, '\0');
  f.read(head.data(), 8);
  head.resize(static_cast<size_t>(f.gcount()));
  if (hasGkmIdentifier(head) || endsWith(path, ".gkm")) return loadModelFile(path);
  if (head.compare(0, 4, "GGUF") == 0) return importModel(path, options);
  if (endsWith(path, ".onnx") || !onnxImportBuiltIn()) return importOnnx(path, options);
  auto g = importOnnxUnnamed(path, options);
  if (g.ok()) return g;
  return neither("'" + path + "'", head, g.status());
}

StatusOr<ir::Graph> loadAnyModelBytes(const std::string& bytes, const ImportOptions& options) {
  if (hasGkmIdentifier(bytes.substr(0, 8))) return loadModelBuffer(bytes.data(), bytes.size());
#ifdef GKRT_HAVE_ONNX
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return neither("the model bytes", bytes.substr(0, 8), makeError(StatusCode::kInvalidModel, "protobuf parse failed"));
  }
  auto g = importOnnxModel(model, ".", toOnnxOptions(options));
  if (!g.ok() && !model.has_graph()) return neither("the model bytes", bytes.substr(0, 8), g.status());
  return g;
#else
  return noOnnx("the model bytes");
#endif
}

}  // namespace gkrt::tools
