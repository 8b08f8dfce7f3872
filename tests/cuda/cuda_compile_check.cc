// Every kernel the cuda backend would build, compiled by NVRTC for each architecture
// asked for, with no GPU: the models (.gkm, and .onnx where the converter is built)
// under the given paths are fused for the GPU column with the cuda backend's own
// supports() answer (backends/cuda/cuda_support.h), each generated kernel is rendered
// in the CUDA dialect, and every distinct source is compiled once per architecture —
// in batches, on two threads; a batch that fails is compiled kernel by kernel so the
// failure names the model, node and ops. Exit 0 only when every kernel compiled.
// `--dedupe structure` (CI) compiles one source per structure: kernels that differ only
// in number literals (shapes, strides, constants) are compiled once.
//
//   cuda_compile_check --arch 80,90 --min-kernels 100 build/examples build/zoo build/zoo_light
#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backends/codegen/cluster_renderer.h"
#include "backends/codegen/pattern_kernels.h"
#include "backends/conv_epilogue.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/cuda_library_kernels.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "runtime/model_io.h"
#include "runtime/shape_specialize.h"
#ifdef GKRT_HAVE_ONNX
#include "tests/cuda/onnx_test_model.h"
#endif

namespace fs = std::filesystem;
using namespace gkrt;

namespace {

constexpr const char* kPlaceholder = "GKRT_KERNEL_NAME";
// Flag sets every model is fused with: the defaults, GEMM clusters with their tails, and
// every Appendix 3 pattern pass the cuda backend runs (the gpu profile keeps them off by
// default): AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention, MatMulSplit, the quantised
// RmsNorms and QuantBatchMatMul from codegen/pattern_kernels.h, the matmul epilogues on cuBLASLt.
const char* const kFlagSets[] = {
    "", "--enable_cluster_ops=MatMul",
    "--enable_pass=FlashAttentionFusionV1,FlashAttentionFusionV2,add_layer_norm_fusion,add_layer_norm_v3_fusion,"
    "add_layer_norm_ext_fusion,add_rms_norm_fusion,inference_swiglu_fusion,inference_matmul_split_fusion,"
    "rms_norm_quant_fusion,add_rms_norm_quant_fusion,matmul_elem_biasadd_fusion,matmul_elem_add_fusion,"
    "matmul_elem_relu_fusion,matmul_elem_gelu_fusion,inference_qbmm_add_fusion"};

// The source with every number literal replaced by '#': kernels that differ only in
// shapes, strides and constants share one key (--dedupe structure).
std::string structureKey(const std::string& source) {
  std::string key;
  key.reserve(source.size());
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < source.size();) {
    const char c = source[i];
    if (std::isdigit(static_cast<unsigned char>(c)) && (i == 0 || !word(source[i - 1]))) {
      while (i < source.size() && (word(source[i]) || source[i] == '.' ||
                                   ((source[i] == '+' || source[i] == '-') && (source[i - 1] == 'p' || source[i - 1] == 'P')))) {
        ++i;
      }
      key += '#';
    } else {
      key += c;
      ++i;
    }
  }
  return key;
}

struct KernelSource {
  std::string source;  // with kPlaceholder as its name
  std::string where;   // the first model and node that produced it
};

struct Counts {
  int models = 0, not_loaded = 0, rendered = 0, cublaslt = 0, cudnn = 0;
  int cudnn_fused = 0, cudnn_epilogue = 0;  // convolution epilogues: in cuDNN's call / a generated kernel after it
  std::map<std::string, int> declined;  // op -> nodes the cuda backend leaves to the cpu fallback
  std::map<std::string, int> patterns;  // pattern op -> nodes rendered (codegen/pattern_kernels.h)
};

std::vector<std::string> modelFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (!fs::is_directory(p)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(p)) {
      const fs::path f = e.path();
      if (!e.is_regular_file()) continue;
      if (f.extension() == ".gkm") found.push_back(f.string());
#ifdef GKRT_HAVE_ONNX
      // An .onnx beside a .gkm of the same name was converted into it already.
      if (f.extension() == ".onnx" && !fs::exists(fs::path(f).replace_extension(".gkm"))) found.push_back(f.string());
#endif
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

StatusOr<ir::Graph> loadAnyModel(const std::string& path) {
  if (fs::path(path).extension() == ".gkm") return loadModelFile(path);
#ifdef GKRT_HAVE_ONNX
  return loadOnnxTestModel(path);
#else
  return makeError(StatusCode::kUnsupported, "no ONNX converter in this build");
#endif
}

// Fuses `model` with each flag set and adds its generated kernels' sources to `kernels`.
// `*unspecialisable` is set when the model's shapes cannot be fixed (skipped, not failed).
Status collect(const std::string& path, const ir::Graph& model, bool by_structure, std::map<std::string, KernelSource>& kernels,
               Counts& counts, bool* unspecialisable) {
  std::map<std::string, Shape> shapes;
  for (int t : model.inputs) shapes[model.tensors[t].name] = model.tensors[t].shape;
  for (const char* flags : kFlagSets) {
    ir::Graph g = ir::cloneGraph(model);
    if (Status s = specializeShapes(g, shapes); !s.ok()) {
      *unspecialisable = true;
      return s;
    }
    ASSIGN_OR_RETURN(FusionOptions options, parseFusionFlags(flags));
    auto supports = [&g](const ir::Node& n) { return cuda::cudaKernelKind(g, n) != cuda::CudaKernelKind::kNone; };
    RETURN_IF_ERROR(runFusionPipeline(g, options, FusionColumn::kGpu, supports).status());
    for (const ir::Node& node : g.nodes) {
      std::string why;
      const cuda::CudaKernelKind kind = cuda::cudaKernelKind(g, node, &why);
      if (kind == cuda::CudaKernelKind::kNone && node.op) {
        std::string ops;
        if (node.subgraph) for (const ir::Node& n : node.subgraph->nodes) ops += (ops.empty() ? "" : "+") + std::string(n.op->name);
        ++counts.declined[(node.subgraph ? "a fused cluster " + ops : node.op->name) + (" (" + why + ")")];
      }
      if (kind == cuda::CudaKernelKind::kCublasLt) ++counts.cublaslt;
      if (kind == cuda::CudaKernelKind::kCudnnConv) ++counts.cudnn;
      // a convolution epilogue cuDNN's fused call does not cover: its generated kernel
      if (kind == cuda::CudaKernelKind::kCudnnConv && isConvEpilogue(node)) {
        ASSIGN_OR_RETURN(cuda::ConvEpiloguePlan plan, cuda::convEpiloguePlanFor(node));
        ++(plan.whole ? counts.cudnn_fused : counts.cudnn_epilogue);
        if (!plan.whole) {
          ASSIGN_OR_RETURN(ConvEpilogueSplit split, splitConvEpilogue(node));
          ASSIGN_OR_RETURN(codegen::RenderedKernel k, codegen::renderCluster(g, split.rest, kPlaceholder, codegen::cudaDialect()));
          ++counts.rendered;
          kernels.emplace(by_structure ? structureKey(k.source) : k.source,
                          KernelSource{k.source, path + " [" + flags + "] " + node.name + " (the convolution's epilogue)"});
        }
      }
      // a cuBLASLt GEMM with GELU's erf form: its GeLU kernel
      const bool erf_epilogue = kind == cuda::CudaKernelKind::kCublasLt && cuda::renderErfGeluEpilogue(g, node, kPlaceholder).ok();
      if (kind != cuda::CudaKernelKind::kGenerated && kind != cuda::CudaKernelKind::kLibrary && !erf_epilogue) continue;
      ASSIGN_OR_RETURN(codegen::RenderedKernel k, erf_epilogue ? cuda::renderErfGeluEpilogue(g, node, kPlaceholder)
                                                  : kind == cuda::CudaKernelKind::kLibrary
                                                      ? cuda::renderLibraryKernel(g, node, kPlaceholder, 0)
                                                      : codegen::renderCluster(g, node, kPlaceholder, codegen::cudaDialect()));
      ++counts.rendered;
      if (!node.subgraph && !codegen::notAPatternKernel(codegen::renderPatternKernel(g, node, kPlaceholder, codegen::cudaDialect()).status())) {
        ++counts.patterns[node.op->name];
      }
      std::string ops;
      if (node.subgraph) for (const ir::Node& n : node.subgraph->nodes) ops += (ops.empty() ? "" : "+") + std::string(n.op->name);
      else ops = node.op->name;
      kernels.emplace(by_structure ? structureKey(k.source) : k.source, KernelSource{k.source, path + " [" + flags + "] " + node.name + " (" + ops + ")"});
    }
  }
  return Status::Ok();
}

std::string named(const std::string& source, const std::string& name) {
  std::string s = source;
  for (size_t at = s.find(kPlaceholder); at != std::string::npos; at = s.find(kPlaceholder, at + name.size())) {
    s.replace(at, std::strlen(kPlaceholder), name);
  }
  return s;
}

// Compiles kernels [begin, end) as one program; on failure, each alone. Returns the failures.
std::vector<std::string> compileBatch(const std::vector<const KernelSource*>& ks, size_t begin, size_t end, int cc) {
  std::string source = codegen::cudaDialect().preamble;
  std::vector<cuda::SourcePart> parts;
  for (size_t i = begin; i < end; ++i) {
    parts.push_back({static_cast<int>(std::count(source.begin(), source.end(), '\n')) + 1, ks[i]->where});
    source += named(ks[i]->source, "gk" + std::to_string(i));
  }
  if (cuda::compileCuda(source, cc, parts).ok()) return {};
  std::vector<std::string> failures;
  for (size_t i = begin; i < end; ++i) {
    auto r = cuda::compileCuda(std::string(codegen::cudaDialect().preamble) + named(ks[i]->source, "gk"), cc, {{1, ks[i]->where}});
    if (!r.ok()) failures.push_back("sm_" + std::to_string(cc) + ": " + r.status().message() + "\nsource:\n" + ks[i]->source);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> archs = {80, 90};
  std::vector<std::string> paths;
  int min_kernels = 1, batch = 150;
  bool by_structure = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--arch" && i + 1 < argc) {
      archs.clear();
      std::string list = argv[++i];
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        archs.push_back(std::atoi(list.substr(at, comma - at).c_str()));
        at = comma + 1;
      }
    } else if (a == "--min-kernels" && i + 1 < argc) {
      min_kernels = std::atoi(argv[++i]);
    } else if (a == "--dedupe" && i + 1 < argc && (std::string(argv[i + 1]) == "structure" || std::string(argv[i + 1]) == "exact")) {
      by_structure = std::string(argv[++i]) == "structure";
    } else if (a == "--batch" && i + 1 < argc) {
      batch = std::max(1, std::atoi(argv[++i]));
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: cuda_compile_check [--arch 80,90] [--dedupe exact|structure] [--min-kernels N] [--batch N] PATH...\n");
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, KernelSource> kernels;
  Counts counts;
  int failed_models = 0;
  for (const std::string& file : modelFiles(paths)) {
    auto g = loadAnyModel(file);
    if (!g.ok()) {  // the converter's own tests report these; here only kernels are checked
      ++counts.not_loaded;
      continue;
    }
    ++counts.models;
    bool unspecialisable = false;
    if (Status s = collect(file, *g, by_structure, kernels, counts, &unspecialisable); !s.ok()) {
      if (unspecialisable) {
        ++counts.not_loaded;
        continue;
      }
      std::printf("FAILED to render %s: %s\n", file.c_str(), s.toString().c_str());
      ++failed_models;
    }
  }
  const double render_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<const KernelSource*> list;
  for (const auto& [source, k] : kernels) list.push_back(&k);
  std::printf("%d models (%d not loadable or not specialisable, skipped), %d kernels rendered, %zu distinct %s (%.1f s)\n",
              counts.models, counts.not_loaded, counts.rendered, list.size(),
              by_structure ? "structures (sources up to number literals)" : "sources", render_s);
  std::string declined;
  for (const auto& [op, n] : counts.declined) declined += (declined.empty() ? "" : ", ") + op + " " + std::to_string(n);
  std::printf("%d GEMM nodes on cuBLASLt, %d convolutions on cuDNN (epilogues: %d in its fused call, %d as a generated kernel); "
              "declined (cpu fallback): %s\n", counts.cublaslt, counts.cudnn, counts.cudnn_fused, counts.cudnn_epilogue,
              declined.empty() ? "none" : declined.c_str());
  std::string patterns;
  for (const auto& [op, n] : counts.patterns) patterns += (patterns.empty() ? "" : ", ") + op + " " + std::to_string(n);
  std::printf("pattern kernels rendered: %s\n", patterns.empty() ? "none" : patterns.c_str());
  // Batches of every architecture, shared by two threads (NVRTC is thread-safe).
  std::vector<std::pair<int, size_t>> jobs;
  for (int cc : archs) for (size_t b = 0; b < list.size(); b += size_t(batch)) jobs.push_back({cc, b});
  std::vector<std::vector<std::string>> failures(jobs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next++) < jobs.size();) {
      failures[j] = compileBatch(list, jobs[j].second, std::min(list.size(), jobs[j].second + size_t(batch)), jobs[j].first);
    }
  };
  const auto t1 = std::chrono::steady_clock::now();
  std::thread helper(worker);
  worker();
  helper.join();
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  int failed = 0;
  for (const auto& f : failures) {
    for (const std::string& msg : f) std::printf("FAILED %s\n", msg.c_str());
    failed += static_cast<int>(f.size());
  }
  std::string arch_list;
  for (int cc : archs) arch_list += (arch_list.empty() ? "sm_" : ", sm_") + std::to_string(cc);
  std::printf("NVRTC %s, %s: %zu distinct kernels, %d failed (%.1f s)\n", cuda::nvrtcVersion().c_str(), arch_list.c_str(),
              list.size(), failed, compile_s);
  if (static_cast<int>(list.size()) < min_kernels) {
    std::printf("FAILED: only %zu distinct kernels, expected at least %d (are the models there?)\n", list.size(), min_kernels);
    return 1;
  }
  return failed || failed_models ? 1 : 0;
}
