#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/ir/op_def.h"
#include "runtime/device_fallback.h"
#include "runtime/memory_plan.h"
#include "runtime/log.h"

namespace gkrt {

StatusOr<std::unique_ptr<Session>> Session::create(const ir::Graph& model, const SessionOptions& options) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = ir::cloneGraph(model);
  RETURN_IF_ERROR(ir::validateGraph(s->model_));
  s->backend_name_ = options.backend;
  s->backend_options_ = options.backend_options;
  ASSIGN_OR_RETURN(s->backend_, createBackend(options.backend, options.backend_options));
  if (options.fusion) {
    s->fusion_options_ = *options.fusion;
  } else {
    ASSIGN_OR_RETURN(s->fusion_options_, fusionOptionsFromEnvironment());
  }
  for (const auto& [name, shape] : options.input_shapes) {
    if (s->findInput(name) < 0) {
      return makeError(StatusCode::kNotFound, "input_shapes names '", name, "', which is not a model input");
    }
    s->input_shapes_[name] = shape;
  }
  RETURN_IF_ERROR(s->compile());
  return s;
}

Session::~Session() { release(); }

void Session::release() {
  allocated_bytes_ = arena_bytes_ = tensor_bytes_ = 0;
  for (void* p : owned_) backend_->deallocate(p);
  owned_.clear();
  buffers_.clear();
  if (workspace_) backend_->deallocate(workspace_);
  workspace_ = nullptr;
  steps_.clear();
}

int Session::findInput(const std::string& name) const {
  for (size_t k = 0; k < model_.inputs.size(); ++k) {
    if (model_.tensors[model_.inputs[k]].name == name) return static_cast<int>(k);
  }
  return -1;
}

Status Session::compile() {
  release();
  graph_ = ir::cloneGraph(model_);
  for (int t : graph_.inputs) {
    ir::Tensor& in = graph_.tensors[t];
    auto it = input_shapes_.find(in.name);
    if (it != input_shapes_.end()) in.shape = it->second;
    if (!isStatic(in.shape)) {
      return makeError(StatusCode::kInvalidArgument, "input '", in.name, "' has shape ", shapeToString(in.shape),
                       " with unknown dims; give its shape (SessionOptions::input_shapes, resizeInput, or "
                       "`gkrt run --input-shape`)");
    }
  }
  RETURN_IF_ERROR(ir::inferShapes(graph_));
  const FusionColumn column = fusion_options_.profile.value_or(backend_->fusionColumn());
  ASSIGN_OR_RETURN(fusion_report_, runFusionPipeline(graph_, fusion_options_, column, [this](const ir::Node& n) {
                     return backend_->supports(graph_, n);
                   }));
  inputs_.clear();
  outputs_.clear();
  for (int t : graph_.inputs) inputs_.push_back({graph_.tensors[t].name, graph_.tensors[t].dtype, graph_.tensors[t].shape});
  for (int t : graph_.outputs) outputs_.push_back({graph_.tensors[t].name, graph_.tensors[t].dtype, graph_.tensors[t].shape});

  std::vector<char> referenced(graph_.tensors.size(), 0);  // fusion leaves unreferenced tensors behind
  for (const ir::Node& n : graph_.nodes) {
    for (int t : n.inputs) if (t >= 0) referenced[t] = 1;
    for (int t : n.outputs) referenced[t] = 1;
  }
  for (int t : graph_.inputs) referenced[t] = 1;
  for (int t : graph_.outputs) referenced[t] = 1;
  // Kernels first: their in-place hints shape the memory plan.
  size_t workspace = 0;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const ir::Node& node = graph_.nodes[i];
    Backend* target = backend_.get();
    if (!backend_->supports(graph_, node)) {
      // Host backends fall back to the reference kernels; device backends to the cpu
      // backend, with copies in and out.
      if (!fallback_) {
        ASSIGN_OR_RETURN(fallback_, createBackend(backend_->isHost() ? "reference" : "cpu", backend_options_));
      }
      target = fallback_.get();
      const std::string why = backend_->unsupportedReason(graph_, node);
      GKRT_LOG_INFO("backend ", backend_->name(), " does not support ", ir::describeNode(graph_, int(i)),
                    why.empty() ? "" : " (" + why + ")", "; it runs on the ", fallback_->name(), " backend");
    }
    Step step;
    step.backend = target->name();
    auto kernel = target->compile(graph_, node);
    if (!kernel.ok()) return kernel.status().withContext("compiling " + ir::describeNode(graph_, int(i)));
    step.kernel = std::move(kernel).value();
    if (target != backend_.get() && !backend_->isHost()) {
      step.kernel = makeHostFallbackKernel(*backend_, std::move(step.kernel), graph_, node);
    }
    workspace = std::max(workspace, step.kernel->workspaceBytes());
    steps_.push_back(std::move(step));
  }
  RETURN_IF_ERROR(backend_->finishCompile());
  if (fallback_) RETURN_IF_ERROR(fallback_->finishCompile());
  RETURN_IF_ERROR(allocateTensors(referenced));
  auto data_of = [&](int t) -> void* {
    const ir::Tensor& tensor = graph_.tensors[t];
    if (buffers_[t]) return buffers_[t];
    return const_cast<uint8_t*>(tensor.constant->data);
  };
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const ir::Node& node = graph_.nodes[i];
    Step& step = steps_[i];
    for (int t : node.inputs) {
      if (t < 0) { step.inputs.push_back({}); continue; }
      step.inputs.push_back({graph_.tensors[t].dtype, graph_.tensors[t].shape, data_of(t)});
    }
    for (int t : node.outputs) step.outputs.push_back({graph_.tensors[t].dtype, graph_.tensors[t].shape, data_of(t)});
  }
  if (workspace) {
    ASSIGN_OR_RETURN(workspace_, backend_->allocate(workspace));
    allocated_bytes_ += workspace;
  }
  GKRT_LOG_INFO("session compiled for ", backend_->name(), ": ", steps_.size(), " kernels");
  return Status::Ok();
}

// Host backends: one arena, offsets from the memory plan (constants used in place).
// Device backends: one allocation per tensor, constants copied over.
Status Session::allocateTensors(const std::vector<char>& referenced) {
  buffers_.assign(graph_.tensors.size(), nullptr);
  auto bytes_of = [&](size_t t) {
    return static_cast<size_t>(numElements(graph_.tensors[t].shape)) * dtypeSize(graph_.tensors[t].dtype);
  };
  if (!backend_->isHost()) {
    for (size_t t = 0; t < graph_.tensors.size(); ++t) {
      const ir::Tensor& tensor = graph_.tensors[t];
      if (!referenced[t]) continue;
      ASSIGN_OR_RETURN(buffers_[t], backend_->allocate(bytes_of(t)));
      owned_.push_back(buffers_[t]);
      allocated_bytes_ += bytes_of(t);
      tensor_bytes_ += bytes_of(t);
      if (tensor.isConstant()) RETURN_IF_ERROR(backend_->copyToDevice(buffers_[t], tensor.constant->data, bytes_of(t)));
    }
    arena_bytes_ = tensor_bytes_;  // no plan on devices yet: every tensor its own buffer
    return Status::Ok();
  }
  const int steps = static_cast<int>(graph_.nodes.size());
  std::vector<int> request_of(graph_.tensors.size(), -1);
  std::vector<BufferRequest> requests;
  for (size_t t = 0; t < graph_.tensors.size(); ++t) {
    if (!referenced[t] || graph_.tensors[t].isConstant()) continue;
    request_of[t] = static_cast<int>(requests.size());
    requests.push_back({bytes_of(t), steps, -1, -1});
    tensor_bytes_ += bytes_of(t);
  }
  std::vector<char> pinned(graph_.tensors.size(), 0);  // inputs and outputs keep their bytes
  for (int t : graph_.inputs) {  // set before run(), kept across runs
    pinned[t] = 1;
    if (request_of[t] < 0) continue;  // an input that is also an initializer
    requests[size_t(request_of[t])].first = -1;
    requests[size_t(request_of[t])].last = steps;
  }
  for (int t : graph_.outputs) {
    pinned[t] = 1;
    if (request_of[t] < 0) continue;
    requests[size_t(request_of[t])].last = steps;
  }
  for (int i = 0; i < steps; ++i) {
    for (int t : graph_.nodes[i].outputs) {
      if (t < 0 || request_of[t] < 0) continue;
      BufferRequest& r = requests[size_t(request_of[t])];
      r.first = std::min(r.first, i);
      r.last = std::max(r.last, i);
    }
    for (int t : graph_.nodes[i].inputs) {
      if (t >= 0 && request_of[t] >= 0) requests[size_t(request_of[t])].last = std::max(requests[size_t(request_of[t])].last, i);
    }
  }
  for (int i = 0; i < steps; ++i) {  // in place: an input dying here hands its bytes to output 0
    const ir::Node& node = graph_.nodes[i];
    const int k = steps_[i].kernel->inPlaceInput();
    if (k < 0 || k >= static_cast<int>(node.inputs.size()) || node.outputs.empty()) continue;
    const int in = node.inputs[k], out = node.outputs[0];
    if (in < 0 || out < 0 || request_of[in] < 0 || request_of[out] < 0 || pinned[in] || pinned[out] || in == out) continue;
    BufferRequest &rin = requests[size_t(request_of[in])], &rout = requests[size_t(request_of[out])];
    if (rin.last != i || rin.bytes != rout.bytes || rout.share_with >= 0) continue;
    rout.share_with = request_of[in];
  }
  const MemoryPlan plan = planMemory(requests);
  arena_bytes_ = plan.arena_bytes;
  if (requests.empty()) return Status::Ok();
  // Never empty: tensors with no elements still get a valid address.
  ASSIGN_OR_RETURN(void* arena, backend_->allocate(std::max(arena_bytes_, kArenaAlignment)));
  owned_.push_back(arena);
  allocated_bytes_ += arena_bytes_;
  for (size_t t = 0; t < graph_.tensors.size(); ++t) {
    if (request_of[t] >= 0) buffers_[t] = static_cast<char*>(arena) + plan.offsets[size_t(request_of[t])];
  }
  return Status::Ok();
}

Status Session::setInput(const std::string& name, const HostTensor& value) {
  const int k = findInput(name);
  if (k < 0) {
    std::string valid;
    for (const TensorInfo& i : inputs_) valid += (valid.empty() ? "" : ", ") + i.name;
    return makeError(StatusCode::kNotFound, "the model has no input '", name, "'; inputs: ", valid);
  }
  const TensorInfo& info = inputs_[k];
  if (value.dtype() != info.dtype) {
    return makeError(StatusCode::kInvalidArgument, "input '", name, "' is ", dtypeName(info.dtype), ", got ",
                     dtypeName(value.dtype()));
  }
  if (value.shape() != info.shape) {
    return makeError(StatusCode::kInvalidArgument, "input '", name, "' has shape ", shapeToString(info.shape),
                     ", got ", shapeToString(value.shape()), "; resize the input first if its dims are dynamic");
  }
  return backend_->copyToDevice(buffers_[graph_.inputs[k]], value.data(), value.bytes());
}

Status Session::resizeInput(const std::string& name, const Shape& shape) {
  const int k = findInput(name);
  if (k < 0) return makeError(StatusCode::kNotFound, "the model has no input '", name, "'");
  const Shape& declared = model_.tensors[model_.inputs[k]].shape;
  bool fits = declared.size() == shape.size();
  for (size_t d = 0; fits && d < shape.size(); ++d) fits = shape[d] >= 0 && (declared[d] < 0 || declared[d] == shape[d]);
  if (!fits) {
    return makeError(StatusCode::kInvalidArgument, "input '", name, "' is declared ", shapeToString(declared),
                     "; ", shapeToString(shape), " does not fit (only dims shown as ? may change)");
  }
  const auto saved = input_shapes_;
  input_shapes_[name] = shape;
  Status s = compile();
  if (!s.ok()) {
    input_shapes_ = saved;
    Status restore = compile();
    (void)restore;
  }
  return s;
}

Status Session::run() {
  if (!fusion_options_.enable_debug_mode) {
    for (Step& step : steps_) RETURN_IF_ERROR(step.kernel->launch(step.inputs, step.outputs, workspace_));
    return backend_->synchronize();
  }
  // enable_debug_mode: synchronise after every launch and name the kernel that failed.
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& step = steps_[i];
    Status s = step.kernel->launch(step.inputs, step.outputs, workspace_);
    if (s.ok()) s = backend_->synchronize();
    if (s.ok()) continue;
    const ir::Node& n = graph_.nodes[i];
    std::string what = "kernel " + std::to_string(i) + " " + ir::describeNode(graph_, static_cast<int>(i));
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
  for (size_t i = 0; i < steps_.size(); ++i) {
    KernelInfo k;
    k.name = ir::describeNode(graph_, static_cast<int>(i));
    k.fused = graph_.nodes[i].subgraph != nullptr;
    k.backend = steps_[i].backend;
    for (const TensorView& v : steps_[i].inputs) k.bytes_moved += v.present() ? v.size() * dtypeSize(v.dtype) : 0;
    for (const MutableTensorView& v : steps_[i].outputs) k.bytes_moved += numElements(v.shape) * dtypeSize(v.dtype);
    infos.push_back(std::move(k));
  }
  return infos;
}

Status Session::runProfiled(std::vector<double>* kernel_seconds) {
  kernel_seconds->assign(steps_.size(), 0.0);
  for (size_t i = 0; i < steps_.size(); ++i) {
    // Device timers where the backend has them (not for a fallback's host kernels).
    const bool device_timer = steps_[i].backend == std::string(backend_->name()) && backend_->startKernelTimer();
    const auto start = std::chrono::steady_clock::now();
    Status launched = steps_[i].kernel->launch(steps_[i].inputs, steps_[i].outputs, workspace_);
    if (launched.ok()) launched = backend_->synchronize();
    (*kernel_seconds)[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (device_timer) {
      StatusOr<double> device_seconds = backend_->stopKernelTimer();  // always stops recording
      RETURN_IF_ERROR(launched);
      ASSIGN_OR_RETURN((*kernel_seconds)[i], std::move(device_seconds));
    }
    RETURN_IF_ERROR(launched);
  }
  return Status::Ok();
}

StatusOr<HostTensor> Session::output(const std::string& name) const {
  for (size_t k = 0; k < graph_.outputs.size(); ++k) {
    const int t = graph_.outputs[k];
    if (graph_.tensors[t].name != name) continue;
    HostTensor out(graph_.tensors[t].dtype, graph_.tensors[t].shape);
    const void* src = buffers_[t] ? buffers_[t] : graph_.tensors[t].constant->data;
    RETURN_IF_ERROR(backend_->copyToHost(out.data(), src, out.bytes()));
    return out;
  }
  std::string valid;
  for (const TensorInfo& o : outputs_) valid += (valid.empty() ? "" : ", ") + o.name;
  return makeError(StatusCode::kNotFound, "the model has no output '", name, "'; outputs: ", valid);
}

}  // namespace gkrt
