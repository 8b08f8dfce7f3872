#include "tools/onnx/onnx_dynamic_dims.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "runtime/ir/op_def.h"
#include "tools/trial_graphs.h"

namespace gkrt::onnx_import {
namespace {

struct DynamicInput {
  std::string name;
  Shape shape;                       // -1 for dynamic dims
  std::vector<std::string> symbols;  // "" for unnamed dims
};

std::vector<DynamicInput> dynamicInputs(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  std::vector<DynamicInput> out;
  std::map<std::string, int> initializers;
  for (const auto& init : model.graph().initializer()) initializers[init.name()] = 1;
  for (int i = 0; i < model.graph().input_size(); ++i) {
    const auto& input = model.graph().input(i);
    if (initializers.count(input.name()) || options.frozen_inputs.count(input.name()) ||
        options.input_shapes.count(input.name()) || static_cast<size_t>(i) < options.positional_input_shapes.size() ||
        !input.type().has_tensor_type()) {
      continue;
    }
    DynamicInput d{input.name(), {}, {}};
    bool dynamic = false;
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      d.shape.push_back(dimSize(dim, options));
      d.symbols.push_back(dim.has_dim_param() ? dim.dim_param() : "");
      dynamic = dynamic || d.shape.back() < 0;
    }
    if (dynamic) out.push_back(std::move(d));
  }
  return out;
}

// A dim named by an expression of other dims, as exporters name an attention mask's
// ("past_sequence_length + sequence_length"): + - * over names, integers and
// parentheses. Names are the dims of the same name elsewhere; a name that is only ever
// part of expressions gets its own trial size. Anything else is a plain name.
class DimExpression {
 public:
  // Parses `text`; false when it is a plain name (no operator) or not an expression.
  bool parse(const std::string& text) {
    text_ = text;
    pos_ = 0;
    names_.clear();
    if (text.find_first_of("+-*") == std::string::npos) return false;
    ok_ = true;
    expr(nullptr);
    skipSpace();
    return ok_ && pos_ == text_.size() && !names_.empty();
  }
  const std::vector<std::string>& names() const { return names_; }
  // The value with each name's size; names without one count as 0 (never: parse()
  // registered them).
  int64_t evaluate(const std::map<std::string, int64_t>& sizes) {
    pos_ = 0;
    ok_ = true;
    return expr(&sizes);
  }

 private:
  void skipSpace() { while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_; }
  bool accept(char ch) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == ch) return ++pos_, true;
    return false;
  }
  int64_t expr(const std::map<std::string, int64_t>* sizes) {
    int64_t v = term(sizes);
    for (;;) {
      if (accept('+')) v += term(sizes);
      else if (accept('-')) v -= term(sizes);
      else return v;
    }
  }
  int64_t term(const std::map<std::string, int64_t>* sizes) {
    int64_t v = factor(sizes);
    while (accept('*')) v *= factor(sizes);
    return v;
  }
  int64_t factor(const std::map<std::string, int64_t>* sizes) {
    skipSpace();
    if (accept('(')) {
      const int64_t v = expr(sizes);
      if (!accept(')')) ok_ = false;
      return v;
    }
    const size_t begin = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return std::stoll(text_.substr(begin, pos_ - begin));
    }
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.')) ++pos_;
    if (pos_ == begin) {
      ok_ = false;
      return 0;
    }
    const std::string name = text_.substr(begin, pos_ - begin);
    if (!sizes) {
      if (std::find(names_.begin(), names_.end(), name) == names_.end()) names_.push_back(name);
      return 0;
    }
    auto it = sizes->find(name);
    return it == sizes->end() ? 0 : it->second;
  }

  std::string text_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::vector<std::string> names_;
};

// Trial sizes: multiples of 32 (strided and pyramid networks need them), different for
// each dim key within a trial and between the two trials of a set.
struct TrialSizes { int64_t a_base, a_step, b_base, b_step; };
constexpr TrialSizes kTrials[] = {{32, 32, 64, 64}, {224, 32, 288, 64}, {320, 64, 512, 64}};

}  // namespace

std::vector<DimProbe> dynamicDimProbes(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  const std::vector<DynamicInput> inputs = dynamicInputs(model, options);
  if (inputs.empty()) return {};
  std::map<std::string, int> keys;  // dim name (or input:dim) -> index
  int next_key = 0;
  auto addKey = [&](const std::string& key) { if (keys.emplace(key, next_key).second) ++next_key; };
  std::map<std::string, DimExpression> expressions;
  for (const DynamicInput& in : inputs) {
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (in.shape[d] >= 0) continue;
      const std::string key = in.symbols[d].empty() ? in.name + ":" + std::to_string(d) : in.symbols[d];
      DimExpression e;
      if (!e.parse(key)) {
        addKey(key);
      } else {
        expressions.emplace(key, e);
      }
    }
  }
  // The cache's total length under the name exporters give it, where the past and new
  // lengths are named too: their sum (the mask and the present cache must agree).
  if (keys.count("total_sequence_length") && keys.count("past_sequence_length") && keys.count("sequence_length")) {
    DimExpression e;
    e.parse("past_sequence_length + sequence_length");
    expressions.emplace("total_sequence_length", e);
    keys.erase("total_sequence_length");
  }
  for (const auto& [text, e] : expressions) {
    for (const std::string& name : e.names()) addKey(name);
  }
  std::vector<DimProbe> probes;
  for (const TrialSizes& t : kTrials) {
    DimProbe p;
    std::map<std::string, int64_t> size_a, size_b;
    for (const auto& [key, k] : keys) {
      size_a[key] = t.a_base + t.a_step * k;
      size_b[key] = t.b_base + t.b_step * k;
    }
    for (auto& [text, e] : expressions) {
      size_a[text] = e.evaluate(size_a);
      size_b[text] = e.evaluate(size_b);
    }
    for (const DynamicInput& in : inputs) {
      Shape a = in.shape, b = in.shape;
      for (size_t d = 0; d < in.shape.size(); ++d) {
        if (in.shape[d] >= 0) continue;
        const std::string key = in.symbols[d].empty() ? in.name + ":" + std::to_string(d) : in.symbols[d];
        a[d] = size_a.at(key);
        b[d] = size_b.at(key);
      }
      p.first[in.name] = a;
      p.second[in.name] = b;
    }
    probes.push_back(std::move(p));
  }
  return probes;
}

StatusOr<ir::Graph> mergeProbeGraphs(const onnx::ModelProto& model, const OnnxImportOptions& options, ir::Graph a,
                                     const ir::Graph& b) {
  ASSIGN_OR_RETURN(a, tools::mergeTrialGraphs(std::move(a), b, "give the inputs fixed sizes with --input-shape"));
  // The inputs as the model declares them.
  for (const DynamicInput& in : dynamicInputs(model, options)) {
    const int t = a.findTensor(in.name);
    if (t < 0 || !std::count(a.inputs.begin(), a.inputs.end(), t)) continue;
    a.tensors[t].shape = in.shape;
    a.tensors[t].dim_symbols = in.symbols;
  }
  return a;
}

}  // namespace gkrt::onnx_import
