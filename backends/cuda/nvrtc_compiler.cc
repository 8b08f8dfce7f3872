#include "backends/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace gkrt::cuda {
namespace {

// NVRTC writes "gk.cu(LINE): error: ...".
std::string culprits(const std::string& log, const std::vector<SourcePart>& parts) {
  std::set<std::string> names;
  std::istringstream lines(log);
  for (std::string text; std::getline(lines, text);) {
    const size_t open = text.find("gk.cu("), err = text.find("error");
    if (open == std::string::npos || err == std::string::npos) continue;
    const int line = std::atoi(text.c_str() + open + 6);
    std::string who;
    for (const SourcePart& part : parts) if (line >= part.first_line) who = part.name;
    if (!who.empty()) names.insert(who);
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The newest architecture NVRTC supports that is not newer than `cc`; 0 if none.
int archFor(int cc, bool* exact) {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return 0;
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return 0;
  int best = 0;
  for (int a : archs) if (a <= cc) best = std::max(best, a);
  *exact = best == cc;
  return best;
}

}  // namespace

StatusOr<NvrtcImage> compileCuda(const std::string& source, int cc, const std::vector<SourcePart>& parts) {
  bool exact = false;
  const int arch = archFor(cc, &exact);
  if (arch == 0) {
    return makeError(StatusCode::kUnsupported, "cuda: NVRTC ", nvrtcVersion(), " cannot compile for compute capability ",
                     cc / 10, ".", cc % 10, " (too old for this toolkit); use an older CUDA toolkit or another backend");
  }
  NvrtcImage img;
  img.ptx = !exact;
  img.arch = (exact ? "sm_" : "compute_") + std::to_string(arch);
  const std::string arch_option = "--gpu-architecture=" + img.arch;
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), "gk.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) return makeError(StatusCode::kInternal, "cuda: nvrtcCreateProgram failed (", nvrtcGetErrorString(r), ")");
  const char* options[] = {"--std=c++17", arch_option.c_str()};
  r = nvrtcCompileProgram(prog, 2, options);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) nvrtcGetProgramLog(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    nvrtcDestroyProgram(&prog);
    const std::string who = culprits(log, parts);
    return makeError(StatusCode::kInternal, "cuda: compiling kernel ", who.empty() ? "program" : who, " for ", img.arch,
                     " failed (", nvrtcGetErrorString(r), "); NVRTC log:\n", log);
  }
  size_t n = 0;
  r = img.ptx ? nvrtcGetPTXSize(prog, &n) : nvrtcGetCUBINSize(prog, &n);
  if (r == NVRTC_SUCCESS) {
    img.bytes.resize(n);
    r = img.ptx ? nvrtcGetPTX(prog, reinterpret_cast<char*>(img.bytes.data())) : nvrtcGetCUBIN(prog, reinterpret_cast<char*>(img.bytes.data()));
  }
  nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS || img.bytes.empty()) {
    return makeError(StatusCode::kInternal, "cuda: reading the compiled ", img.arch, " image failed (", nvrtcGetErrorString(r), ")");
  }
  return img;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace gkrt::cuda
