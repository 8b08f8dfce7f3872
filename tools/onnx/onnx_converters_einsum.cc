// ONNX Einsum, parsed here into gkrt ops: repeated letters in one operand take the
// diagonal, letters only one operand has and the output lacks are summed first; two
// operands with a contraction become one (Batch)MatMul between transposes and
// reshapes; other forms multiply the operands broadcast over all letters and sum the
// letters the output lacks.
#include <algorithm>
#include <cctype>
#include <map>

#include "tools/onnx/onnx_converter_helpers.h"

namespace gkrt::onnx_import {
namespace {

struct Term {
  Value v;
  std::string letters;  // one per axis of v
};

Value transposeTo(Context& c, Term& t, const std::string& order) {
  if (t.letters == order) return t.v;
  Ints perm;
  for (char ch : order) perm.push_back(static_cast<int64_t>(t.letters.find(ch)));
  t.v = c.op1("Transpose", {t.v}, PermAttrs{perm});
  t.letters = order;
  return t.v;
}
void sumOut(Context& c, Term& t, const std::string& drop) {
  Ints axes;
  std::string kept;
  for (size_t d = 0; d < t.letters.size(); ++d) {
    if (drop.find(t.letters[d]) != std::string::npos) axes.push_back(static_cast<int64_t>(d));
    else kept += t.letters[d];
  }
  if (axes.empty()) return;
  t.v = c.op1("ReduceSum", {t.v}, AxesAttrs{axes, false});
  t.letters = kept;
}
// x[..i..i..] -> x[..i..]: multiply by the identity on the two axes, sum the second.
void takeDiagonals(Context& c, Term& t) {
  for (size_t q = 1; q < t.letters.size(); ++q) {
    const size_t p = t.letters.find(t.letters[q]);
    if (p == q) continue;
    const Shape s = shapeOf(c, t.v);
    Shape ms(s.size(), 1);
    ms[p] = s[p];
    ms[q] = s[q];
    HostTensor eye(dtypeOf(c, t.v), ms);
    const int64_t stride_q = numElements(Shape(ms.begin() + q + 1, ms.end()));
    const int64_t stride_p = numElements(Shape(ms.begin() + p + 1, ms.end()));
    for (int64_t i = 0; i < std::min(s[p], s[q]); ++i) ops::storeF(eye.data(), eye.dtype(), i * (stride_p + stride_q), 1.0f);
    t.v = c.op1("ReduceSum", {c.op1("Mul", {t.v, c.constant(eye)})}, AxesAttrs{{static_cast<int64_t>(q)}, false});
    t.letters.erase(q, 1);
    --q;
  }
}

Status einsum(Context& c, const Node& n, Outs& o) {
  std::string eq;
  for (char ch : attrString(n, "equation", "")) if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> specs(1);
  for (char ch : lhs) {
    if (ch == ',') specs.emplace_back();
    else specs.back().push_back(ch);
  }
  if (static_cast<int>(specs.size()) != n.input_size()) {
    return unsupported(n, "equation '" + eq + "' names " + std::to_string(specs.size()) + " operands, the node has " +
                              std::to_string(n.input_size()));
  }
  // "..." becomes placeholder letters \x01.. (right-aligned across operands).
  size_t ell = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    const size_t at = specs[k].find("...");
    if (at != std::string::npos) {
      const size_t named = specs[k].size() - 3;
      ell = std::max(ell, shapeOf(c, c.in(n, static_cast<int>(k))).size() - named);
    }
  }
  auto ellipsis = [&](size_t count) {
    std::string s;
    for (size_t j = ell - count; j < ell; ++j) s += static_cast<char>(1 + j);
    return s;
  };
  std::vector<Term> terms;
  std::map<char, int> count;
  for (size_t k = 0; k < specs.size(); ++k) {
    const Value v = c.in(n, static_cast<int>(k));
    const size_t rank = shapeOf(c, v).size();
    std::string s = specs[k];
    const size_t at = s.find("...");
    if (at != std::string::npos) s.replace(at, 3, ellipsis(rank - (s.size() - 3)));
    for (char ch : s) {
      if (!std::isalpha(static_cast<unsigned char>(ch)) && static_cast<size_t>(ch) > ell) return unsupported(n, "bad equation '" + eq + "'");
    }
    if (s.size() != rank) {
      return unsupported(n, "operand " + std::to_string(k) + " '" + specs[k] + "' does not match its rank " + std::to_string(rank));
    }
    for (char ch : s) ++count[ch];
    terms.push_back({v, s});
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    const size_t at = out.find("...");
    if (at != std::string::npos) out.replace(at, 3, ellipsis(ell));
  } else {
    out = ellipsis(ell);
    for (const auto& [ch, k] : count) if (k == 1 && static_cast<size_t>(ch) > ell) out += ch;
  }
  for (Term& t : terms) takeDiagonals(c, t);
  // Letters only this operand has and the output lacks: sum them now.
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string drop;
    for (char ch : terms[k].letters) {
      bool elsewhere = out.find(ch) != std::string::npos;
      for (size_t j = 0; j < terms.size() && !elsewhere; ++j) elsewhere = j != k && terms[j].letters.find(ch) != std::string::npos;
      if (!elsewhere) drop += ch;
    }
    sumOut(c, terms[k], drop);
  }
  std::map<char, int64_t> dim;
  for (const Term& t : terms) {
    const Shape s = shapeOf(c, t.v);
    for (size_t d = 0; d < s.size(); ++d) dim[t.letters[d]] = std::max(dim[t.letters[d]], s[d]);
  }
  auto product = [&](const std::string& ls) {
    int64_t p = 1;
    for (char ch : ls) p *= dim[ch];
    return p;
  };
  auto has = [](const std::string& s, char ch) { return s.find(ch) != std::string::npos; };
  Term r;
  bool done = false;
  if (terms.size() == 2) {
    Term &a = terms[0], &b = terms[1];
    std::string batch, left, right, contract;
    bool same_dims = true;
    for (char ch : a.letters) {
      if (has(b.letters, ch)) (has(out, ch) ? batch : contract) += ch;
      else left += ch;
    }
    for (char ch : b.letters) if (!has(a.letters, ch)) right += ch;
    const Shape as = shapeOf(c, a.v), bs = shapeOf(c, b.v);
    for (char ch : batch + contract) same_dims &= as[a.letters.find(ch)] == bs[b.letters.find(ch)];
    if (same_dims) {  // [batch, left, contract] x [batch, contract, right]
      transposeTo(c, a, batch + left + contract);
      transposeTo(c, b, batch + contract + right);
      const int64_t nb = product(batch), nl = product(left), nk = product(contract), nr = product(right);
      const bool batched = !batch.empty();
      Ints sa = batched ? Ints{nb, nl, nk} : Ints{nl, nk}, sb = batched ? Ints{nb, nk, nr} : Ints{nk, nr};
      Value y = c.op1(batched ? "BatchMatMul" : "MatMul", {c.op1("Reshape", {a.v}, ShapeAttrs{sa}),
                                                           c.op1("Reshape", {b.v}, ShapeAttrs{sb})}, MatMulAttrs{});
      Ints ys;
      for (char ch : batch + left + right) ys.push_back(dim[ch]);
      r = {c.op1("Reshape", {y}, ShapeAttrs{ys}), batch + left + right};
      done = true;
    }
  }
  if (!done) {
    std::string all;  // every letter, in order of first appearance
    for (const Term& t : terms) for (char ch : t.letters) if (!has(all, ch)) all += ch;
    Value acc{};
    for (Term& t : terms) {
      std::string order;
      for (char ch : all) if (has(t.letters, ch)) order += ch;
      transposeTo(c, t, order);
      Ints s;
      for (char ch : all) s.push_back(has(t.letters, ch) ? dim[ch] : 1);
      const Value v = c.op1("Reshape", {t.v}, ShapeAttrs{s});
      acc = acc.id < 0 ? v : c.op1("Mul", {acc, v});
    }
    r = {acc, all};
    if (terms.size() > 1) {  // broadcast operands may leave a letter at 1: give it its size
      Ints full;
      for (char ch : all) full.push_back(dim[ch]);
      if (shapeOf(c, r.v) != Shape(full.begin(), full.end())) r.v = c.op1("BroadcastTo", {r.v}, ShapeAttrs{full});
    }
    std::string drop;
    for (char ch : all) if (!has(out, ch)) drop += ch;
    sumOut(c, r, drop);
  }
  for (char ch : out) {
    if (!has(r.letters, ch)) return unsupported(n, "output letter of '" + eq + "' is in no operand");
  }
  o = {transposeTo(c, r, out)};
  return Status::Ok();
}

}  // namespace

void registerEinsumConverters(std::map<std::string, Converter>& t) { t["Einsum"] = einsum; }

}  // namespace gkrt::onnx_import
