// Runs the ONNX backend node tests: each test is converted, run on every backend
// with fusion on and off, and compared with ONNX's expected outputs (rtol 1e-3,
// atol 1e-7 as ONNX's own runner; 16-bit float outputs: see relativeTolerance).
//
//   onnx_conformance NODE_TEST_DIR EXPECTED_RESULTS [--update]
//
// EXPECTED_RESULTS holds one line per test: "name pass", or "name skip <reason>". A
// test listed as pass that fails now is a failure (exit 1); --update rewrites the file.
// Device backends run the tests in batches, each batch one graph (GKRT_CONFORMANCE_BATCH,
// default 16; tests/unit/graph_union.h), retried test by test where the batch fails.
// GKRT_CONFORMANCE_BACKENDS=cuda (comma-separated) runs only those of the available
// backends (the GPU machine checks cuda alone); GKRT_CONFORMANCE_LEVELS=2 runs only those
// opt_levels (default 0,2: CI runs opencl fused only, its unfused single-op kernels being
// the golden op cases').
#include <chrono>
#include <cstdio>
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "runtime/ir/ops/op_helpers.h"
#include "runtime/session.h"
#include "tests/unit/graph_union.h"
#include "tools/onnx/onnx_context.h"
#include "tools/onnx/onnx_import.h"

namespace gkrt {
namespace {

std::vector<std::string> conformanceBackends() {
  const std::vector<std::string> all = availableBackends();
  const char* env = std::getenv("GKRT_CONFORMANCE_BACKENDS");
  if (!env || !*env) return all;
  const std::string list = std::string(",") + env + ",";
  std::vector<std::string> chosen;
  for (const std::string& b : all) if (list.find("," + b + ",") != std::string::npos) chosen.push_back(b);
  return chosen;
}


std::vector<std::string> conformanceLevels() {
  const char* env = std::getenv("GKRT_CONFORMANCE_LEVELS");
  const std::string list = env && *env ? env : "0,2";
  std::vector<std::string> flags;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) flags.push_back("--opt_level=" + list.substr(at, comma - at));
    at = comma + 1;
  }
  return flags;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// Whether every node of the test's model is an op the converter handles.
bool opsConvertible(const std::string& dir) {
  std::ifstream f(dir + "/model.onnx", std::ios::binary);
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&f)) return false;
  for (const auto& n : m.graph().node()) {
    if (!(n.domain().empty() || n.domain() == "ai.onnx") || !onnx_import::findConverter(n.op_type())) return false;
  }
  return true;
}

// Empty when `got` matches `want` within |got - want| <= atol + rtol |want|, elements
// marked in `undefined` (when given) left out.
std::string compare(const HostTensor& got, const HostTensor& want, double rtol, double atol,
                    const std::vector<char>* undefined = nullptr) {
  if (got.shape() != want.shape()) return "shape " + shapeToString(got.shape()) + " vs expected " + shapeToString(want.shape());
  if (got.dtype() != want.dtype()) return std::string("dtype ") + dtypeName(got.dtype()) + " vs expected " + dtypeName(want.dtype());
  const auto g = got.toFloats(), w = want.toFloats();
  for (size_t i = 0; i < g.size(); ++i) {
    if (undefined && i < undefined->size() && (*undefined)[i]) continue;
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    const size_t es = dtypeSize(got.dtype());
    if (!isFloat(got.dtype()) && std::memcmp(static_cast<const char*>(got.data()) + i * es,
                                             static_cast<const char*>(want.data()) + i * es, es) == 0) {
      continue;  // integers: exact, whatever their width
    }
    if (g[i] == w[i]) continue;
    if (!(std::fabs(static_cast<double>(g[i]) - w[i]) <= atol + rtol * std::fabs(w[i]))) {
      std::ostringstream os;
      os << "element " << i << ": " << g[i] << " vs expected " << w[i];
      return os.str();
    }
  }
  return "";
}

// ONNX's rtol 1e-3, except for 16-bit float outputs: gkrt rounds every intermediate
// to the tensor's type (as the model says) while ONNX's reference computes in float32
// and rounds once, so results differ by a few units in the last place. Two ulps at
// the bottom of a binade: float16 2 * 2^-10, bfloat16 2 * 2^-7.
double relativeTolerance(DType t) {
  if (t == DType::kFloat16) return 2.0 / 1024;
  if (t == DType::kBFloat16) return 2.0 / 128;
  return 1e-3;
}

// A test converted and its data read, ready to run on any backend; `status` is "skip: ..."
// or "fail: ..." when it cannot run.
struct PreparedTest {
  std::string status;
  ir::Graph graph;
  std::vector<std::pair<std::string, HostTensor>> feeds;  // in graph-input order
  std::vector<HostTensor> expected;
  std::vector<char> undefined;  // output 0's elements whose value the spec leaves undefined
};

// The integer range of a fixed-point type, as doubles.
bool integerRange(DType t, double* lo, double* hi) {
  if (isNarrowInteger(t)) {
    *lo = narrowIntMin(t), *hi = narrowIntMax(t);
    return true;
  }
  if (!isInteger(t)) return false;
  ops::withIntegerType(t, [&](auto v) {
    *lo = static_cast<double>(std::numeric_limits<decltype(v)>::lowest());
    *hi = static_cast<double>(std::numeric_limits<decltype(v)>::max());
  });
  return true;
}

// Cast and CastLike from floating point to fixed point are undefined out of range (the
// ONNX spec: "fixed point: undefined if OOR"); the expected data there is whatever the
// generating numpy/ml_dtypes did (it changed between releases), so those elements are not
// compared. Marks them for a test whose model is one Cast/CastLike of its first input.
std::vector<char> undefinedCastElements(const std::string& dir, const std::vector<std::pair<std::string, HostTensor>>& feeds,
                                        const std::vector<HostTensor>& expected) {
  std::ifstream f(dir + "/model.onnx", std::ios::binary);
  onnx::ModelProto m;
  double lo = 0, hi = 0;
  if (!m.ParseFromIstream(&f) || m.graph().node_size() != 1 || feeds.empty() || expected.size() != 1) return {};
  const std::string& op = m.graph().node(0).op_type();
  const HostTensor& x = feeds[0].second;
  if ((op != "Cast" && op != "CastLike") || !isFloat(x.dtype()) || !integerRange(expected[0].dtype(), &lo, &hi) ||
      x.size() != expected[0].size()) {
    return {};
  }
  const auto v = x.toFloats();
  std::vector<char> undefined(v.size(), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    const double t = std::trunc(static_cast<double>(v[i]));
    undefined[i] = !std::isfinite(t) || t < lo || t > hi;
  }
  return undefined;
}

PreparedTest prepareTest(const std::string& dir) {
  PreparedTest p;
  OnnxImportOptions o;
  std::vector<std::pair<std::string, HostTensor>> inputs;
  const std::string data = dir + "/test_data_set_0";
  // Input shapes come from the data, for models with dynamic dims.
  for (int j = 0; exists(data + "/input_" + std::to_string(j) + ".pb"); ++j) {
    std::ifstream f(data + "/input_" + std::to_string(j) + ".pb", std::ios::binary);
    onnx::TensorProto proto;
    if (!proto.ParseFromIstream(&f)) return {"skip: input " + std::to_string(j) + " is not a tensor"};
    auto t = tensorFromProto(proto, data);
    if (!t.ok()) return {"skip: " + t.status().message()};
    inputs.emplace_back(proto.name(), std::move(t).value());
  }
  for (const auto& in : inputs) o.positional_input_shapes.push_back(in.second.shape());  // for dynamic dims
  auto g = importOnnxFile(dir + "/model.onnx", o);
  if (!g.ok() && g.status().message().find("must be a constant") != std::string::npos) {
    // ONNX feeds shape parameters (axes, pads, sizes, ...) as graph inputs; gkrt needs
    // them when converting. Freeze the test's integer inputs and tiny float ones.
    for (const auto& [name, t] : inputs) {
      if (!isFloat(t.dtype()) || t.size() <= 4) o.frozen_inputs[name] = t;
    }
    g = importOnnxFile(dir + "/model.onnx", o);
  }
  if (!g.ok()) {
    const Status& s = g.status();
    return {(s.code() == StatusCode::kUnsupported ? "skip: " : "fail: ") + s.message().substr(0, 300)};
  }
  // The graph's inputs: by name, else by position among the data not frozen.
  std::vector<std::pair<std::string, HostTensor>> remaining;
  for (const auto& in : inputs) if (!o.frozen_inputs.count(in.first)) remaining.push_back(in);
  for (size_t k = 0; k < g->inputs.size(); ++k) {
    const std::string& name = g->tensors[g->inputs[k]].name;
    auto it = std::find_if(remaining.begin(), remaining.end(), [&](const auto& q) { return q.first == name; });
    if (it == remaining.end() && k < remaining.size()) it = remaining.begin() + static_cast<long>(k);
    if (it == remaining.end()) return {"skip: no test data for input '" + name + "'"};
    p.feeds.emplace_back(name, it->second);
  }
  for (int j = 0; exists(data + "/output_" + std::to_string(j) + ".pb"); ++j) {
    auto t = readTensorProtoFile(data + "/output_" + std::to_string(j) + ".pb");
    if (!t.ok()) return {"skip: expected output " + std::to_string(j) + ": " + t.status().message()};
    p.expected.push_back(std::move(t).value());
  }
  if (p.expected.size() != g->outputs.size()) return {"skip: outputs other than tensors"};
  p.undefined = undefinedCastElements(dir, p.feeds, p.expected);
  p.graph = std::move(g).value();
  return p;
}

// Runs `g` (one test, or a union of tests) on `backend` with `flags`; "" or "fail: ...".
std::string runOn(const ir::Graph& g, const std::vector<std::pair<std::string, HostTensor>>& feeds,
                  const std::string& backend, const std::string& flags, std::vector<HostTensor>* outputs) {
  SessionOptions opts;
  opts.backend = backend;
  auto fusion = parseFusionFlags(flags);
  if (!fusion.ok()) return "fail: GKRT_CONFORMANCE_LEVELS: " + fusion.status().message();
  opts.fusion = *fusion;
  auto s = Session::create(g, opts);
  if (!s.ok()) return "fail: " + backend + " " + flags + ": " + s.status().message().substr(0, 300);
  for (const auto& [name, value] : feeds) {
    Status st = (*s)->setInput(name, value);
    if (!st.ok()) return "fail: " + st.message();
  }
  Status run = (*s)->run();
  if (!run.ok()) return "fail: " + backend + " " + flags + ": " + run.message().substr(0, 300);
  outputs->clear();
  for (const auto& out : (*s)->outputs()) {
    auto v = (*s)->output(out.name);
    if (!v.ok()) return "fail: " + v.status().message();
    outputs->push_back(std::move(v).value());
  }
  return "";
}

std::string compareOutputs(const std::vector<HostTensor>& got, const PreparedTest& t, size_t first,
                           const std::string& where) {
  for (size_t k = 0; k < t.expected.size(); ++k) {
    const std::string diff = compare(got[first + k], t.expected[k], relativeTolerance(t.expected[k].dtype()), 1e-7,
                                     k == 0 && !t.undefined.empty() ? &t.undefined : nullptr);
    if (!diff.empty()) return "fail: " + where + " output " + std::to_string(k) + ": " + diff;
  }
  return "";
}

// "" = pass; otherwise "skip: ..." or "fail: ...": the test on `backend` at every level.
std::string runAlone(const PreparedTest& t, const std::string& backend) {
  for (const std::string& flags : conformanceLevels()) {
    std::vector<HostTensor> got;
    std::string r = runOn(t.graph, t.feeds, backend, flags, &got);
    if (r.empty()) r = compareOutputs(got, t, 0, backend + " " + flags);
    if (!r.empty()) return r;
  }
  return "";
}

// Device backends (opencl, cuda) take the tests GKRT_CONFORMANCE_BATCH at a time (default
// 16) as one graph: one program build for all of them. A batch whose session fails to
// build or run is retried test by test, so a failure names its own test.
void runDeviceBatch(const std::vector<PreparedTest*>& batch, const std::string& backend, std::vector<std::string>* results) {
  if (batch.size() > 1) {
    testing::GraphUnion u;
    std::vector<std::pair<std::string, HostTensor>> feeds;
    for (size_t i = 0; i < batch.size(); ++i) {
      u.add(batch[i]->graph);
      for (const auto& [name, value] : batch[i]->feeds) feeds.emplace_back("p" + std::to_string(i) + "/" + name, value);
    }
    bool ran = true;
    std::vector<std::string> batched(batch.size());
    for (const std::string& flags : conformanceLevels()) {
      std::vector<HostTensor> got;
      if (!runOn(u.graph(), feeds, backend, flags, &got).empty()) {
        ran = false;
        break;
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        if (batched[i].empty()) batched[i] = compareOutputs(got, *batch[i], u.outputOf(int(i), 0), backend + " " + flags);
      }
    }
    if (ran) {
      for (size_t i = 0; i < batch.size(); ++i) (*results)[i] = batched[i];
      return;
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) (*results)[i] = runAlone(*batch[i], backend);
}

}  // namespace
}  // namespace gkrt

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: onnx_conformance NODE_TEST_DIR EXPECTED_RESULTS [--update | --shard K/N]\n";
    return 2;
  }
  const std::string dir = argv[1], expected_path = argv[2];
  if (gkrt::conformanceBackends().empty()) {  // a filter naming nothing available would pass every test vacuously
    std::string available;
    for (const std::string& b : gkrt::availableBackends()) available += (available.empty() ? "" : ", ") + b;
    std::cerr << "GKRT_CONFORMANCE_BACKENDS=" << std::getenv("GKRT_CONFORMANCE_BACKENDS")
              << " names no available backend; available here: " << available << "\n";
    return 2;
  }
  const bool update = argc > 3 && std::string(argv[3]) == "--update";
  int shard = 0, shards = 1;  // --shard K/N: only the tests whose index is K modulo N
  if (argc > 4 && std::string(argv[3]) == "--shard" && std::sscanf(argv[4], "%d/%d", &shard, &shards) != 2) shards = 0;
  if (shards < 1 || shard < 0 || shard >= shards) {
    std::cerr << "--shard takes K/N with 0 <= K < N\n";
    return 2;
  }
  std::map<std::string, std::string> expected;
  {
    std::ifstream f(expected_path);
    std::string line;
    while (std::getline(f, line)) {
      const size_t sp = line.find(' ');
      if (sp != std::string::npos) expected[line.substr(0, sp)] = line.substr(sp + 1);
    }
  }
  const auto tests = gkrt::listDir(dir);
  if (tests.empty()) {
    std::cerr << "no ONNX node tests in '" << dir << "'; run tests/conformance/generate_node_tests.py\n";
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0, regressions = 0, convertible = 0, convertible_passed = 0;
  int typed = 0, typed_passed = 0;  // convertible, and every element type one gkrt has
  std::ostringstream results;
  const bool times = std::getenv("GKRT_CONFORMANCE_TIMES") != nullptr;
  // Every test of the shard prepared, run on the host backends one by one, then on the
  // device backends in batches.
  std::vector<std::string> names;
  std::vector<gkrt::PreparedTest> prepared;
  std::vector<std::string> result;
  for (size_t index = 0; index < tests.size(); ++index) {
    if (static_cast<int>(index % static_cast<size_t>(shards)) != shard) continue;
    names.push_back(tests[index]);
    const auto t0 = std::chrono::steady_clock::now();
    prepared.push_back(gkrt::prepareTest(dir + "/" + tests[index]));
    std::string r = prepared.back().status;
    for (const std::string& backend : gkrt::conformanceBackends()) {
      if (r.empty() && (backend == "reference" || backend == "cpu")) r = gkrt::runAlone(prepared.back(), backend);
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (times && sec > 0.3) std::cerr << "slow: " << tests[index] << " " << sec << " s\n";
    result.push_back(r);
  }
  const char* batch_env = std::getenv("GKRT_CONFORMANCE_BATCH");
  const size_t batch_size = std::max(1, batch_env ? std::atoi(batch_env) : 16);
  for (const std::string& backend : gkrt::conformanceBackends()) {
    if (backend == "reference" || backend == "cpu") continue;
    std::vector<size_t> pending;  // tests that passed so far
    for (size_t i = 0; i < prepared.size(); ++i) if (result[i].empty()) pending.push_back(i);
    for (size_t b = 0; b < pending.size(); b += batch_size) {
      std::vector<gkrt::PreparedTest*> batch;
      for (size_t i = b; i < std::min(pending.size(), b + batch_size); ++i) batch.push_back(&prepared[pending[i]]);
      std::vector<std::string> r(batch.size());
      gkrt::runDeviceBatch(batch, backend, &r);
      for (size_t i = 0; i < batch.size(); ++i) result[pending[b + i]] = r[i];
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& t = names[i];
    const std::string& r = result[i];
    if (gkrt::opsConvertible(dir + "/" + t)) {
      ++convertible;
      convertible_passed += r.empty();
      if (!r.empty() && std::getenv("GKRT_CONFORMANCE_VERBOSE")) std::cout << "not passing: " << t << " " << r << "\n";
      if (r.find("element type") == std::string::npos) {
        ++typed;
        typed_passed += r.empty();
      }
    }
    const bool was_passing = expected.count(t) && expected[t] == "pass";
    if (r.empty()) {
      ++passed;
      results << t << " pass\n";
      if (!was_passing && !update) std::cout << "newly passing: " << t << "\n";
    } else if (r.rfind("skip", 0) == 0) {
      ++skipped;
      results << t << " " << r << "\n";
    } else {
      ++failed;
      results << t << " " << r << "\n";
    }
    if (!r.empty() && was_passing) {
      ++regressions;
      std::cout << "REGRESSION " << t << ": " << r << "\n";
    }
  }
  if (update) std::ofstream(expected_path) << results.str();
  if (shards > 1) std::cout << "shard " << shard << "/" << shards << ": ";
  std::cout << "onnx node tests: " << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  std::cout << "tests whose ops gkrt converts: " << convertible_passed << " of " << convertible << " pass ("
            << (convertible ? 100.0 * convertible_passed / convertible : 0.0) << "%)\n";
  std::cout << "  of those, using only element types gkrt has: " << typed_passed << " of " << typed << " pass ("
            << (typed ? 100.0 * typed_passed / typed : 0.0) << "%)\n";
  std::cout << "regressions against " << expected_path << ": " << regressions << "\n";
  return regressions == 0 ? 0 : 1;
}
