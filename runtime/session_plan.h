// One compiled specialisation of a session's model: the graph for one set of input
// shapes, fused for the backend, memory planned, every kernel compiled. A session
// keeps one (static shapes) or a few (dynamic dims) of these.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/memory_plan.h"
#include "runtime/session.h"

namespace gkrt {

struct Session::Plan {
  struct Step {
    std::unique_ptr<Kernel> kernel;
    const char* backend = "";
    std::vector<TensorView> inputs;
    std::vector<MutableTensorView> outputs;
  };

  std::map<std::string, Shape> input_shapes;  // the signature this plan was compiled for
  ir::Graph graph;
  FusionReport fusion_report;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Backend> fallback;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<void*> buffers;  // per tensor; null for constants used in place
  std::vector<void*> owned;    // what the destructor gives back
  void* workspace = nullptr;
  size_t allocated_bytes = 0, arena_bytes = 0, tensor_bytes = 0;
  size_t max_memory_bytes = 0;  // SessionOptions::max_memory_bytes
  std::vector<Step> steps;
  bool replayable = true;  // every step runs on `backend` (Backend::runLaunches)

  ~Plan();
  // Specialises `model` to `shapes`, fuses, plans memory and compiles every kernel.
  static StatusOr<std::unique_ptr<Plan>> compile(const ir::Graph& model, const std::map<std::string, Shape>& shapes,
                                                 const std::string& backend_name, const BackendOptions& backend_options,
                                                 const FusionOptions& fusion_options, size_t max_memory_bytes,
                                                 std::map<std::string, SharedBuffer>* shared = nullptr);
  // The device/host buffer of graph input `k`.
  void* inputBuffer(size_t k) const { return buffers[graph.inputs[k]]; }

 private:
  Status allocateTensors(const std::vector<char>& referenced, size_t workspace_bytes,
                         std::map<std::string, SharedBuffer>* shared);
  Status copyConstantsToDevice(const std::vector<char>& referenced);
  std::vector<char> placeInsideOutputs(const std::vector<int>& request_of, const std::vector<char>& pinned,
                                       std::vector<BufferRequest>* requests) const;
};

}  // namespace gkrt
