#include "tests/cuda/onnx_test_model.h"

#include <filesystem>
#include <vector>

#include "tools/onnx/onnx_import.h"

namespace gkrt {

StatusOr<ir::Graph> loadOnnxTestModel(const std::string& path) {
  const std::string data = (std::filesystem::path(path).parent_path() / "test_data_set_0").string();
  std::vector<HostTensor> inputs;
  for (int j = 0;; ++j) {
    const std::string file = data + "/input_" + std::to_string(j) + ".pb";
    if (!std::filesystem::exists(file)) break;
    ASSIGN_OR_RETURN(HostTensor t, readTensorProtoFile(file));
    inputs.push_back(std::move(t));
  }
  OnnxImportOptions o;
  for (const HostTensor& in : inputs) o.positional_input_shapes.push_back(in.shape());
  return importOnnxFile(path, o);
}

}  // namespace gkrt
