// Every op's reference kernel (and every backend) against numpy-computed outputs made
// by tests/golden/make_op_cases.py. The data directory comes from GKRT_GOLDEN_DIR.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "backends/backend.h"
#include "fusion/fusion_options.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/graph_union.h"
#include "tests/unit/test_support.h"
#include "tools/npy.h"

namespace gkrt {
namespace {

nlohmann::json loadManifest(std::string* dir) {
  const char* env = std::getenv("GKRT_GOLDEN_DIR");
  *dir = env ? env : "";
  std::ifstream f(*dir + "/manifest.json");
  if (!f) return nullptr;
  return nlohmann::json::parse(f);
}

// Ops whose output is random by design: checked by properties in random_ops_test.cc.
// Fused is checked in fused_op_test.cc; If, Loop and Scan (they hold subgraphs) in
// control_flow_test.cc and the ONNX node tests.
const std::set<std::string> kCheckedElsewhere = {"Dropout", "StandardNormal", "UniformReal", "Fused", "If", "Loop", "Scan"};

// Every case runs unfused and under each fusion table column, so each expander and
// each cluster is checked against numpy too.
struct FusionConfig {
  const char* name;
  const char* flags;
};
const FusionConfig kConfigs[] = {
    {"unfused", "--opt_level=0"},
    {"cpu column", "--opt_level=2 --fusion_profile=cpu"},
    {"gpu column", "--opt_level=2 --fusion_profile=gpu"},
    {"ascend column", "--opt_level=2 --fusion_profile=ascend"},
    {"gpu column, opt_level 3", "--opt_level=3 --fusion_profile=gpu"},
};

TEST(OpGolden, EveryOpHasACase) {
  std::string dir;
  nlohmann::json m = loadManifest(&dir);
  ASSERT_FALSE(m.is_null()) << "no golden data in '" << dir << "': run ctest (the golden_data fixture generates it)";
  std::set<std::string> covered;
  for (const auto& c : m["cases"]) covered.insert(findOp(c["op"].get<std::string>())->name);
  for (const OpDef& op : allOps()) {
    if (kCheckedElsewhere.count(op.name)) continue;
    EXPECT_TRUE(covered.count(op.name)) << "op " << op.name << " has no golden case";
  }
}

// GKRT_GOLDEN_BACKENDS=cuda,cpu picks the backends (unset: the host ones, reference and
// cpu, as the discovered ctest entry runs them; "all": every available backend); GKRT_GOLDEN_CONFIGS=0,2,4 the fusion
// configurations (indices into kConfigs: CI runs opencl under the unfused and gpu-column
// ones, the host backends under all); GKRT_GOLDEN_SHARD=K/N runs the cases whose index is
// K modulo N (the GPU machine runs the cuda cases in parallel shards);
// GKRT_GOLDEN_PROGRESS=1 names each case on stderr before it runs.
std::vector<std::string> goldenBackends() {
  std::vector<std::string> all = availableBackends(), chosen;
  const char* env = std::getenv("GKRT_GOLDEN_BACKENDS");
  if (env && std::string(env) == "all") return all;
  if (!env || !*env) env = "reference,cpu";
  const std::string list = std::string(",") + env + ",";
  for (const std::string& b : all) if (list.find("," + b + ",") != std::string::npos) chosen.push_back(b);
  return chosen;
}

// One golden case as a graph with its inputs and numpy's outputs.
struct GoldenCase {
  std::string name;
  ir::Graph graph;
  std::vector<HostTensor> feeds, want;
  double rtol = 0, atol = 0;
};

std::string checkOutputs(const std::vector<HostTensor>& got, size_t first, const GoldenCase& c) {
  for (size_t k = 0; k < c.want.size(); ++k) {
    const std::string diff = testing::compareTensors(got[first + k], c.want[k], c.rtol, c.atol);
    if (!diff.empty()) return "output " + std::to_string(k) + ": " + diff;
  }
  return "";
}

TEST(OpGolden, AllCasesOnAllBackends) {
  std::string dir;
  nlohmann::json m = loadManifest(&dir);
  ASSERT_FALSE(m.is_null()) << "no golden data in '" << dir << "'";
  int shard = 0, shards = 1;
  if (const char* env = std::getenv("GKRT_GOLDEN_SHARD")) {
    ASSERT_EQ(std::sscanf(env, "%d/%d", &shard, &shards), 2) << "GKRT_GOLDEN_SHARD takes K/N";
    ASSERT_TRUE(shards > 0 && shard >= 0 && shard < shards) << "GKRT_GOLDEN_SHARD takes K/N with 0 <= K < N";
  }
  const std::vector<std::string> backends = goldenBackends();
  const bool progress = std::getenv("GKRT_GOLDEN_PROGRESS") != nullptr;  // each case named before it runs
  ASSERT_FALSE(backends.empty()) << "GKRT_GOLDEN_BACKENDS names no available backend";
  std::vector<GoldenCase> cases;
  int index = -1;
  for (const auto& c : m["cases"]) {
    if (++index % shards != shard) continue;
    GoldenCase gc;
    gc.name = c["name"];
    const OpDef* op = findOp(c["op"].get<std::string>());
    ASSERT_NE(op, nullptr) << c["op"];
    std::map<std::string, std::string> fields = c["attrs"].get<std::map<std::string, std::string>>();
    auto attrs = makeAttrs(op->attr_kind, fields);
    ASSERT_TRUE(attrs.ok()) << gc.name << ": " << attrs.status().toString();
    GraphBuilder b;
    std::vector<Value> ins;
    for (size_t k = 0; k < c["inputs"].size(); ++k) {
      if (c["inputs"][k].is_null()) { ins.push_back(Value{}); continue; }
      auto t = readNpy(dir + "/" + c["inputs"][k].get<std::string>());
      ASSERT_TRUE(t.ok()) << t.status().toString();
      bool constant = false;
      for (const auto& ci : c.value("constant_inputs", nlohmann::json::array())) constant = constant || ci == k;
      if (constant) {  // a shape operand the session must know at compile
        ins.push_back(b.constant("in" + std::to_string(k), t->dtype(), t->shape(), t->data()));
        continue;
      }
      ins.push_back(b.input("in" + std::to_string(k), t->dtype(), t->shape()));
      gc.feeds.push_back(*t);
    }
    const int nout = c["num_outputs"];
    auto outs = b.op(c["op"].get<std::string>(), ins, *attrs, nout);
    for (int k = 0; k < nout; ++k) b.output(outs[k], "out" + std::to_string(k));
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << gc.name << ": " << g.status().toString();
    gc.graph = std::move(g).value();
    for (int k = 0; k < nout; ++k) {
      auto want = readNpy(dir + "/" + c["outputs"][k].get<std::string>());
      ASSERT_TRUE(want.ok()) << want.status().toString();
      gc.want.push_back(std::move(want).value());
    }
    gc.rtol = c["rtol"];
    gc.atol = c["atol"];
    cases.push_back(std::move(gc));
  }
  // Device backends take GKRT_GOLDEN_BATCH cases (default 16) as one graph: one program
  // build for all of them (tests/unit/graph_union.h); a batch that fails to build or run
  // is retried case by case, so a failure names its case.
  const char* batch_env = std::getenv("GKRT_GOLDEN_BATCH");
  const char* configs_env = std::getenv("GKRT_GOLDEN_CONFIGS");
  const std::string configs = std::string(",") + (configs_env && *configs_env ? configs_env : "0,1,2,3,4") + ",";
  int passed = 0, failed = 0;
  for (const std::string& backend : backends) {
    const bool device = backend != "reference" && backend != "cpu";
    const size_t batch = device ? std::max(1, batch_env ? std::atoi(batch_env) : 16) : 1;
    for (const FusionConfig& config : kConfigs) {
      if (configs.find("," + std::to_string(&config - kConfigs) + ",") == std::string::npos) continue;
      auto fusion = parseFusionFlags(config.flags);
      ASSERT_TRUE(fusion.ok()) << fusion.status().toString();
      const auto runAlone = [&](const GoldenCase& c) {
        SCOPED_TRACE(c.name + " on " + backend + ", " + config.name);
        if (progress) std::cerr << "case " << c.name << " on " << backend << ", " << config.name << std::endl;
        auto got = testing::runGraph(c.graph, c.feeds, backend, *fusion);
        const std::string diff = got.ok() ? checkOutputs(*got, 0, c) : got.status().toString();
        EXPECT_EQ(diff, "");
        (diff.empty() ? passed : failed)++;
      };
      for (size_t b0 = 0; b0 < cases.size(); b0 += batch) {
        const size_t b1 = std::min(cases.size(), b0 + batch);
        if (b1 - b0 > 1) {
          testing::GraphUnion u;
          std::vector<HostTensor> feeds;
          for (size_t i = b0; i < b1; ++i) {
            u.add(cases[i].graph);
            feeds.insert(feeds.end(), cases[i].feeds.begin(), cases[i].feeds.end());
          }
          if (progress) std::cerr << "case " << cases[b0].name << " .. " << cases[b1 - 1].name << " on " << backend << ", " << config.name << std::endl;
          auto got = testing::runGraph(u.graph(), feeds, backend, *fusion);
          if (got.ok()) {
            for (size_t i = b0; i < b1; ++i) {
              const std::string diff = checkOutputs(*got, size_t(u.outputOf(int(i - b0), 0)), cases[i]);
              if (diff.empty()) {
                passed++;
              } else {
                runAlone(cases[i]);  // names the case with its own session
              }
            }
            continue;
          }
        }
        for (size_t i = b0; i < b1; ++i) runAlone(cases[i]);
      }
    }
  }
  std::cout << "golden op cases: " << passed << " passed, " << failed << " failed\n";
}

}  // namespace
}  // namespace gkrt
