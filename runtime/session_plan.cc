#include "runtime/session_plan.h"

#include <sys/mman.h>

#include <algorithm>

#include "runtime/control_flow_kernels.h"
#include "runtime/device_fallback.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/subnormal_weights.h"
#include "runtime/base/log.h"
#include "runtime/memory_plan.h"
#include "runtime/shape_specialize.h"

namespace gkrt {

Session::Plan::~Plan() {
  steps.clear();
  for (void* p : owned) backend->deallocate(p);
  if (workspace) backend->deallocate(workspace);
}

StatusOr<std::unique_ptr<Session::Plan>> Session::Plan::compile(const ir::Graph& model,
                                                                const std::map<std::string, Shape>& shapes,
                                                                const std::string& backend_name,
                                                                const BackendOptions& backend_options,
                                                                const FusionOptions& fusion_options,
                                                                size_t max_memory_bytes,
                                                                std::map<std::string, SharedBuffer>* shared) {
  std::unique_ptr<Plan> p(new Plan());
  Plan& s = *p;
  s.input_shapes = shapes;
  s.max_memory_bytes = max_memory_bytes;
  ASSIGN_OR_RETURN(s.backend, createBackend(backend_name, backend_options));
  s.graph = ir::cloneGraph(model);
  RETURN_IF_ERROR(specializeShapes(s.graph, shapes));
  RETURN_IF_ERROR(checkTensorsFitCap(s.graph, max_memory_bytes));  // before fusion compiles anything
  const FusionColumn column = fusion_options.profile.value_or(s.backend->fusionColumn());
  ASSIGN_OR_RETURN(s.fusion_report, runFusionPipeline(s.graph, fusion_options, column, [&s](const ir::Node& n) {
                     return s.backend->supports(s.graph, n);
                   }));
  if (s.backend->zeroesSubnormalWeights()) {
    if (const int64_t n = ir::zeroSubnormalWeights(s.graph)) {
      GKRT_LOG_INFO(n, " float32 weight values below 2^-126 read as zero on ", s.backend->name(),
                    " (GKRT_CPU_SUBNORMALS=keep keeps them)");
    }
  }
  for (int t : s.graph.inputs) s.inputs.push_back({s.graph.tensors[t].name, s.graph.tensors[t].dtype, s.graph.tensors[t].shape});
  for (int t : s.graph.outputs) s.outputs.push_back({s.graph.tensors[t].name, s.graph.tensors[t].dtype, s.graph.tensors[t].shape});

  std::vector<char> referenced(s.graph.tensors.size(), 0);  // fusion leaves unreferenced tensors behind
  for (const ir::Node& n : s.graph.nodes) {
    for (int t : n.inputs) if (t >= 0) referenced[t] = 1;
    for (int t : n.outputs) referenced[t] = 1;
  }
  for (int t : s.graph.inputs) referenced[t] = 1;
  for (int t : s.graph.outputs) referenced[t] = 1;
  // Kernels first: their in-place hints shape the memory plan.
  size_t workspace = 0;
  for (size_t i = 0; i < s.graph.nodes.size(); ++i) {
    const ir::Node& node = s.graph.nodes[i];
    if (!node.subgraphs.empty()) {  // control flow: its subgraphs become child sessions
      SessionOptions child;
      child.backend = backend_name;
      child.backend_options = backend_options;
      child.fusion = fusion_options;
      child.max_memory_bytes = max_memory_bytes;
      size_t buffer_bytes = 0;
      auto kernel = compileControlFlowKernel(s.graph, node, child, &buffer_bytes);
      if (!kernel.ok()) return kernel.status().withContext("compiling " + ir::describeNode(s.graph, int(i)));
      s.allocated_bytes += buffer_bytes;
      s.replayable = false;
      Step step;
      step.backend = s.backend->name();
      step.kernel = std::move(kernel).value();
      if (!s.backend->isHost()) step.kernel = makeHostFallbackKernel(*s.backend, std::move(step.kernel), s.graph, node);
      s.steps.push_back(std::move(step));
      continue;
    }
    Backend* target = s.backend.get();
    if (!s.backend->supports(s.graph, node)) {
      // Host backends fall back to the reference kernels; device backends to the cpu
      // backend, with copies in and out.
      if (!s.fallback) {
        BackendOptions fallback_options = backend_options;
        fallback_options.cpu_blocked_layout = false;  // it runs only some of the graph's nodes
        ASSIGN_OR_RETURN(s.fallback, createBackend(s.backend->isHost() ? "reference" : "cpu", fallback_options));
      }
      target = s.fallback.get();
      s.replayable = false;
      const std::string why = s.backend->unsupportedReason(s.graph, node);
      GKRT_LOG_INFO("backend ", s.backend->name(), " does not support ", ir::describeNode(s.graph, int(i)),
                    why.empty() ? "" : " (" + why + ")", "; it runs on the ", s.fallback->name(), " backend");
    }
    Step step;
    step.backend = target->name();
    auto kernel = target->compile(s.graph, node);
    if (!kernel.ok()) return kernel.status().withContext("compiling " + ir::describeNode(s.graph, int(i)));
    step.kernel = std::move(kernel).value();
    if (target != s.backend.get() && !s.backend->isHost()) {
      step.kernel = makeHostFallbackKernel(*s.backend, std::move(step.kernel), s.graph, node);
    }
    workspace = std::max(workspace, step.kernel->workspaceBytes());
    s.steps.push_back(std::move(step));
  }
  RETURN_IF_ERROR(s.backend->finishCompile());
  if (s.fallback) RETURN_IF_ERROR(s.fallback->finishCompile());
  std::string slow;  // reference-grade library code is never taken silently: one warning a session
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (s.steps[i].kernel && s.steps[i].kernel->slowPath()) {
      slow += (slow.empty() ? "" : ", ") + ir::describeNode(s.graph, int(i)) + " [" + s.steps[i].kernel->detail() + "]";
    }
  }
  if (!slow.empty()) GKRT_LOG_WARNING("slow path: ", slow, " run reference-grade code (gkrt bench --profile marks them); please report this model");
  RETURN_IF_ERROR(s.allocateTensors(referenced, workspace, shared));
  auto data_of = [&](int t) -> void* {
    const ir::Tensor& tensor = s.graph.tensors[t];
    if (s.buffers[t]) return s.buffers[t];
    return const_cast<uint8_t*>(tensor.constant->data);
  };
  for (size_t i = 0; i < s.graph.nodes.size(); ++i) {
    const ir::Node& node = s.graph.nodes[i];
    Step& step = s.steps[i];
    for (int t : node.inputs) {
      if (t < 0) { step.inputs.push_back({}); continue; }
      step.inputs.push_back({s.graph.tensors[t].dtype, s.graph.tensors[t].shape, data_of(t)});
    }
    for (int t : node.outputs) step.outputs.push_back({s.graph.tensors[t].dtype, s.graph.tensors[t].shape, data_of(t)});
  }
  if (workspace) {
    ASSIGN_OR_RETURN(s.workspace, s.backend->allocate(workspace));
    s.allocated_bytes += workspace;
  }
  GKRT_LOG_INFO("session compiled for ", s.backend->name(), ": ", s.steps.size(), " kernels");
  return p;
}

// Host backends: one arena, offsets from the memory plan (constants used in place).
// Device backends with addressable memory (cuda): the same arena on the device, and the
// constants packed into one more allocation. Others (opencl): one allocation per
// tensor, constants copied over. Every plan is checked against the memory cap first.
Status Session::Plan::allocateTensors(const std::vector<char>& referenced, size_t workspace_bytes,
                                      std::map<std::string, SharedBuffer>* shared) {
  buffers.assign(graph.tensors.size(), nullptr);
  auto bytes_of = [&](size_t t) {
    return static_cast<size_t>(numElements(graph.tensors[t].shape)) * dtypeSize(graph.tensors[t].dtype);
  };
  if (!backend->addressableMemory()) {
    size_t device_bytes = workspace_bytes;  // every referenced tensor gets its own buffer
    for (size_t t = 0; t < graph.tensors.size(); ++t) if (referenced[t]) device_bytes += bytes_of(t);
    RETURN_IF_ERROR(checkMemoryCap(device_bytes, max_memory_bytes, std::string("the ") + backend->name() + " device buffers of this plan"));
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
      const ir::Tensor& tensor = graph.tensors[t];
      if (!referenced[t]) continue;
      ASSIGN_OR_RETURN(buffers[t], backend->allocate(bytes_of(t)));
      owned.push_back(buffers[t]);
      allocated_bytes += bytes_of(t);
      tensor_bytes += bytes_of(t);
      if (tensor.isConstant()) RETURN_IF_ERROR(backend->copyToDevice(buffers[t], tensor.constant->data, bytes_of(t)));
    }
    arena_bytes = tensor_bytes;  // no plan on devices yet: every tensor its own buffer
    return Status::Ok();
  }
  const int num_steps = static_cast<int>(graph.nodes.size());
  // Shared inputs (host memory): one zeroed mapping each, made by the first plan that
  // reads the input, outside every plan's arena.
  std::vector<char> outside(graph.tensors.size(), 0);
  for (int t : graph.inputs) {
    if (!shared || !backend->isHost()) break;
    if (!referenced[size_t(t)]) continue;
    auto it = shared->find(graph.tensors[size_t(t)].name);
    if (it == shared->end()) continue;
    const size_t bytes = bytes_of(size_t(t));
    if (!it->second.data) {
      void* m = ::mmap(nullptr, std::max<size_t>(bytes, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) return makeError(StatusCode::kDeviceError, "cannot map ", bytes, " bytes for input '",
                                            graph.tensors[size_t(t)].name, "'");
      it->second = SharedBuffer{m, std::max<size_t>(bytes, 1)};
    }
    if (it->second.bytes != std::max<size_t>(bytes, 1)) continue;  // another size in this plan: its own buffer
    buffers[size_t(t)] = it->second.data;
    outside[size_t(t)] = 1;
  }
  std::vector<int> request_of(graph.tensors.size(), -1);
  std::vector<BufferRequest> requests;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (!referenced[t] || graph.tensors[t].isConstant() || outside[t]) continue;
    request_of[t] = static_cast<int>(requests.size());
    requests.push_back({bytes_of(t), num_steps, -1, -1});
    tensor_bytes += bytes_of(t);
  }
  std::vector<char> pinned(graph.tensors.size(), 0);  // inputs and outputs keep their bytes
  for (int t : graph.inputs) {  // set before run(), kept across runs
    pinned[t] = 1;
    if (request_of[t] < 0) continue;  // an input that is also an initializer
    requests[size_t(request_of[t])].first = -1;
    requests[size_t(request_of[t])].last = num_steps;
  }
  for (int t : graph.outputs) {
    pinned[t] = 1;
    if (request_of[t] < 0) continue;
    requests[size_t(request_of[t])].last = num_steps;
  }
  for (int i = 0; i < num_steps; ++i) {
    for (int t : graph.nodes[i].outputs) {
      if (t < 0 || request_of[t] < 0) continue;
      BufferRequest& r = requests[size_t(request_of[t])];
      r.first = std::min(r.first, i);
      r.last = std::max(r.last, i);
    }
    for (int t : graph.nodes[i].inputs) {
      if (t >= 0 && request_of[t] >= 0) requests[size_t(request_of[t])].last = std::max(requests[size_t(request_of[t])].last, i);
    }
  }
  const std::vector<char> grouped = placeInsideOutputs(request_of, pinned, &requests);
  for (int i = 0; i < num_steps; ++i) {  // in place: an input dying here hands its bytes to output 0
    const ir::Node& node = graph.nodes[i];
    const int k = steps[i].kernel->inPlaceInput();
    if (k < 0 || k >= static_cast<int>(node.inputs.size()) || node.outputs.empty()) continue;
    const int in = node.inputs[k], out = node.outputs[0];
    if (in < 0 || out < 0 || request_of[in] < 0 || request_of[out] < 0 || pinned[in] || pinned[out] || in == out) continue;
    if (grouped[size_t(request_of[in])] || grouped[size_t(request_of[out])]) continue;  // bytes other tensors share
    BufferRequest &rin = requests[size_t(request_of[in])], &rout = requests[size_t(request_of[out])];
    if (rin.last != i || rin.bytes != rout.bytes || rout.share_with >= 0) continue;
    rout.share_with = request_of[in];
  }
  const MemoryPlan plan = planMemory(requests);
  arena_bytes = plan.arena_bytes;
  RETURN_IF_ERROR(checkMemoryCap(arena_bytes + workspace_bytes, max_memory_bytes,
                                 std::string("the ") + backend->name() + " tensor arena and workspace of this plan"));
  if (requests.empty()) return backend->isHost() ? Status::Ok() : copyConstantsToDevice(referenced);
  // Never empty: tensors with no elements still get a valid address.
  ASSIGN_OR_RETURN(void* arena, backend->allocate(std::max(arena_bytes, kArenaAlignment)));
  owned.push_back(arena);
  allocated_bytes += arena_bytes;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (request_of[t] >= 0) buffers[t] = static_cast<char*>(arena) + plan.offsets[size_t(request_of[t])];
  }
  return backend->isHost() ? Status::Ok() : copyConstantsToDevice(referenced);
}

// Kernels' hosted inputs (Kernel::hostedInputs): each such input planned inside the
// step's output, so its producer writes it there and the kernel skips the copy. Later
// steps first: a concat whose inputs all already lie, in its order, inside one later
// concat's output becomes a view of that output's bytes and copies nothing (DenseNet's
// concats of a block: one buffer, each layer's features written into it once). Returns
// which requests now share bytes with others (kept out of in-place sharing: a kernel
// overwriting one would overwrite the rest).
std::vector<char> Session::Plan::placeInsideOutputs(const std::vector<int>& request_of, const std::vector<char>& pinned,
                                                    std::vector<BufferRequest>* requests) const {
  std::vector<BufferRequest>& r = *requests;
  std::vector<char> grouped(r.size(), 0);
  auto rootAt = [&](int q, size_t* at) {
    size_t off = 0;
    for (; r[size_t(q)].inside >= 0; q = r[size_t(q)].inside) off += r[size_t(q)].at;
    *at = off;
    return q;
  };
  for (size_t i = steps.size(); i-- > 0;) {
    if (!steps[i].kernel) continue;
    const std::vector<Kernel::HostedInput> hosted = steps[i].kernel->hostedInputs();
    const ir::Node& node = graph.nodes[i];
    if (hosted.empty() || node.outputs.empty() || node.outputs[0] < 0) continue;
    const int y = node.outputs[0], ry = request_of[size_t(y)];
    if (ry < 0 || pinned[size_t(y)]) continue;
    auto usable = [&](int k) {
      const int x = node.inputs[size_t(k)];
      if (x < 0 || x == y || request_of[size_t(x)] < 0 || pinned[size_t(x)]) return false;
      return std::count(node.inputs.begin(), node.inputs.end(), x) == 1;
    };
    // Every input already inside one block, at the offsets this output would give them.
    bool view = r[size_t(ry)].inside < 0 && hosted.size() == node.inputs.size();
    int root = -1;
    size_t base = 0;
    for (size_t h = 0; view && h < hosted.size(); ++h) {
      const int k = hosted[h].input;
      if (!usable(k) || r[size_t(request_of[size_t(node.inputs[size_t(k)])])].inside < 0) {
        view = false;
        break;
      }
      size_t at = 0;
      const int q = rootAt(request_of[size_t(node.inputs[size_t(k)])], &at);
      if (h == 0) root = q, base = at - std::min(at, hosted[h].offset);
      view = q == root && q != ry && at >= hosted[h].offset && at - hosted[h].offset == base;
    }
    if (view) {
      r[size_t(ry)].inside = root, r[size_t(ry)].at = base;
      grouped[size_t(ry)] = 1;
      continue;
    }
    for (const Kernel::HostedInput& h : hosted) {
      if (!usable(h.input)) continue;
      const int rx = request_of[size_t(node.inputs[size_t(h.input)])];
      if (r[size_t(rx)].inside >= 0 || h.offset % kArenaAlignment != 0 || h.offset + r[size_t(rx)].bytes > r[size_t(ry)].bytes) continue;
      r[size_t(rx)].inside = ry, r[size_t(rx)].at = h.offset;
      grouped[size_t(rx)] = grouped[size_t(ry)] = 1;
    }
  }
  return grouped;
}

// Device backends with addressable memory: every constant the graph uses, packed into
// one more allocation and copied over once.
Status Session::Plan::copyConstantsToDevice(const std::vector<char>& referenced) {
  std::vector<size_t> offset(graph.tensors.size(), 0);
  size_t total = 0;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (!referenced[t] || !graph.tensors[t].isConstant()) continue;
    offset[t] = total;
    total += (numElements(graph.tensors[t].shape) * dtypeSize(graph.tensors[t].dtype) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
  if (total == 0) return Status::Ok();
  ASSIGN_OR_RETURN(void* constants, backend->allocate(total));
  owned.push_back(constants);
  allocated_bytes += total;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (!referenced[t] || !graph.tensors[t].isConstant()) continue;
    buffers[t] = static_cast<char*>(constants) + offset[t];
    const size_t bytes = static_cast<size_t>(numElements(graph.tensors[t].shape)) * dtypeSize(graph.tensors[t].dtype);
    RETURN_IF_ERROR(backend->copyToDevice(buffers[t], graph.tensors[t].constant->data, bytes));
  }
  return Status::Ok();
}

}  // namespace gkrt
