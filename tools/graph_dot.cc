#include "tools/graph_dot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

extern char** environ;

namespace gkrt::tools {
namespace {

constexpr size_t kMaxLabel = 36;

std::string shorten(const std::string& s) {
  return s.size() <= kMaxLabel ? s : s.substr(0, 14) + "..." + s.substr(s.size() - (kMaxLabel - 17));
}

std::string typeText(const ir::Tensor& t) { return std::string(dtypeName(t.dtype)) + "[" + shapeToString(t.shape) + "]"; }

std::string constText(const ir::Tensor& t) {
  if (numElements(t.shape) == 1 && t.constant->size >= dtypeSize(t.dtype)) {
    std::ostringstream v;
    v << ops::loadF(t.constant->data, t.dtype, 0);
    return "const " + v.str();
  }
  return "const " + typeText(t);
}

// MindSpore names a fused kernel after its ops ("Mul_Add_fusion"); long ones by count.
std::string fusedName(const ir::Graph& sub) {
  if (sub.nodes.size() > 5) return std::to_string(sub.nodes.size()) + " ops";
  std::string name;
  for (const ir::Node& n : sub.nodes) name += std::string(n.subgraph ? "Fused" : n.op->name) + "_";
  return name + "fusion";
}

struct Vertex {
  std::string label;
  int cluster = -1;  // index into Drawing::clusters, -1 = the side's top level
  bool io = false;
  bool fallback = false;
  bool hidden = false;
  std::string key;  // node or tensor name, for --region
};
struct Edge {
  int from, to;
  std::string label;
};
struct Cluster {
  std::string label;
  int parent = -1;
  bool fallback = false;
};
struct Drawing {
  std::vector<Vertex> vertices;
  std::vector<Edge> edges;
  std::vector<Cluster> clusters;
};

// Where a tensor's value comes from in the drawing: a vertex, or a folded constant.
struct Source {
  int vertex = -1;
  std::string label;  // edge label (tensor name, dtype, shape) or the constant's text
};

class DrawingBuilder {
 public:
  DrawingBuilder(const FusionPicture& pic, bool edge_labels) : pic_(pic), edge_labels_(edge_labels) {}

  Drawing build(const ir::Graph& g, bool fused_side) {
    d_ = {};
    fused_side_ = fused_side;
    std::vector<Source> inputs;
    for (int t : g.inputs) {
      const ir::Tensor& x = g.tensors[t];
      inputs.push_back({addVertex(x.name + "\n" + typeText(x), -1, true, x.name), tensorLabel(x)});
    }
    const std::vector<Source> outs = addGraph(g, inputs, -1, true);
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const ir::Tensor& x = g.tensors[g.outputs[k]];
      const int v = addVertex(x.name + "\n" + typeText(x), -1, true, x.name);
      if (outs[k].vertex >= 0) d_.edges.push_back({outs[k].vertex, v, ""});
    }
    return d_;
  }

 private:
  int addVertex(std::string label, int cluster, bool io, std::string key) {
    d_.vertices.push_back({std::move(label), cluster, io, false, false, std::move(key)});
    return static_cast<int>(d_.vertices.size()) - 1;
  }

  std::string tensorLabel(const ir::Tensor& t) const {
    return edge_labels_ ? shorten(t.name) + "\n" + typeText(t) : std::string();
  }

  std::string originLine(const std::string& node_name) const {
    auto it = pic_.origin_pass.find(node_name);
    return it == pic_.origin_pass.end() || !fused_side_ ? "" : "\nby " + it->second;
  }

  // Backend running top-level node `index` when it is not the session's backend.
  std::string fallbackOf(int index, bool top) const {
    if (!fused_side_ || !top || index >= static_cast<int>(pic_.kernel_backends.size())) return "";
    const std::string& b = pic_.kernel_backends[index];
    return b == pic_.backend ? "" : b;
  }

  std::vector<Source> addGraph(const ir::Graph& g, const std::vector<Source>& inputs, int cluster, bool top) {
    std::vector<Source> src(g.tensors.size());
    for (size_t k = 0; k < g.inputs.size() && k < inputs.size(); ++k) src[g.inputs[k]] = inputs[k];
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      if (g.tensors[t].isConstant() && src[t].vertex < 0) src[t].label = constText(g.tensors[t]);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[i];
      const std::string fallback = fallbackOf(static_cast<int>(i), top);
      if (n.subgraph) {
        Cluster c;
        c.parent = cluster;
        c.label = shorten(n.name) + ": " + fusedName(*n.subgraph) + originLine(n.name);
        if (!fallback.empty()) c.label += "\nruns on " + fallback + " (fallback)";
        c.fallback = !fallback.empty();
        d_.clusters.push_back(c);
        const int id = static_cast<int>(d_.clusters.size()) - 1;
        std::vector<Source> sub_in;
        for (int t : n.inputs) sub_in.push_back(t >= 0 ? src[t] : Source{});
        const std::vector<Source> sub_out = addGraph(*n.subgraph, sub_in, id, false);
        for (size_t k = 0; k < n.outputs.size() && k < sub_out.size(); ++k) {
          src[n.outputs[k]] = {sub_out[k].vertex, tensorLabel(g.tensors[n.outputs[k]])};
        }
        continue;
      }
      std::string label = n.op->name;
      if (!n.name.empty()) label += "\n" + shorten(n.name);
      int folded = 0;
      for (int t : n.inputs) {
        if (t < 0 || src[t].vertex >= 0 || src[t].label.empty()) continue;
        if (++folded <= 3) label += "\n" + src[t].label;
      }
      if (folded > 3) label += "\n+" + std::to_string(folded - 3) + " constants";
      label += originLine(n.name);
      if (!fallback.empty()) label += "\nruns on " + fallback + " (fallback)";
      const int v = addVertex(label, cluster, false, n.name);
      d_.vertices[v].fallback = !fallback.empty();
      std::set<int> seen;
      for (int t : n.inputs) {
        if (t >= 0 && src[t].vertex >= 0 && seen.insert(src[t].vertex).second) d_.edges.push_back({src[t].vertex, v, src[t].label});
      }
      for (int t : n.outputs) src[t] = {v, tensorLabel(g.tensors[t])};
      for (int t : n.outputs) {  // a tensor name finds its producer too
        if (!g.tensors[t].name.empty() && g.tensors[t].name != n.name) d_.vertices[v].key += "\n" + g.tensors[t].name;
      }
    }
    std::vector<Source> outs;
    for (int t : g.outputs) outs.push_back(src[t]);
    return outs;
  }

  const FusionPicture& pic_;
  bool edge_labels_;
  bool fused_side_ = false;
  Drawing d_;
};

std::string plural(size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

bool keyMatches(const std::string& keys, const std::string& want) {
  std::stringstream ss(keys);
  for (std::string k; std::getline(ss, k, '\n');) if (k == want) return true;
  return false;
}

// Hides every vertex farther than `radius` edges from one matching `centre` (or, on
// the side without it, the node it was expanded from: "AddN_92/Add_0" -> "AddN_92");
// when nothing matches, hides the whole side and returns false.
bool keepRegion(Drawing& d, const std::string& centre, int radius) {
  std::vector<int> dist(d.vertices.size(), -1);
  std::deque<int> queue;
  for (std::string name = centre; queue.empty() && !name.empty();) {
    for (size_t v = 0; v < d.vertices.size(); ++v) {
      if (keyMatches(d.vertices[v].key, name)) {
        dist[v] = 0;
        queue.push_back(static_cast<int>(v));
      }
    }
    const size_t slash = name.rfind('/');
    name = slash == std::string::npos ? "" : name.substr(0, slash);
  }
  if (queue.empty()) {
    for (Vertex& v : d.vertices) v.hidden = true;
    return false;
  }
  std::vector<std::vector<int>> adj(d.vertices.size());
  for (const Edge& e : d.edges) {
    adj[e.from].push_back(e.to);
    adj[e.to].push_back(e.from);
  }
  while (!queue.empty()) {
    const int v = queue.front();
    queue.pop_front();
    if (dist[v] >= radius) continue;
    for (int w : adj[v]) {
      if (dist[w] < 0) {
        dist[w] = dist[v] + 1;
        queue.push_back(w);
      }
    }
  }
  for (size_t v = 0; v < d.vertices.size(); ++v) d.vertices[v].hidden = dist[v] < 0;
  return true;
}

std::string opOf(const std::string& label) { return label.substr(0, label.find('\n')); }

// Chains of more than `limit` ops (one reader, one writer each, in one cluster) keep
// their ends; the middle becomes one box naming how many ops of which kinds it holds.
void collapseChains(Drawing& d, int limit) {
  if (limit <= 0) return;
  const size_t nv = d.vertices.size();
  std::vector<int> in(nv, 0), out(nv, 0), next(nv, -1), out_edge(nv, -1);
  for (size_t e = 0; e < d.edges.size(); ++e) {
    const Edge& x = d.edges[e];
    if (d.vertices[x.from].hidden || d.vertices[x.to].hidden) continue;
    ++in[x.to];
    ++out[x.from];
    next[x.from] = x.to;
    out_edge[x.from] = static_cast<int>(e);
  }
  auto linkable = [&](int v) { return !d.vertices[v].io && !d.vertices[v].hidden && in[v] == 1 && out[v] == 1; };
  std::vector<char> done(nv, 0);
  for (size_t s = 0; s < nv; ++s) {
    if (done[s] || !linkable(int(s))) continue;
    // s starts a chain when its producer does not continue one into it
    bool starts = true;
    for (const Edge& e : d.edges) {
      if (e.to == int(s) && linkable(e.from) && d.vertices[e.from].cluster == d.vertices[s].cluster) starts = false;
    }
    if (!starts) continue;
    std::vector<int> chain = {int(s)};
    while (true) {
      const int n = next[chain.back()];
      if (n < 0 || !linkable(n) || d.vertices[n].cluster != d.vertices[s].cluster || done[n]) break;
      chain.push_back(n);
    }
    for (int v : chain) done[v] = 1;
    if (static_cast<int>(chain.size()) <= limit) continue;
    std::map<std::string, int> kinds;
    for (size_t k = 1; k + 1 < chain.size(); ++k) {
      ++kinds[opOf(d.vertices[chain[k]].label)];
      d.vertices[chain[k]].hidden = true;
    }
    std::string label = "... " + std::to_string(chain.size() - 2) + " ops ...";
    int shown = 0;
    for (const auto& [op, count] : kinds) {
      label += (shown++ % 3 ? ", " : "\n") + op + (count > 1 ? " x" + std::to_string(count) : "");
    }
    d.vertices.push_back({label, d.vertices[s].cluster, false, false, false, ""});
    const int box = static_cast<int>(d.vertices.size()) - 1;
    d.edges.push_back({chain.front(), box, d.edges[out_edge[chain.front()]].label});
    d.edges.push_back({box, chain.back(), d.edges[out_edge[chain[chain.size() - 2]]].label});
  }
}

std::string quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

void emitCluster(const Drawing& d, const std::string& prefix, int cluster, const std::vector<char>& used,
                 std::ostringstream& os, int depth) {
  const std::string pad(2 * depth, ' ');
  for (size_t c = 0; c < d.clusters.size(); ++c) {
    if (d.clusters[c].parent != cluster || !used[c]) continue;
    const Cluster& k = d.clusters[c];
    os << pad << "subgraph cluster_" << prefix << "_k" << c << " {\n"
       << pad << "  label=" << quote(k.label) << "; style=\"rounded,filled\"; penwidth=2; "
       << (k.fallback ? "color=\"#c62828\"; fillcolor=\"#fdecea\"; style=\"rounded,filled,dashed\";"
                      : "color=\"#1a56db\"; fillcolor=\"#e8f0fe\";")
       << "\n";
    emitCluster(d, prefix, static_cast<int>(c), used, os, depth + 1);
    os << pad << "}\n";
  }
  for (size_t v = 0; v < d.vertices.size(); ++v) {
    const Vertex& x = d.vertices[v];
    if (x.hidden || x.cluster != cluster) continue;
    os << pad << prefix << v << " [label=" << quote(x.label);
    if (x.io) os << ", shape=ellipse, fillcolor=\"#f1f3f4\"";
    else if (x.fallback) os << ", color=\"#c62828\", style=\"rounded,filled,dashed\", fillcolor=\"#fdecea\"";
    else if (x.label.rfind("... ", 0) == 0) os << ", style=\"dashed\"";
    os << "];\n";
  }
}

void emitSide(const Drawing& d, const std::string& prefix, const std::string& title, std::ostringstream& os) {
  std::vector<char> used(d.clusters.size(), 0);  // clusters with a visible vertex (and their parents)
  for (const Vertex& v : d.vertices) {
    for (int c = v.hidden ? -1 : v.cluster; c >= 0; c = d.clusters[c].parent) used[c] = 1;
  }
  os << "  subgraph cluster_" << prefix << " {\n    label=" << quote(title)
     << "; fontsize=14; style=\"rounded\"; color=\"#9aa0a6\";\n";
  emitCluster(d, prefix, -1, used, os, 2);
  os << "  }\n";
  for (const Edge& e : d.edges) {
    if (d.vertices[e.from].hidden || d.vertices[e.to].hidden) continue;
    os << "  " << prefix << e.from << " -> " << prefix << e.to;
    if (!e.label.empty()) os << " [label=" << quote(e.label) << "]";
    os << ";\n";
  }
}

size_t countOps(const Drawing& d) {
  size_t n = 0;
  for (const Vertex& v : d.vertices) n += !v.io;
  return n;
}

}  // namespace

StatusOr<std::string> fusionPictureToDot(const FusionPicture& pic, const DotOptions& o) {
  DrawingBuilder builder(pic, o.edge_labels);
  Drawing before = builder.build(pic.before, false);
  Drawing after = builder.build(pic.after, true);
  const size_t ops_before = countOps(before);
  if (!o.region.empty()) {
    const bool in_before = keepRegion(before, o.region, o.region_radius);
    const bool in_after = keepRegion(after, o.region, o.region_radius);
    if (!in_before && !in_after) {
      return makeError(StatusCode::kInvalidArgument, "--region '", o.region,
                       "' names no node or tensor of the graph; `gkrt dump MODEL` prints their names");
    }
  }
  collapseChains(before, o.collapse_chains);
  collapseChains(after, o.collapse_chains);
  std::ostringstream os;
  os << "digraph fusion {\n"
     << "  graph [rankdir=TB, newrank=true, fontname=\"Helvetica\", nodesep=0.25, ranksep=0.35, labelloc=t, label="
     << quote(pic.title) << "];\n"
     << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#5f6368\", fontcolor=\"#3c4043\"];\n";
  emitSide(before, "b", "before fusion: " + plural(ops_before, "op"), os);
  emitSide(after, "a", "after fusion (" + pic.backend + "): " + plural(pic.after.nodes.size(), "kernel"), os);
  os << "}\n";
  return os.str();
}

Status renderDot(const std::string& dot_text, const std::string& path, const std::string& format) {
  std::string dot_program;
  if (const char* env_path = std::getenv("PATH")) {
    std::stringstream dirs(env_path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/dot";
      if (access(candidate.c_str(), X_OK) == 0) {
        dot_program = candidate;
        break;
      }
    }
  }
  if (dot_program.empty()) {
    return makeError(StatusCode::kNotFound, "Graphviz 'dot' is not on the PATH (Debian: apt-get install graphviz)");
  }
  const std::string dot_file = path + ".dot.tmp";
  {
    std::ofstream f(dot_file);
    f << dot_text;
    if (!f) return makeError(StatusCode::kIoError, "cannot write '", dot_file, "'");
  }
  std::vector<std::string> args = {dot_program, "-T" + format, "-o", path, dot_file};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int status = 0;
  const int spawn = posix_spawn(&pid, dot_program.c_str(), nullptr, nullptr, argv.data(), environ);
  if (spawn == 0) waitpid(pid, &status, 0);
  std::error_code ec;
  std::filesystem::remove(dot_file, ec);
  if (spawn != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return makeError(StatusCode::kIoError, "Graphviz 'dot -T", format, "' failed writing '", path, "'");
  }
  return Status::Ok();
}

}  // namespace gkrt::tools
