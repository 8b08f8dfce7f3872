#include "backends/opencl/opencl_backend.h"

#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "backends/codegen/cluster_renderer.h"
#include "backends/codegen/movement_kernels.h"
#include "backends/codegen/pattern_kernels.h"
#include "backends/conv_epilogue.h"
#include "backends/opencl/conv_epilogue_kernel.h"
#include "backends/opencl/library_kernels.h"
#include "runtime/base/communicator.h"
#include "runtime/ir/op_def.h"
#include "runtime/base/log.h"

namespace gkrt {
namespace {

constexpr const char* kBuildOptions = "-cl-std=CL1.2";


std::string buildLog(cl_program p, cl_device_id d) {
  size_t n = 0;
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

int countLines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// The kernels the GPU backends share by node (backends/codegen): the Appendix 3 pattern
// ops and the movement kernels (Split, Resize, Gather/GatherElements with `fault_id` as
// their fault record id, Tile, Pad, ArgMax, CumSum, ...); kUnsupported "not a movement
// kernel" for other nodes.
StatusOr<codegen::RenderedKernel> renderNodeKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                                   int fault_id = 0) {
  auto pattern = codegen::renderPatternKernel(g, node, name, codegen::openclDialect());
  if (!codegen::notAPatternKernel(pattern.status())) return pattern;
  auto gather = codegen::renderGatherKernel(g, node, name, codegen::openclDialect(), fault_id);
  if (!codegen::notAMovementKernel(gather.status())) return gather;
  return codegen::renderMovementKernel(g, node, name, codegen::openclDialect());
}

}  // namespace

StatusOr<std::unique_ptr<Backend>> OpenClBackend::create(const BackendOptions& options) {
  ASSIGN_OR_RETURN(auto dev, opencl::openClDevice(options.device));
  std::string dir = options.program_cache_dir ? *options.program_cache_dir : defaultProgramCacheDir("opencl");
  auto backend = std::unique_ptr<OpenClBackend>(new OpenClBackend(std::move(dev), std::move(dir)));
  // The options programs are built with, as the cache keys them: gkrt's and those PoCL
  // adds from $POCL_EXTRA_BUILD_FLAGS (the tests set -cl-opt-disable: their unoptimised
  // builds must not be loaded by an optimised run sharing the cache).
  const char* extra = std::getenv("POCL_EXTRA_BUILD_FLAGS");
  backend->cache_options_ = std::string(kBuildOptions) + (extra && *extra ? std::string(" ") + extra : "");
  if (options.communicator) backend->ranks_ = options.communicator->size();
  return std::unique_ptr<Backend>(std::move(backend));
}

OpenClBackend::~OpenClBackend() {
  if (fault_) clReleaseMemObject(fault_);
}

Status OpenClBackend::takeFault() {
  if (!fault_) return Status::Ok();
  codegen::KernelFaultRecord r{};
  RETURN_IF_ERROR(opencl::clCheck(clEnqueueReadBuffer(dev_->queue, fault_, CL_TRUE, 0, sizeof r, &r, 0, nullptr, nullptr),
                                  "reading the fault record"));
  if (r.kernel == 0) return Status::Ok();
  const codegen::KernelFaultRecord clear{};
  RETURN_IF_ERROR(opencl::clCheck(clEnqueueWriteBuffer(dev_->queue, fault_, CL_TRUE, 0, sizeof clear, &clear, 0, nullptr, nullptr),
                                  "clearing the fault record"));
  const int id = r.kernel - 1;
  const std::string what = id >= 0 && size_t(id) < fault_what_.size() ? fault_what_[size_t(id)] : "a kernel";
  return makeError(StatusCode::kInvalidArgument, "opencl: ", what, ": index ", r.value, " at position ", r.position,
                   " is out of range (the output is not valid)");
}

bool OpenClBackend::supports(const ir::Graph& g, const ir::Node& node) const {
  if (!node.op || !deviceCollectiveRefusal(node, ranks_).empty()) return false;
  if (isConvEpilogue(node)) return convEpilogueRefusal(g, node).empty();
  auto shared = renderNodeKernel(g, node, "probe");
  if (!codegen::notAMovementKernel(shared.status())) {
    return shared.ok() && static_cast<size_t>(shared->local_size) <= dev_->max_work_group_size;
  }
  if (opencl::libraryRuns(g, node)) return true;
  auto k = codegen::renderCluster(g, node, "probe", codegen::openclDialect());
  return k.ok() && static_cast<size_t>(k->local_size) <= dev_->max_work_group_size;
}

std::string OpenClBackend::unsupportedReason(const ir::Graph& g, const ir::Node& node) const {
  if (!node.op) return "no op";
  if (std::string why = deviceCollectiveRefusal(node, ranks_); !why.empty()) return why;
  if (isConvEpilogue(node)) return convEpilogueRefusal(g, node);
  auto shared = renderNodeKernel(g, node, "probe");
  auto k = codegen::notAMovementKernel(shared.status()) ? codegen::renderCluster(g, node, "probe", codegen::openclDialect())
                                                        : std::move(shared);
  if (!k.ok()) return k.status().message();
  return "a work-group of " + std::to_string(k->local_size) + " exceeds the device's " +
         std::to_string(dev_->max_work_group_size);
}

// Why a convolution epilogue cannot run as the library convolution and a generated
// kernel over its output; empty when it can.
std::string OpenClBackend::convEpilogueRefusal(const ir::Graph& g, const ir::Node& node) const {
  auto split = splitConvEpilogue(node);
  if (!split.ok()) return split.status().message();
  if (!opencl::libraryRuns(*split->body, *split->conv)) return "the library convolution does not take " + node.name + "'s Conv2D";
  auto k = codegen::renderCluster(g, split->rest, "probe", codegen::openclDialect());
  if (!k.ok()) return "the epilogue of the convolution: " + k.status().message();
  if (static_cast<size_t>(k->local_size) > dev_->max_work_group_size) return "the epilogue's work-group exceeds the device's";
  return "";
}

StatusOr<std::unique_ptr<Kernel>> OpenClBackend::compileConvEpilogue(const ir::Graph& g, const ir::Node& node) {
  ASSIGN_OR_RETURN(ConvEpilogueSplit split, splitConvEpilogue(node));
  auto conv_slot = std::make_shared<opencl::KernelSlot>();
  conv_slot->what = node.name + " (Conv2D)";
  ASSIGN_OR_RETURN(auto conv, opencl::makeLibraryKernel(dev_, *split.body, *split.conv, conv_slot));
  auto rest_slot = std::make_shared<opencl::KernelSlot>();
  rest_slot->what = node.name + " (the convolution's epilogue)";
  rest_slot->entry = "gk" + std::to_string(next_kernel_++);
  ASSIGN_OR_RETURN(codegen::RenderedKernel k, codegen::renderCluster(g, split.rest, rest_slot->entry, codegen::openclDialect()));
  rest_slot->source = k.source;
  ASSIGN_OR_RETURN(auto rest, opencl::makeGeneratedKernel(dev_, std::move(k), rest_slot));
  pending_.push_back(std::move(conv_slot));
  pending_.push_back(std::move(rest_slot));
  return opencl::makeConvEpilogueKernel(dev_, split, std::move(conv), std::move(rest));
}

StatusOr<std::unique_ptr<Kernel>> OpenClBackend::compile(const ir::Graph& g, const ir::Node& node) {
  if (isConvEpilogue(node)) return compileConvEpilogue(g, node);
  auto slot = std::make_shared<opencl::KernelSlot>();
  slot->what = node.name + " (" + node.op->name + ")";
  std::unique_ptr<Kernel> kernel;
  const std::string entry = "gk" + std::to_string(next_kernel_);
  auto shared = renderNodeKernel(g, node, entry, static_cast<int>(fault_what_.size()));
  if (!codegen::notAMovementKernel(shared.status())) {
    RETURN_IF_ERROR(shared.status());
    ++next_kernel_;
    slot->entry = entry;
    slot->source = shared->source;
    std::vector<cl_mem> extra;
    if (codegen::usesFaultRecord(node)) {
      if (!fault_) {
        const codegen::KernelFaultRecord clear{};
        cl_int err = CL_SUCCESS;
        fault_ = clCreateBuffer(dev_->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof clear,
                                const_cast<codegen::KernelFaultRecord*>(&clear), &err);
        RETURN_IF_ERROR(opencl::clCheck(err, "allocating the fault record"));
      }
      fault_what_.push_back(slot->what);
      extra.push_back(fault_);
    }
    ASSIGN_OR_RETURN(kernel, opencl::makeGeneratedKernel(dev_, std::move(*shared), slot, std::move(extra)));
  } else if (opencl::libraryRuns(g, node)) {
    ASSIGN_OR_RETURN(kernel, opencl::makeLibraryKernel(dev_, g, node, slot));
  } else {
    ++next_kernel_;
    ASSIGN_OR_RETURN(codegen::RenderedKernel k, codegen::renderCluster(g, node, entry, codegen::openclDialect()));
    slot->entry = entry;
    slot->source = k.source;
    ASSIGN_OR_RETURN(kernel, opencl::makeGeneratedKernel(dev_, std::move(k), slot));
  }
  if (!slot->entry.empty()) pending_.push_back(std::move(slot));
  return kernel;
}

// Compiles `source`; on failure names the kernels whose lines the compiler complained
// about (`parts`: the line where each kernel starts, and its name).
StatusOr<cl_program> OpenClBackend::buildProgram(const std::string& source, const std::vector<SourcePart>& parts) {
  cl_int err = CL_SUCCESS;
  const char* text = source.c_str();
  cl_program p = clCreateProgramWithSource(dev_->context, 1, &text, nullptr, &err);
  RETURN_IF_ERROR(opencl::clCheck(err, "creating a program"));
  err = clBuildProgram(p, 1, &dev_->device, kBuildOptions, nullptr, nullptr);
  if (err == CL_SUCCESS) return p;
  const std::string log = buildLog(p, dev_->device);
  clReleaseProgram(p);
  std::set<std::string> culprits;
  // Compilers write "file:LINE:COL: error: ..." (clang) or "error: file:LINE:COL: ..." (PoCL).
  const std::regex line_re(":([0-9]+):[0-9]+:");
  std::istringstream lines(log);
  for (std::string text; std::getline(lines, text);) {
    std::smatch m;
    if (text.find("error") == std::string::npos || !std::regex_search(text, m, line_re)) continue;
    const int line = std::stoi(m[1].str());
    std::string who;
    for (const SourcePart& part : parts) if (line >= part.first_line) who = part.name;
    if (!who.empty()) culprits.insert(who);
  }
  std::string names;
  for (const std::string& c : culprits) names += (names.empty() ? "" : ", ") + c;
  return makeError(StatusCode::kInternal, "opencl: building kernel ", names.empty() ? "program" : names, " failed (",
                   opencl::clErrorName(err), "); build log:\n", log);
}

// The program of `source` from the cache, else compiled and stored.
StatusOr<cl_program> OpenClBackend::programFor(const std::string& source, const std::vector<SourcePart>& parts) {
  const std::string key = ProgramCache::keyFor(source, cache_options_, dev_->identity());
  if (auto bin = cache_.load(key)) {
    cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
    const size_t size = bin->size();
    const unsigned char* data = bin->data();
    cl_program program = clCreateProgramWithBinary(dev_->context, 1, &dev_->device, &size, &data, &bin_status, &err);
    if (err == CL_SUCCESS && bin_status == CL_SUCCESS) err = clBuildProgram(program, 1, &dev_->device, kBuildOptions, nullptr, nullptr);
    if (err == CL_SUCCESS && bin_status == CL_SUCCESS) {
      last_program_ = "cache";
      return program;
    }
    GKRT_LOG_WARNING("opencl: cached program ", cache_.pathFor(key), " was rejected by the driver (",
                     opencl::clErrorName(err != CL_SUCCESS ? err : bin_status), "); rebuilding it");
    if (program) clReleaseProgram(program);
    cache_.remove(key);
  }
  ASSIGN_OR_RETURN(cl_program program, buildProgram(source, parts));
  last_program_ = "compiled";
  size_t size = 0;
  if (cache_.enabled() && clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) == CL_SUCCESS && size) {
    std::vector<unsigned char> bin(size);
    unsigned char* data = bin.data();
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) == CL_SUCCESS) cache_.store(key, bin);
  }
  return program;
}

// Generated kernels: one program per session. Library kernels: one program per device.
Status OpenClBackend::finishCompile() {
  if (pending_.empty()) return Status::Ok();
  last_program_ = "none";
  std::string source = codegen::openclDialect().preamble;
  std::vector<SourcePart> parts;
  bool library = false;
  for (const auto& slot : pending_) {
    if (slot->source.empty()) {
      library = true;
      continue;
    }
    parts.push_back({countLines(source) + 1, slot->entry + " (" + slot->what + ")"});
    source += slot->source;
  }
  cl_program program = nullptr;
  if (!parts.empty()) {
    ASSIGN_OR_RETURN(program, programFor(source, parts));
  }
  Status status = Status::Ok();
  if (library) {
    std::lock_guard<std::mutex> lock(dev_->library_mutex);
    if (!dev_->library_program) {
      const char* kept = last_program_;
      auto lib = programFor(std::string(codegen::openclDialect().preamble) + opencl::libraryKernelSource(),
                            {{1, "the library kernels"}});
      if (!lib.ok()) status = lib.status();
      else dev_->library_program = *lib;
      if (std::string(kept) != "none") last_program_ = kept;
    }
  }
  for (const auto& slot : pending_) {
    if (!status.ok()) break;
    cl_int err = CL_SUCCESS;
    slot->kernel = clCreateKernel(slot->source.empty() ? dev_->library_program : program, slot->entry.c_str(), &err);
    status = opencl::clCheck(err, "creating kernel " + slot->entry + " (" + slot->what + ")");
  }
  if (program) clReleaseProgram(program);
  pending_.clear();
  return status;
}

StatusOr<void*> OpenClBackend::allocate(size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(dev_->context, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 4), nullptr, &err);
  RETURN_IF_ERROR(opencl::clCheck(err, "allocating " + std::to_string(bytes) + " bytes on " + dev_->device_name));
  return static_cast<void*>(m);
}

void OpenClBackend::deallocate(void* ptr) {
  if (ptr) clReleaseMemObject(static_cast<cl_mem>(ptr));
}

Status OpenClBackend::copyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return opencl::clCheck(clEnqueueWriteBuffer(dev_->queue, static_cast<cl_mem>(dst), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
                         "copying " + std::to_string(bytes) + " bytes to the device");
}

Status OpenClBackend::copyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  RETURN_IF_ERROR(opencl::clCheck(clEnqueueReadBuffer(dev_->queue, static_cast<cl_mem>(const_cast<void*>(src)), CL_TRUE, 0, bytes,
                                                      dst, 0, nullptr, nullptr),
                                  "copying " + std::to_string(bytes) + " bytes from the device"));
  return takeFault();
}

Status OpenClBackend::synchronize() {
  RETURN_IF_ERROR(opencl::clCheck(clFinish(dev_->queue), "waiting for the device"));
  return takeFault();
}

bool OpenClBackend::startKernelTimer() {
  timed_events_.clear();
  dev_->timed_events = &timed_events_;
  return true;
}

StatusOr<double> OpenClBackend::stopKernelTimer() {
  dev_->timed_events = nullptr;
  Status done = synchronize();
  double seconds = 0;
  for (cl_event e : timed_events_) {
    if (!e) continue;  // a launch that failed or had nothing to do
    cl_ulong start = 0, end = 0;
    if (done.ok()) {
      done = opencl::clCheck(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
                             "reading a kernel's start time");
    }
    if (done.ok()) {
      done = opencl::clCheck(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
                             "reading a kernel's end time");
    }
    seconds += end > start ? (end - start) * 1e-9 : 0;
    clReleaseEvent(e);
  }
  timed_events_.clear();
  RETURN_IF_ERROR(done);
  return seconds;
}

}  // namespace gkrt
