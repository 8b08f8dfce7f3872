#include "tools/fusion_bisect.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "fusion/expander.h"
#include "fusion/fusion_options.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"
#include "tools/parse_args.h"

namespace gkrt::tools {
namespace {

using Restores = std::function<StatusOr<bool>(const std::vector<std::string>&)>;

std::string join(const std::vector<std::string>& items, const char* sep = ",") {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// `flags` with `--key=values`: an existing --key token is replaced, and for list
// keys (disable_*) its items are kept in front of the new ones.
std::string withFlag(const std::string& flags, const std::string& key, std::vector<std::string> values) {
  std::stringstream in(flags);
  std::string out, prefix = "--" + key + "=";
  std::vector<std::string> kept;
  for (std::string token; in >> token;) {
    if (token.rfind(prefix, 0) == 0) {
      if (key.rfind("disable_", 0) == 0) {
        std::stringstream items(token.substr(prefix.size()));
        for (std::string item; std::getline(items, item, ',');) {
          if (!item.empty() && !std::count(kept.begin(), kept.end(), item)) kept.push_back(item);
        }
      }
      continue;
    }
    out += (out.empty() ? "" : " ") + token;
  }
  for (std::string& v : values) if (!std::count(kept.begin(), kept.end(), v)) kept.push_back(std::move(v));
  return out + (out.empty() ? "" : " ") + prefix + join(kept);
}

// QuickXplain: the culprits within `c`, given that `background` is disabled too.
StatusOr<std::vector<std::string>> quickXplain(const std::vector<std::string>& background, bool has_delta,
                                               const std::vector<std::string>& c, const Restores& restores) {
  if (has_delta) {
    ASSIGN_OR_RETURN(bool ok, restores(background));
    if (ok) return std::vector<std::string>{};
  }
  if (c.size() <= 1) return c;
  const std::vector<std::string> c1(c.begin(), c.begin() + static_cast<long>(c.size() / 2)), c2(c.begin() + static_cast<long>(c.size() / 2), c.end());
  std::vector<std::string> b1 = background;
  b1.insert(b1.end(), c1.begin(), c1.end());
  ASSIGN_OR_RETURN(std::vector<std::string> d2, quickXplain(b1, true, c2, restores));
  std::vector<std::string> b2 = background;
  b2.insert(b2.end(), d2.begin(), d2.end());
  ASSIGN_OR_RETURN(std::vector<std::string> d1, quickXplain(b2, !d2.empty(), c1, restores));
  d1.insert(d1.end(), d2.begin(), d2.end());
  return d1;
}

// Max over elements of |got - want| / (1 + |want|); NaN where exactly one is NaN, or
// where shapes differ.
double relativeError(const HostTensor& got, const HostTensor& want) {
  if (got.shape() != want.shape()) return NAN;
  double worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = ops::loadF(got.data(), got.dtype(), i), w = ops::loadF(want.data(), want.dtype(), i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::isnan(g) || std::isnan(w)) return NAN;
    if (g == w) continue;  // equal infinities
    worst = std::max(worst, std::fabs(g - w) / (1 + std::fabs(w)));
  }
  return worst;
}

bool within(double error, double tolerance) { return !std::isnan(error) && error <= tolerance; }

struct Run {
  std::map<std::string, HostTensor> outputs;
  std::vector<std::string> output_order;
  ir::Graph compiled;
  FusionReport report;
  std::vector<std::string> kernel_backends;
};

class Bisector {
 public:
  Bisector(const ir::Graph& model, const BisectOptions& o) : model_(model), o_(o) {}

  StatusOr<Run> run(const ir::Graph& model, const std::string& backend, const std::string& flags) {
    SessionOptions opts;
    opts.backend = backend;
    opts.backend_options = o_.backend_options;
    opts.input_shapes = o_.input_shapes;
    for (const auto& [name, t] : o_.inputs) opts.input_shapes[name] = t.shape();
    ASSIGN_OR_RETURN(FusionOptions env, fusionOptionsFromEnvironment());
    auto fusion = parseFusionFlags(flags, env);
    if (!fusion.ok()) return fusion.status().withContext("fusion flags '" + flags + "'");
    opts.fusion = *fusion;
    ++runs_;
    ASSIGN_OR_RETURN(auto session, Session::create(model, opts));
    std::mt19937 rng(7);
    for (const TensorInfo& in : session->inputs()) {
      auto it = o_.inputs.find(in.name);
      if (it == o_.inputs.end()) {  // the same value for every run
        ASSIGN_OR_RETURN(HostTensor t, randomInput(in, rng));
        it = o_.inputs.emplace(in.name, std::move(t)).first;
      }
      RETURN_IF_ERROR(session->setInput(in.name, it->second));
    }
    RETURN_IF_ERROR(session->run());
    Run r;
    for (const TensorInfo& out : session->outputs()) {
      ASSIGN_OR_RETURN(HostTensor t, session->output(out.name));
      r.outputs.emplace(out.name, std::move(t));
      r.output_order.push_back(out.name);
    }
    r.compiled = ir::cloneGraph(session->compiledGraph());
    r.report = session->fusionReport();
    for (const Session::KernelInfo& k : session->kernelInfos()) r.kernel_backends.push_back(k.backend);
    return r;
  }

  // Worst output error of `got` against the reference run; `worst` names that output.
  double compare(const Run& got, const Run& want, std::string* worst) const {
    double e = 0;
    for (const std::string& name : want.output_order) {
      auto it = got.outputs.find(name);
      const double err = it == got.outputs.end() ? NAN : relativeError(it->second, want.outputs.at(name));
      if (std::isnan(err) || err > e || (worst && worst->empty())) {
        if (worst) *worst = name;
        if (std::isnan(err)) return err;
        e = err;
      }
    }
    return e;
  }

  // Whether the target with the user's flags plus --key=values matches the reference.
  StatusOr<bool> restoredBy(const std::string& key, const std::vector<std::string>& values) {
    const std::string flags = withFlag(o_.flags, key, values), extra_flags = "--" + key + "=" + join(values);
    auto it = tried_.find(flags);
    if (it != tried_.end()) return it->second;
    ASSIGN_OR_RETURN(Run r, run(model_, o_.backend, flags));
    const double e = compare(r, reference_, nullptr);
    const bool ok = within(e, o_.tolerance);
    if (o_.progress) {
      std::ostringstream line;
      line << "run " << runs_ << ": " << extra_flags << " -> error " << e << (ok ? " (matches)" : "");
      o_.progress(line.str());
    }
    tried_[flags] = ok;
    return ok;
  }

  StatusOr<BisectResult> bisect();

 private:
  std::vector<std::string> passesThatChanged(const FusionReport& r) const;
  std::vector<std::string> kernelsInvolved(const BisectResult& result) const;
  StatusOr<Divergence> firstDivergence(const std::string& target_flags, bool every_tensor = true);

  const ir::Graph& model_;
  BisectOptions o_;
  Run reference_, fused_;
  std::map<std::string, bool> tried_;
  int runs_ = 0;
};

// Passes that changed the graph, by the name disable_pass takes: the bare name, or
// "stage_name.name" where a name occurs twice (DeadNodeElimination).
std::vector<std::string> Bisector::passesThatChanged(const FusionReport& r) const {
  std::map<std::string, int> count;
  struct Parsed { std::string stage, name; bool changed; };
  std::vector<Parsed> parsed;
  for (const PassRecord& p : r.passes) {  // "stage<N>_<stage_name>_<id>_<name>"
    size_t a = p.name.find('_'), b = p.name.find('_', a + 1), c = p.name.find('_', b + 1);
    if (c == std::string::npos) continue;
    parsed.push_back({p.name.substr(a + 1, b - a - 1), p.name.substr(c + 1), p.changed});
    ++count[parsed.back().name];
  }
  std::vector<std::string> names;
  for (const Parsed& p : parsed) {
    if (p.changed) names.push_back(count[p.name] > 1 ? p.stage + "." + p.name : p.name);
  }
  return names;
}

std::vector<std::string> opsOf(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const ir::Node& n : g.nodes) {
    if (n.subgraph) {
      for (const std::string& op : opsOf(*n.subgraph)) ops.push_back(op);
    } else {
      ops.push_back(n.op->name);
    }
  }
  return ops;
}

std::vector<std::string> distinct(std::vector<std::string> v) {
  std::vector<std::string> out;
  for (std::string& s : v) if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  return out;
}

std::string kernelText(const ir::Node& n) {
  std::vector<std::string> ops = n.subgraph ? opsOf(*n.subgraph) : std::vector<std::string>{n.op->name};
  return n.name + " (" + join(ops, ", ") + ")";
}

std::vector<std::string> Bisector::kernelsInvolved(const BisectResult& result) const {
  const ir::Graph& g = fused_.compiled;
  std::set<std::string> expanded_nodes;  // model nodes whose op's expander is at fault
  for (const ir::Node& n : model_.nodes) {
    if (std::count(result.expand_ops.begin(), result.expand_ops.end(), n.op->name)) expanded_nodes.insert(n.name + "/");
  }
  auto made_by_culprit = [&](const ir::Node& n) {
    auto it = fused_.report.node_origin_pass.find(n.name);
    if (it == fused_.report.node_origin_pass.end()) return false;
    for (const std::string& p : result.passes) {
      if (p == it->second || (p.size() > it->second.size() && p.compare(p.size() - it->second.size() - 1, std::string::npos, "." + it->second) == 0)) return true;
    }
    return false;
  };
  std::vector<std::string> kernels;
  for (const ir::Node& n : g.nodes) {
    bool involved = made_by_culprit(n);
    const std::vector<ir::Node>& inner = n.subgraph ? n.subgraph->nodes : std::vector<ir::Node>{n};
    for (const ir::Node& m : inner) {
      involved = involved || made_by_culprit(m);
      if (n.subgraph && std::count(result.cluster_ops.begin(), result.cluster_ops.end(), m.op->name)) involved = true;
      for (const std::string& prefix : expanded_nodes) involved = involved || m.name.rfind(prefix, 0) == 0;
    }
    if (involved) kernels.push_back(kernelText(n));
  }
  return kernels;
}

// Marks tensors of the model as graph outputs of both runs and returns the first
// that differs: every value the model computes, in the model's order (exposing them
// rarely changes how the ops fuse), else only the kernel outputs of the fused graph,
// in run order.
StatusOr<Divergence> Bisector::firstDivergence(const std::string& target_flags, bool every_tensor) {
  ir::Graph probe = ir::cloneGraph(model_);
  std::vector<std::string> watched;
  std::set<int> outputs(probe.outputs.begin(), probe.outputs.end());
  auto watch = [&](const std::string& name) {
    const int m = probe.findTensor(name);
    if (name.empty() || m < 0 || probe.tensors[m].isConstant()) return;
    if (std::count(probe.inputs.begin(), probe.inputs.end(), m)) return;
    watched.push_back(name);
    if (outputs.insert(m).second) probe.outputs.push_back(m);
  };
  if (every_tensor) {
    for (const ir::Node& n : model_.nodes) for (int t : n.outputs) watch(model_.tensors[t].name);
  } else {
    for (const ir::Node& n : fused_.compiled.nodes) for (int t : n.outputs) watch(fused_.compiled.tensors[t].name);
  }
  RETURN_IF_ERROR(ir::validateGraph(probe));
  ASSIGN_OR_RETURN(Run want, run(probe, o_.reference_backend, "--opt_level=0"));
  ASSIGN_OR_RETURN(Run got, run(probe, o_.backend, target_flags));
  std::map<std::string, std::string> kernel_of;  // tensor -> the kernel writing it
  for (const ir::Node& n : got.compiled.nodes) for (int t : n.outputs) kernel_of[got.compiled.tensors[t].name] = n.name;
  for (const std::string& tensor : watched) {
    auto a = got.outputs.find(tensor), b = want.outputs.find(tensor);
    if (a == got.outputs.end() || b == want.outputs.end()) continue;
    const double e = relativeError(a->second, b->second);
    if (!within(e, o_.tolerance)) return Divergence{tensor, kernel_of[tensor], e};
  }
  if (every_tensor) return firstDivergence(target_flags, false);
  return Divergence{};
}

StatusOr<BisectResult> Bisector::bisect() {
  BisectResult result;
  result.backend = o_.backend;
  result.reference_backend = o_.reference_backend;
  result.tolerance = o_.tolerance;
  ASSIGN_OR_RETURN(reference_, run(model_, o_.reference_backend, "--opt_level=0"));
  ASSIGN_OR_RETURN(fused_, run(model_, o_.backend, o_.flags));
  result.error = compare(fused_, reference_, &result.worst_output);
  result.matched = within(result.error, o_.tolerance);
  if (result.matched) {
    result.runs = runs_;
    return result;
  }
  ASSIGN_OR_RETURN(bool unfused_ok, restoredBy("opt_level", {"0"}));
  const std::vector<std::string> passes = passesThatChanged(fused_.report);
  bool all_passes_ok = false;
  if (unfused_ok && !passes.empty()) {
    ASSIGN_OR_RETURN(all_passes_ok, restoredBy("disable_pass", passes));
  }
  if (!unfused_ok || !all_passes_ok) {
    result.fusion_explains = false;  // where the target goes wrong without fusion
    ASSIGN_OR_RETURN(result.first_divergence, firstDivergence(unfused_ok ? o_.flags : withFlag(o_.flags, "opt_level", {"0"})));
    result.runs = runs_;
    return result;
  }
  ASSIGN_OR_RETURN(result.passes, minimalRestoringSet(passes, [&](const std::vector<std::string>& s) {
                     return restoredBy("disable_pass", s);
                   }));
  // Where the values first go wrong, and so which op to suspect first.
  ASSIGN_OR_RETURN(result.first_divergence, firstDivergence(o_.flags));
  std::string suspect;
  for (const ir::Node& n : model_.nodes) {
    for (int t : n.outputs) if (model_.tensors[t].name == result.first_divergence.tensor) suspect = n.op->name;
  }
  // Narrow a culprit expander or clustering pass to the ops whose rules are wrong:
  // the suspect alone first (removing a neighbour from a cluster can also hide a wrong
  // rule), then halving.
  const bool expander = std::count(result.passes.begin(), result.passes.end(), "GraphKernelExpander") > 0;
  const bool cluster = std::count(result.passes.begin(), result.passes.end(), "StaticShapeCluster") > 0 ||
                       std::count(result.passes.begin(), result.passes.end(), "GraphKernelSplitter") > 0;
  std::string fix_key = "disable_pass";
  std::vector<std::string> fix_values = result.passes;
  if (result.passes.size() == 1 && (expander || cluster)) {
    std::vector<std::string> ops;
    if (expander) {
      for (const std::string& op : distinct(opsOf(model_))) if (hasExpander(op)) ops.push_back(op);
    } else {
      for (const ir::Node& n : fused_.compiled.nodes) {
        if (n.subgraph) for (const std::string& op : opsOf(*n.subgraph)) ops.push_back(op);
      }
      ops = distinct(ops);
    }
    const std::string key = expander ? "disable_expand_ops" : "disable_cluster_ops";
    auto restores_ops = [&](const std::vector<std::string>& s) { return restoredBy(key, s); };
    bool all_ops_ok = false;
    if (!ops.empty()) {
      ASSIGN_OR_RETURN(all_ops_ok, restores_ops(ops));
    }
    bool suspect_ok = false;
    if (all_ops_ok && std::count(ops.begin(), ops.end(), suspect)) {
      ASSIGN_OR_RETURN(suspect_ok, restores_ops({suspect}));
    }
    if (suspect_ok) {
      (expander ? result.expand_ops : result.cluster_ops) = {suspect};
      fix_key = key;
      fix_values = {suspect};
    } else if (all_ops_ok) {
      ASSIGN_OR_RETURN(std::vector<std::string> culprits, minimalRestoringSet(ops, restores_ops));
      (expander ? result.expand_ops : result.cluster_ops) = culprits;
      fix_key = key;
      fix_values = culprits;
    }
  }
  result.fix_flags = withFlag(o_.flags, fix_key, fix_values);
  ASSIGN_OR_RETURN(Run fixed, run(model_, o_.backend, result.fix_flags));
  result.fixed_error = compare(fixed, reference_, nullptr);
  result.fix_verified = within(result.fixed_error, o_.tolerance);
  result.kernels = kernelsInvolved(result);
  result.runs = runs_;
  return result;
}

}  // namespace

StatusOr<std::vector<std::string>> minimalRestoringSet(const std::vector<std::string>& candidates,
                                                       const Restores& restores) {
  return quickXplain({}, false, candidates, restores);
}

StatusOr<BisectResult> bisectFusion(const ir::Graph& model, const BisectOptions& options) {
  Bisector b(model, options);
  return b.bisect();
}

std::string formatBisectReport(const BisectResult& r) {
  std::ostringstream os;
  os << "fused " << r.backend << " vs unfused " << r.reference_backend << ": max error " << r.error << " (output '"
     << r.worst_output << "', tolerance " << r.tolerance << ")\n";
  if (r.matched) {
    os << "outputs match: fusion changes nothing beyond the tolerance (" << r.runs << " runs)\n";
    return os.str();
  }
  if (!r.fusion_explains) {
    os << "the outputs differ with fusion off too (or with every pass disabled): not a fusion problem, but the "
       << r.backend << " backend's kernels\n";
  } else {
    os << "culprit: ";
    if (!r.expand_ops.empty()) os << "the expander of " << join(r.expand_ops, ", ") << " (GraphKernelExpander)\n";
    else if (!r.cluster_ops.empty()) os << "clustering " << join(r.cluster_ops, ", ") << " into fused kernels (" << join(r.passes, ", ") << ")\n";
    else os << "pass " << join(r.passes, ", ") << "\n";
    os << "fix: MS_DEV_GRAPH_KERNEL_FLAGS=\"" << r.fix_flags << "\"\n";
    os << "     (or gkrt ... --flags \"" << r.fix_flags << "\"); with it the max error is " << r.fixed_error
       << (r.fix_verified ? " (verified)" : " (STILL ABOVE the tolerance)") << "\n";
    os << "fused kernels involved: " << (r.kernels.empty() ? "none found" : join(r.kernels, "; ")) << "\n";
  }
  if (!r.first_divergence.tensor.empty()) {
    os << "first tensor that diverges: '" << r.first_divergence.tensor << "' written by kernel '"
       << r.first_divergence.kernel << "', max error " << r.first_divergence.error << "\n";
  } else {
    os << "first tensor that diverges: none of the kernel outputs the model names (only internal values)\n";
  }
  os << "(" << r.runs << " runs)\n";
  return os.str();
}

}  // namespace gkrt::tools
