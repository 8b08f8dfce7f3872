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
// kernels.
//
// Models with dynamic dims (`?` in `gkrt info`) accept any input size their declared
// shapes allow: a session compiles one plan per set of input shapes (shapes inferred,
// shape arithmetic folded, fused, memory planned, kernels compiled) the first time it
// runs with them, and keeps the last `max_cached_plans` plans, so alternating sizes
// switch plans without recompiling. setInput() with a new size is staged; the next
// run() picks (or compiles) the plan for the inputs' sizes. Static dims, ranks and dim
// names shared by several inputs are checked on every path that sets shapes.
#pragma once

#include <list>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/host_tensor.h"
#include "runtime/ir/graph.h"
#include "runtime/resource_limits.h"

namespace gkrt {

struct SessionOptions {
  std::string backend = "cpu";
  BackendOptions backend_options;
  // Shapes for inputs with unknown (symbolic) dims, by input name: the first plan is
  // compiled by create() for them (otherwise at the first run()).
  std::map<std::string, Shape> input_shapes;
  // Graph kernel fusion; unset = defaults overridden by MS_DEV_GRAPH_KERNEL_FLAGS.
  std::optional<FusionOptions> fusion;
  // Compiled plans kept for models with dynamic dims (one per set of input shapes).
  size_t max_cached_plans = 4;
  // A plan whose tensors, arena, workspace or device buffers need more is refused
  // before they are allocated (runtime/resource_limits.h; gkrt run --max-memory).
  size_t max_memory_bytes = defaultMaxMemoryBytes();
  // Inputs whose bytes every plan shares (a generator's KV caches): on host backends one
  // buffer each, zeroed when made and kept across plan switches without a copy (other
  // backends: a buffer a plan, copied over as any input).
  std::set<std::string> shared_inputs;
  // Weights the backend's kernels stream as they are (on the cpu, block-quantized
  // matmuls') copied once into huge-page memory (runtime/streamed_weights.h); false keeps
  // them where the model has them (no copy: less memory).
  bool huge_page_weights = true;
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

  // The inputs and outputs of the current plan (before the first plan: as declared,
  // -1 for dims not known yet).
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::string& backendName() const { return backend_name_; }

  // Copies `value` into input `name`. Its dtype must be the input's; its shape the
  // input's, or any the declared shape allows (a new size takes effect at run()).
  Status setInput(const std::string& name, const HostTensor& value);
  // Gives input `name` a new shape now (only dims declared unknown may change).
  Status resizeInput(const std::string& name, const Shape& shape);
  // Several at once (inputs sharing a named dim change together); one plan switch.
  Status resizeInputs(const std::map<std::string, Shape>& shapes);
  // Position of input / output `name` in inputs() / outputs(), or -1.
  int inputIndex(const std::string& name) const { return findInput(name); }
  int outputIndex(const std::string& name) const;
  Status run();
  StatusOr<HostTensor> output(const std::string& name) const;
  // Input/output k by position, `bytes` exactly its size, no checks: for kernels that
  // run a child session (control flow, runtime/control_flow_kernels.h).
  Status setInputData(size_t k, const void* data, size_t bytes);
  Status copyOutputData(size_t k, void* data, size_t bytes) const;

  // Plans compiled so far (a model with static shapes: 1) and plans kept now.
  size_t plansCompiled() const { return plans_compiled_; }
  size_t plansCached() const { return plans_.size(); }

  // Kernels launched per run, the fused graph they were compiled from, and what
  // fusion did (of the current plan).
  size_t kernelCount() const;
  // Per kernel: its node, whether it is a fused cluster, and the bytes it reads and
  // writes (inputs + outputs, each once); for `gkrt bench`.
  struct KernelInfo {
    std::string name;
    bool fused = false;
    size_t bytes_moved = 0;
    std::string backend;  // the backend that runs it (a fallback's name for unsupported nodes)
    std::string detail;   // Kernel::detail(): implementation, reorders
    int reorders = 0;     // layout reorders per run (Kernel::reorders())
    bool slow_path = false;  // a library's reference-grade code (Kernel::slowPath())
  };
  std::vector<KernelInfo> kernelInfos() const;
  // Runs once, timing every kernel (seconds, in kernelInfos() order): by the backend's
  // device timer where it has one (opencl: profiling events), else by the host clock
  // around the launch and a synchronize().
  Status runProfiled(std::vector<double>* kernel_seconds);
  // Bytes the session allocated: the activation arena (inputs, outputs and
  // intermediates at planned offsets; constants are used in place), the kernels'
  // workspace and control-flow nodes' working memory (not their child sessions').
  size_t allocatedBytes() const;
  // The arena's size: the peak of live activation bytes under the memory plan (device
  // backends: the bytes of every tensor, constants included, each in its own buffer).
  size_t peakBytes() const;
  // What the activations would take without the plan (each tensor its own bytes).
  size_t tensorBytes() const;
  const ir::Graph& compiledGraph() const;
  const FusionReport& fusionReport() const;

  struct Plan;  // one compiled specialisation (runtime/session_plan.h)
  // SessionOptions::shared_inputs on this session's plans: name -> bytes (made on first use).
  struct SharedBuffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  // Whether input `name` lives in a buffer all plans share (it starts as zeros).
  bool sharesInput(const std::string& name) const { return shared_.count(name) && shared_.at(name).data; }

 private:
  Session();
  // The plan for these input shapes: cached, or compiled now.
  StatusOr<Plan*> planFor(const std::map<std::string, Shape>& shapes);
  // Makes the plan for the inputs' current and staged shapes the active one, moving
  // input data over.
  Status activate(const std::map<std::string, Shape>& overrides);
  std::map<std::string, Shape> currentShapes() const;
  int findInput(const std::string& name) const;
  void describeIo();

  ir::Graph model_;
  std::string backend_name_;
  BackendOptions backend_options_;
  FusionOptions fusion_options_;
  size_t max_cached_plans_ = 4;
  size_t max_memory_bytes_ = 0;
  std::list<std::unique_ptr<Plan>> plans_;  // most recently used first
  Plan* active_ = nullptr;
  size_t plans_compiled_ = 0;
  std::map<std::string, HostTensor> staged_;  // inputs set with a new size, for the next run()
  std::map<std::string, SharedBuffer> shared_;  // SessionOptions::shared_inputs
  std::vector<TensorInfo> inputs_, outputs_;
};

}  // namespace gkrt
