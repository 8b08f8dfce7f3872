// Every row of the seeds' Appendix 1 (expanders) and Appendix 2 (cluster ops), in
// every column, is honoured: the op is expanded / clustered exactly when the column
// says Y. Inputs come from the golden cases (GKRT_GOLDEN_DIR).
#include <nlohmann/json.hpp>

#include <fstream>

#include "fusion/expander.h"
#include "fusion/fusion_tables.h"
#include "fusion/pass_manager.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"
#include "tools/npy.h"

namespace gkrt {
namespace {

const FusionColumn kColumns[] = {FusionColumn::kAscend, FusionColumn::kCpu, FusionColumn::kGpu};

// One graph per op: its first golden case, or a case made here where the golden one
// sits outside what the expander handles (documented declines).
struct OpGraph {
  ir::Graph graph;
  std::vector<HostTensor> feeds;  // one per graph input
};

// Feeds for a graph built here: values in [0.1, 1.9] suit every op made here.
std::vector<HostTensor> feedsFor(const ir::Graph& g) {
  std::vector<HostTensor> feeds;
  for (int t : g.inputs) {
    HostTensor h(g.tensors[t].dtype, g.tensors[t].shape);
    for (int64_t i = 0; i < h.size(); ++i) h.as<float>()[i] = 0.1f + 0.3f * static_cast<float>(i % 7);
    feeds.push_back(h);
  }
  return feeds;
}

StatusOr<OpGraph> withFeeds(StatusOr<ir::Graph> g) {
  if (!g.ok()) return g.status();
  OpGraph r{std::move(g).value(), {}};
  r.feeds = feedsFor(r.graph);
  return r;
}

StatusOr<OpGraph> graphFor(const std::string& op_name, bool cast_inputs) {
  const OpDef* op = findOp(op_name);
  GraphBuilder b;
  const std::string name = op->name;
  if (name == "MatMul" || name == "BatchMatMul") {  // expands only when K == 1
    Value a = b.input("a", DType::kFloat32, name == "MatMul" ? Shape{3, 1} : Shape{2, 3, 1});
    Value c = b.input("c", DType::kFloat32, name == "MatMul" ? Shape{1, 4} : Shape{2, 1, 4});
    b.output(b.op1(name, {a, c}, MatMulAttrs{}));
    return withFeeds(b.finish());
  }
  if (name == "Tile") {  // expands only when every tiled axis has size 1
    Value x = b.input("x", DType::kFloat32, {3, 1});
    b.output(b.op1("Tile", {x}, TileAttrs{{2, 1, 4}}));
    return withFeeds(b.finish());
  }
  if (name == "ArgMaxWithValue" || name == "ArgMinWithValue") {  // expands when the index is unused
    Value x = b.input("x", DType::kFloat32, {3, 4});
    auto outs = b.op(name, {x}, AxisAttrs{1, false}, 2);
    b.output(b.exp(outs[1]));
    return withFeeds(b.finish());
  }
  if (name == "Dropout") {
    Value x = b.input("x", DType::kFloat32, {8});
    b.output(b.op("Dropout", {x}, DropoutAttrs{0.5f, 3}, 1)[0]);
    return withFeeds(b.finish());
  }
  if (name == "StandardNormal") {
    b.output(b.op1("StandardNormal", {}, StandardNormalAttrs{{5}, 1}));
    return withFeeds(b.finish());
  }
  const char* dir = std::getenv("GKRT_GOLDEN_DIR");
  std::ifstream f(std::string(dir ? dir : "") + "/manifest.json");
  if (!f) return makeError(StatusCode::kNotFound, "no golden manifest");
  const auto m = nlohmann::json::parse(f);
  for (const auto& c : m["cases"]) {
    if (findOp(c["op"].get<std::string>()) != op) continue;
    std::vector<Value> ins;
    std::vector<HostTensor> feeds;
    for (size_t k = 0; k < c["inputs"].size(); ++k) {
      if (c["inputs"][k].is_null()) { ins.push_back(Value{}); continue; }
      ASSIGN_OR_RETURN(HostTensor t, readNpy(std::string(dir) + "/" + c["inputs"][k].get<std::string>()));
      Value v = b.input("in" + std::to_string(k), t.dtype(), t.shape());
      feeds.push_back(t);
      ins.push_back(cast_inputs ? b.op1("Cast", {v}, CastAttrs{t.dtype()}) : v);
    }
    ASSIGN_OR_RETURN(Attrs attrs, makeAttrs(op->attr_kind, c["attrs"].get<std::map<std::string, std::string>>()));
    auto outs = b.op(c["op"].get<std::string>(), ins, attrs, c["num_outputs"].get<int>());
    for (Value v : outs) b.output(v);
    ASSIGN_OR_RETURN(ir::Graph g, b.finish());
    return OpGraph{std::move(g), std::move(feeds)};
  }
  return makeError(StatusCode::kNotFound, "no golden case for ", op_name);
}

bool containsOp(const ir::Graph& g, const OpDef* op, bool inside_fused_only) {
  for (const ir::Node& n : g.nodes) {
    if (n.subgraph) {
      for (const ir::Node& m : n.subgraph->nodes) if (m.op == op) return true;
    } else if (!inside_fused_only && n.op == op) {
      return true;
    }
  }
  return false;
}

TEST(FusionTables, Appendix1ExpandersHonouredPerColumn) {
  int checked = 0, compared = 0;
  for (const FusionTableEntry& e : expanderTable()) {
    const OpDef* op = findOp(e.op);
    ASSERT_NE(op, nullptr) << e.op;
    for (FusionColumn col : kColumns) {
      SCOPED_TRACE(std::string(e.op) + " in the " + fusionColumnName(col) + " column");
      auto og = graphFor(e.op, false);
      ASSERT_TRUE(og.ok()) << og.status().toString();
      const std::string flags = "--opt_level=1 --disable_pass=StaticShapeCluster,GraphKernelSplitter";
      auto o = parseFusionFlags(flags);
      ASSERT_TRUE(o.ok());
      ir::Graph g = ir::cloneGraph(og->graph);
      auto r = runFusionPipeline(g, *o, col);
      ASSERT_TRUE(r.ok()) << r.status().toString();
      const bool want = e.inColumn(col);
      if (want) {
        EXPECT_TRUE(hasExpander(op->name)) << "the table says Y but there is no expander";
      }
      EXPECT_EQ(!containsOp(g, op, false), want) << (want ? "not expanded" : "expanded although the column says N");
      ++checked;
      if (!want) continue;
      // The expansion computes what the op computes (rtol 1e-4, atol 1e-5).
      auto unexpanded = testing::runGraph(og->graph, og->feeds, "reference", *parseFusionFlags("--opt_level=0"));
      auto o2 = *o;
      o2.profile = col;
      auto expanded = testing::runGraph(og->graph, og->feeds, "reference", o2);
      ASSERT_TRUE(unexpanded.ok() && expanded.ok()) << unexpanded.status().toString() << expanded.status().toString();
      for (size_t k = 0; k < unexpanded->size(); ++k) {
        EXPECT_EQ(testing::compareTensors((*expanded)[k], (*unexpanded)[k], 1e-4, 1e-5), "") << "output " << k;
      }
      ++compared;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(expanderTable().size()) * 3);
  std::cout << "expander rows checked: " << checked << ", expansions compared with the op: " << compared << "\n";
}

TEST(FusionTables, Appendix2ClusterOpsHonouredPerColumn) {
  for (const FusionTableEntry& e : clusterTable()) {
    const OpDef* op = findOp(e.op);
    ASSERT_NE(op, nullptr) << e.op;
    for (FusionColumn col : kColumns) {
      SCOPED_TRACE(std::string(e.op) + " in the " + fusionColumnName(col) + " column");
      auto og = graphFor(e.op, /*cast_inputs=*/true);  // Cast is a cluster op in every column
      ASSERT_TRUE(og.ok()) << og.status().toString();
      auto o = parseFusionFlags("--opt_level=1 --disable_pass=GraphKernelExpander,GraphKernelSplitter");
      ASSERT_TRUE(o.ok());
      ir::Graph& g = og->graph;
      auto r = runFusionPipeline(g, *o, col);
      ASSERT_TRUE(r.ok()) << r.status().toString();
      EXPECT_EQ(containsOp(g, op, true), e.inColumn(col))
          << (e.inColumn(col) ? "not clustered" : "clustered although the column says N");
    }
  }
}

}  // namespace
}  // namespace gkrt
