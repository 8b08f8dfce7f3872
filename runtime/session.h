// A model compiled for one backend, ready to run.
//
//   ASSIGN_OR_RETURN(ir::Graph model, loadModelFile("net.gkm"));
//   SessionOptions opts;
//   opts.backend = "cpu";
//   ASSIGN_OR_RETURN(auto session, Session::create(model, opts));
//   RETURN_IF_ERROR(session->setInput("x", HostTensor::fromFloats({4, 4}, values)));
//   RETURN_IF_ERROR(session->run());
//   ASSIGN_OR_RETURN(HostTensor y, session->output("result"));
//
// create() does all checking, kernel preparation and allocation; run() only launches
// kernels. resizeInput() re-infers shapes and recompiles.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/host_tensor.h"
#include "runtime/ir/graph.h"

namespace gkrt {

struct SessionOptions {
  std::string backend = "cpu";
  BackendOptions backend_options;
  // Shapes for inputs with unknown (symbolic) dims, by input name.
  std::map<std::string, Shape> input_shapes;
  // Graph kernel fusion; unset = defaults overridden by MS_DEV_GRAPH_KERNEL_FLAGS.
  std::optional<FusionOptions> fusion;
};

struct TensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
};

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> create(const ir::Graph& model, const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::string& backendName() const { return backend_name_; }

  // Copies `value` into input `name`; its dtype and shape must match the input's.
  Status setInput(const std::string& name, const HostTensor& value);
  // Gives input `name` a new shape (only dims declared unknown may change).
  Status resizeInput(const std::string& name, const Shape& shape);
  Status run();
  StatusOr<HostTensor> output(const std::string& name) const;

  // Kernels launched per run, the fused graph they were compiled from, and what
  // fusion did.
  size_t kernelCount() const { return steps_.size(); }
  // Per kernel: its node, whether it is a fused cluster, and the bytes it reads and
  // writes (inputs + outputs, each once); for `gkrt bench`.
  struct KernelInfo {
    std::string name;
    bool fused = false;
    size_t bytes_moved = 0;
    std::string backend;  // the backend that runs it (a fallback's name for unsupported nodes)
  };
  std::vector<KernelInfo> kernelInfos() const;
  // Runs once, timing every kernel (seconds, in kernelInfos() order): by the backend's
  // device timer where it has one (opencl: profiling events), else by the host clock
  // around the launch and a synchronize().
  Status runProfiled(std::vector<double>* kernel_seconds);
  // Bytes the session allocated: the activation arena (inputs, outputs and
  // intermediates at planned offsets; constants are used in place) and the kernels'
  // workspace.
  size_t allocatedBytes() const { return allocated_bytes_; }
  // The arena's size: the peak of live activation bytes under the memory plan (device
  // backends: the bytes of every tensor, constants included, each in its own buffer).
  size_t peakBytes() const { return arena_bytes_; }
  // What the activations would take without the plan (each tensor its own bytes).
  size_t tensorBytes() const { return tensor_bytes_; }
  const ir::Graph& compiledGraph() const { return graph_; }
  const FusionReport& fusionReport() const { return fusion_report_; }

 private:
  Session() = default;
  Status compile();
  void release();
  Status allocateTensors(const std::vector<char>& referenced);
  int findInput(const std::string& name) const;

  struct Step {
    std::unique_ptr<Kernel> kernel;
    const char* backend = "";
    std::vector<TensorView> inputs;
    std::vector<MutableTensorView> outputs;
  };

  ir::Graph model_;
  ir::Graph graph_;
  std::string backend_name_;
  FusionOptions fusion_options_;
  FusionReport fusion_report_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> fallback_;
  BackendOptions backend_options_;
  std::map<std::string, Shape> input_shapes_;
  std::vector<TensorInfo> inputs_, outputs_;
  std::vector<void*> buffers_;  // per tensor; null for constants used in place
  std::vector<void*> owned_;    // what release() gives back
  void* workspace_ = nullptr;
  size_t allocated_bytes_ = 0, arena_bytes_ = 0, tensor_bytes_ = 0;
  std::vector<Step> steps_;
};

}  // namespace gkrt
