#include "runtime/session.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/base/log.h"
#include "runtime/session_plan.h"
#include "runtime/shape_specialize.h"
#include "runtime/streamed_weights.h"

namespace gkrt {

Session::Session() = default;

StatusOr<std::unique_ptr<Session>> Session::create(const ir::Graph& model, const SessionOptions& options) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = ir::cloneGraph(model);
  RETURN_IF_ERROR(ir::validateGraph(s->model_));
  s->backend_name_ = options.backend;
  s->backend_options_ = options.backend_options;
  s->max_cached_plans_ = std::max<size_t>(1, options.max_cached_plans);
  if (options.max_memory_bytes == 0) {
    return makeError(StatusCode::kInvalidArgument, "SessionOptions::max_memory_bytes is 0; give a positive cap "
                     "(the default is ", formatByteSize(defaultMaxMemoryBytes()), ", three quarters of physical memory)");
  }
  s->max_memory_bytes_ = options.max_memory_bytes;
  for (const std::string& name : options.shared_inputs) s->shared_[name] = SharedBuffer{};
  {  // an unknown backend or missing device is reported now, not at the first run
    ASSIGN_OR_RETURN(auto probe, createBackend(options.backend, options.backend_options));
    if (options.huge_page_weights) {
      const size_t copied = placeStreamedWeights(s->model_, *probe);  // every plan shares the copies
      if (copied) GKRT_LOG_INFO("streamed weights: ", formatByteSize(copied), " copied into huge pages");
    }
  }
  if (options.fusion) {
    s->fusion_options_ = *options.fusion;
  } else {
    ASSIGN_OR_RETURN(s->fusion_options_, fusionOptionsFromEnvironment());
  }
  for (const auto& [name, shape] : options.input_shapes) {
    if (s->findInput(name) < 0) {
      return makeError(StatusCode::kNotFound, "input_shapes names '", name, "', which is not a model input");
    }
  }
  RETURN_IF_ERROR(checkInputShapes(s->model_, options.input_shapes).withContext("SessionOptions::input_shapes"));
  s->describeIo();
  // Every input's shape known (declared or given): compile now, so errors surface here.
  std::map<std::string, Shape> shapes = options.input_shapes;
  bool known = true;
  for (int t : s->model_.inputs) {
    const ir::Tensor& in = s->model_.tensors[t];
    if (!shapes.count(in.name)) {
      if (isStatic(in.shape)) shapes[in.name] = in.shape;
      else known = false;
    }
  }
  if (known) RETURN_IF_ERROR(s->activate(shapes));
  return s;
}

Session::~Session() {
  active_ = nullptr;
  plans_.clear();
  for (auto& [name, b] : shared_) if (b.data) ::munmap(b.data, b.bytes);
}

int Session::findInput(const std::string& name) const {
  for (size_t k = 0; k < model_.inputs.size(); ++k) {
    if (model_.tensors[model_.inputs[k]].name == name) return static_cast<int>(k);
  }
  return -1;
}

void Session::describeIo() {
  inputs_.clear();
  outputs_.clear();
  const ir::Graph& g = active_ ? active_->graph : model_;
  if (active_) {
    inputs_ = active_->inputs;
    outputs_ = active_->outputs;
    return;
  }
  for (int t : g.inputs) inputs_.push_back({g.tensors[t].name, g.tensors[t].dtype, g.tensors[t].shape});
  for (int t : g.outputs) outputs_.push_back({g.tensors[t].name, g.tensors[t].dtype, g.tensors[t].shape});
}

std::map<std::string, Shape> Session::currentShapes() const {
  std::map<std::string, Shape> shapes;
  for (int t : model_.inputs) {
    const std::string& name = model_.tensors[t].name;
    if (active_) shapes[name] = active_->input_shapes.count(name) ? active_->input_shapes.at(name) : model_.tensors[t].shape;
    else if (isStatic(model_.tensors[t].shape)) shapes[name] = model_.tensors[t].shape;
  }
  for (const auto& [name, value] : staged_) shapes[name] = value.shape();
  return shapes;
}

StatusOr<Session::Plan*> Session::planFor(const std::map<std::string, Shape>& shapes) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if ((*it)->input_shapes == shapes) {
      plans_.splice(plans_.begin(), plans_, it);  // most recently used first
      return plans_.front().get();
    }
  }
  ASSIGN_OR_RETURN(auto plan, Plan::compile(model_, shapes, backend_name_, backend_options_, fusion_options_, max_memory_bytes_,
                                            &shared_));
  ++plans_compiled_;
  plans_.push_front(std::move(plan));
  return plans_.front().get();
}

Status Session::activate(const std::map<std::string, Shape>& overrides) {
  std::map<std::string, Shape> shapes = currentShapes();
  for (const auto& [name, shape] : overrides) shapes[name] = shape;
  for (int t : model_.inputs) {
    const ir::Tensor& in = model_.tensors[t];
    if (!shapes.count(in.name)) {
      return makeError(StatusCode::kInvalidArgument, "input '", in.name, "' has shape ", shapeToString(in.shape),
                       " with unknown dims and was not set; setInput it (or give SessionOptions::input_shapes, "
                       "resizeInput, `gkrt run --input`)");
    }
  }
  RETURN_IF_ERROR(checkInputShapes(model_, shapes));
  ASSIGN_OR_RETURN(Plan* next, planFor(shapes));
  if (next != active_) {
    // Inputs not set anew keep their values: copied over from the plan they were set in.
    for (size_t k = 0; k < model_.inputs.size() && active_; ++k) {
      const std::string& name = model_.tensors[model_.inputs[k]].name;
      if (staged_.count(name) || overrides.count(name) || !next->inputBuffer(k) || !active_->inputBuffer(k)) continue;
      if (next->inputBuffer(k) == active_->inputBuffer(k)) continue;  // a shared input: the same bytes
      const size_t bytes = dtypeSize(active_->inputs[k].dtype) * size_t(numElements(active_->inputs[k].shape));
      ASSIGN_OR_RETURN(bool direct, next->backend->copyFromBackend(*active_->backend, next->inputBuffer(k), active_->inputBuffer(k), bytes));
      if (direct) continue;  // device to device (a generator's caches between its prompt and decode plans)
      HostTensor value(active_->inputs[k].dtype, active_->inputs[k].shape);
      RETURN_IF_ERROR(active_->backend->copyToHost(value.data(), active_->inputBuffer(k), value.bytes()));
      RETURN_IF_ERROR(next->backend->copyToDevice(next->inputBuffer(k), value.data(), value.bytes()));
    }
    active_ = next;
    while (plans_.size() > max_cached_plans_) plans_.pop_back();  // the active plan is at the front
  }
  for (size_t k = 0; k < model_.inputs.size(); ++k) {
    auto it = staged_.find(model_.tensors[model_.inputs[k]].name);
    if (it == staged_.end() || !active_->inputBuffer(k)) continue;
    RETURN_IF_ERROR(active_->backend->copyToDevice(active_->inputBuffer(k), it->second.data(), it->second.bytes()));
  }
  staged_.clear();
  describeIo();
  return Status::Ok();
}

Status Session::setInput(const std::string& name, const HostTensor& value) {
  const int k = findInput(name);
  if (k < 0) {
    std::string valid;
    for (const TensorInfo& i : inputs_) valid += (valid.empty() ? "" : ", ") + i.name;
    return makeError(StatusCode::kNotFound, "the model has no input '", name, "'; inputs: ", valid);
  }
  const ir::Tensor& declared = model_.tensors[model_.inputs[k]];
  if (value.dtype() != declared.dtype) {
    return makeError(StatusCode::kInvalidArgument, "input '", name, "' is ", dtypeName(declared.dtype), ", got ",
                     dtypeName(value.dtype()));
  }
  if (active_ && value.shape() == active_->inputs[k].shape) {  // the current plan's size: straight in
    staged_.erase(name);
    if (!active_->inputBuffer(size_t(k))) return Status::Ok();  // an input the model never reads
    return active_->backend->copyToDevice(active_->inputBuffer(size_t(k)), value.data(), value.bytes());
  }
  RETURN_IF_ERROR(checkInputShapes(model_, {{name, value.shape()}}));
  staged_[name] = value;  // a new size: the plan for it is picked at run()
  return Status::Ok();
}

Status Session::resizeInput(const std::string& name, const Shape& shape) {
  if (findInput(name) < 0) return makeError(StatusCode::kNotFound, "the model has no input '", name, "'");
  RETURN_IF_ERROR(checkInputShapes(model_, {{name, shape}}));
  staged_.erase(name);
  return activate({{name, shape}});
}

Status Session::resizeInputs(const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, shape] : shapes) {
    if (findInput(name) < 0) return makeError(StatusCode::kNotFound, "the model has no input '", name, "'");
    staged_.erase(name);
  }
  RETURN_IF_ERROR(checkInputShapes(model_, shapes));
  return activate(shapes);
}

int Session::outputIndex(const std::string& name) const {
  for (size_t k = 0; k < model_.outputs.size(); ++k) {
    if (model_.tensors[model_.outputs[k]].name == name) return static_cast<int>(k);
  }
  return -1;
}

Status Session::run() {
  if (!active_ || !staged_.empty()) RETURN_IF_ERROR(activate({}));
  Plan& p = *active_;
  if (!fusion_options_.enable_debug_mode) {
    RETURN_IF_ERROR(p.backend->runLaunches(
        [&p] {
          for (Plan::Step& step : p.steps) RETURN_IF_ERROR(step.kernel->launch(step.inputs, step.outputs, p.workspace));
          return Status::Ok();
        },
        p.replayable));
    return p.backend->synchronize();
  }
  // enable_debug_mode: synchronise after every launch and name the kernel that failed.
  for (size_t i = 0; i < p.steps.size(); ++i) {
    Plan::Step& step = p.steps[i];
    Status s = step.kernel->launch(step.inputs, step.outputs, p.workspace);
    if (s.ok()) s = p.backend->synchronize();
    if (s.ok()) continue;
    const ir::Node& n = p.graph.nodes[i];
    std::string what = "kernel " + std::to_string(i) + " " + ir::describeNode(p.graph, static_cast<int>(i));
    if (n.subgraph) {
      what += " fusing [";
      for (size_t k = 0; k < n.subgraph->nodes.size(); ++k) what += (k ? ", " : "") + std::string(n.subgraph->nodes[k].op->name);
      what += "]";
    }
    what += " with inputs (";
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      what += (k ? ", " : "") + std::string(dtypeName(step.inputs[k].dtype)) + " " + shapeToString(step.inputs[k].shape);
    }
    return s.withContext(what + ") failed");
  }
  return Status::Ok();
}

std::vector<Session::KernelInfo> Session::kernelInfos() const {
  std::vector<KernelInfo> infos;
  if (!active_) return infos;
  const Plan& p = *active_;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    KernelInfo k;
    k.name = ir::describeNode(p.graph, static_cast<int>(i));
    k.fused = p.graph.nodes[i].subgraph != nullptr;
    k.backend = p.steps[i].backend;
    if (p.steps[i].kernel) {
      k.detail = p.steps[i].kernel->detail();
      k.reorders = p.steps[i].kernel->reorders();
      k.slow_path = p.steps[i].kernel->slowPath();
    }
    for (const TensorView& v : p.steps[i].inputs) k.bytes_moved += v.present() ? v.size() * dtypeSize(v.dtype) : 0;
    for (const MutableTensorView& v : p.steps[i].outputs) k.bytes_moved += numElements(v.shape) * dtypeSize(v.dtype);
    infos.push_back(std::move(k));
  }
  return infos;
}

Status Session::runProfiled(std::vector<double>* kernel_seconds) {
  if (!active_ || !staged_.empty()) RETURN_IF_ERROR(activate({}));
  Plan& p = *active_;
  kernel_seconds->assign(p.steps.size(), 0.0);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    // Device timers where the backend has them (not for a fallback's host kernels).
    const bool device_timer = p.steps[i].backend == std::string(p.backend->name()) && p.backend->startKernelTimer();
    const auto start = std::chrono::steady_clock::now();
    Status launched = p.steps[i].kernel->launch(p.steps[i].inputs, p.steps[i].outputs, p.workspace);
    if (launched.ok()) launched = p.backend->synchronize();
    (*kernel_seconds)[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (device_timer) {
      StatusOr<double> device_seconds = p.backend->stopKernelTimer();  // always stops recording
      RETURN_IF_ERROR(launched);
      ASSIGN_OR_RETURN((*kernel_seconds)[i], std::move(device_seconds));
    }
    RETURN_IF_ERROR(launched);
  }
  return Status::Ok();
}

StatusOr<HostTensor> Session::output(const std::string& name) const {
  for (size_t k = 0; active_ && k < active_->graph.outputs.size(); ++k) {
    const ir::Graph& g = active_->graph;
    const int t = g.outputs[k];
    if (g.tensors[t].name != name) continue;
    HostTensor out(g.tensors[t].dtype, g.tensors[t].shape);
    const void* src = active_->buffers[t] ? active_->buffers[t] : g.tensors[t].constant->data;
    RETURN_IF_ERROR(active_->backend->copyToHost(out.data(), src, out.bytes()));
    return out;
  }
  for (const TensorInfo& o : outputs_) {
    if (!active_ && o.name == name) {
      return makeError(StatusCode::kInvalidArgument, "output '", name, "' is not computed yet; run() first");
    }
  }
  std::string valid;
  for (const TensorInfo& o : outputs_) valid += (valid.empty() ? "" : ", ") + o.name;
  return makeError(StatusCode::kNotFound, "the model has no output '", name, "'; outputs: ", valid);
}

Status Session::setInputData(size_t k, const void* data, size_t bytes) {
  if (!active_) RETURN_IF_ERROR(activate({}));
  if (!bytes || !active_->inputBuffer(k)) return Status::Ok();
  return active_->backend->copyToDevice(active_->inputBuffer(k), data, bytes);
}

Status Session::copyOutputData(size_t k, void* data, size_t bytes) const {
  if (!active_) return makeError(StatusCode::kInvalidArgument, "output ", k, " is not computed yet; run() first");
  const ir::Graph& g = active_->graph;
  const int t = g.outputs[k];
  if (!bytes) return Status::Ok();
  const void* src = active_->buffers[t] ? active_->buffers[t] : g.tensors[t].constant->data;
  return active_->backend->copyToHost(data, src, bytes);
}

size_t Session::kernelCount() const { return active_ ? active_->steps.size() : 0; }
size_t Session::allocatedBytes() const { return active_ ? active_->allocated_bytes : 0; }
size_t Session::peakBytes() const { return active_ ? active_->arena_bytes : 0; }
size_t Session::tensorBytes() const { return active_ ? active_->tensor_bytes : 0; }
const ir::Graph& Session::compiledGraph() const { return active_ ? active_->graph : model_; }
const FusionReport& Session::fusionReport() const {
  static const FusionReport kNone;
  return active_ ? active_->fusion_report : kNone;
}

}  // namespace gkrt
