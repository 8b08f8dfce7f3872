#include "backends/codegen/op_expressions.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>

#include "runtime/ir/op_def.h"

namespace gkrt::codegen {
namespace {

using Args = std::vector<std::string>;
using Render = std::function<std::string(const Args&, const ir::Node&, const KernelDialect&)>;

std::string call(const KernelDialect& d, const char* fn, const std::string& x) { return d.math(fn) + "(" + x + ")"; }
std::string call(const KernelDialect& d, const char* fn, const std::string& x, const std::string& y) {
  return d.math(fn) + "(" + x + ", " + y + ")";
}
// max/min as std::max/std::min: the first operand wins unless the second compares larger.
std::string stdMax(const std::string& a, const std::string& b) { return "((" + a + " < " + b + ") ? " + b + " : " + a + ")"; }
std::string stdMin(const std::string& a, const std::string& b) { return "((" + b + " < " + a + ") ? " + b + " : " + a + ")"; }

struct Entry {
  int arity;  // -1: any number of inputs
  Render render;
};

Render unaryFn(const char* fn) {
  return [fn](const Args& a, const ir::Node&, const KernelDialect& d) { return call(d, fn, a[0]); };
}
Render text(std::function<std::string(const Args&)> f) {
  return [f](const Args& a, const ir::Node&, const KernelDialect&) { return f(a); };
}
Render withDialect(std::function<std::string(const Args&, const KernelDialect&)> f) {
  return [f](const Args& a, const ir::Node&, const KernelDialect& d) { return f(a, d); };
}

const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = {
      {"Add", {2, text([](const Args& a) { return "(" + a[0] + " + " + a[1] + ")"; })}},
      {"Sub", {2, text([](const Args& a) { return "(" + a[0] + " - " + a[1] + ")"; })}},
      {"Mul", {2, text([](const Args& a) { return "(" + a[0] + " * " + a[1] + ")"; })}},
      {"Div", {2, text([](const Args& a) { return "(" + a[0] + " / " + a[1] + ")"; })}},
      {"RealDiv", {2, text([](const Args& a) { return "(" + a[0] + " / " + a[1] + ")"; })}},
      {"Maximum", {2, text([](const Args& a) { return "((isnan(" + a[0] + ") || " + a[0] + " > " + a[1] + ") ? " + a[0] + " : " + a[1] + ")"; })}},
      {"Minimum", {2, text([](const Args& a) { return "((isnan(" + a[0] + ") || " + a[0] + " < " + a[1] + ") ? " + a[0] + " : " + a[1] + ")"; })}},
      {"Pow", {2, withDialect([](const Args& a, const KernelDialect& d) { return call(d, "pow", a[0], a[1]); })}},
      {"Atan2", {2, withDialect([](const Args& a, const KernelDialect& d) { return call(d, "atan2", a[0], a[1]); })}},
      {"Mod", {2, withDialect([](const Args& a, const KernelDialect& d) { return call(d, "fmod", a[0], a[1]); })}},
      {"FloorDiv", {2, withDialect([](const Args& a, const KernelDialect& d) { return call(d, "floor", "(" + a[0] + " / " + a[1] + ")"); })}},
      {"FloorMod", {2, withDialect([](const Args& a, const KernelDialect& d) {
         const std::string r = call(d, "fmod", a[0], a[1]);
         return "((" + r + " != 0.0f && ((" + r + " < 0.0f) != (" + a[1] + " < 0.0f))) ? " + r + " + " + a[1] + " : " + r + ")";
       })}},
      {"SquaredDifference", {2, text([](const Args& a) { return "((" + a[0] + " - " + a[1] + ") * (" + a[0] + " - " + a[1] + "))"; })}},
      {"FusedMulAdd", {3, text([](const Args& a) { return "(" + a[0] + " * " + a[1] + " + " + a[2] + ")"; })}},
      {"Addcmul", {4, text([](const Args& a) { return "(" + a[0] + " + " + a[3] + " * " + a[1] + " * " + a[2] + ")"; })}},
      {"AddN", {-1, text([](const Args& a) {
         std::string s = "(" + a[0];
         for (size_t k = 1; k < a.size(); ++k) s += " + " + a[k];
         return s + ")";
       })}},
      {"Exp", {1, unaryFn("exp")}}, {"Log", {1, unaryFn("log")}}, {"Sqrt", {1, unaryFn("sqrt")}},
      {"Floor", {1, unaryFn("floor")}}, {"Ceil", {1, unaryFn("ceil")}}, {"Trunc", {1, unaryFn("trunc")}},
      {"Round", {1, unaryFn("rint")}}, {"Sin", {1, unaryFn("sin")}}, {"Cos", {1, unaryFn("cos")}},
      {"Tan", {1, unaryFn("tan")}}, {"Tanh", {1, unaryFn("tanh")}}, {"ACos", {1, unaryFn("acos")}},
      {"Acosh", {1, unaryFn("acosh")}}, {"Asin", {1, unaryFn("asin")}}, {"Asinh", {1, unaryFn("asinh")}},
      {"Atan", {1, unaryFn("atan")}}, {"Cosh", {1, unaryFn("cosh")}}, {"Sinh", {1, unaryFn("sinh")}},
      {"Erf", {1, unaryFn("erf")}}, {"Erfc", {1, unaryFn("erfc")}}, {"Expm1", {1, unaryFn("expm1")}},
      {"Log1p", {1, unaryFn("log1p")}}, {"Abs", {1, unaryFn("fabs")}},
      {"Rsqrt", {1, withDialect([](const Args& a, const KernelDialect& d) { return "(1.0f / " + call(d, "sqrt", a[0]) + ")"; })}},
      {"Reciprocal", {1, text([](const Args& a) { return "(1.0f / " + a[0] + ")"; })}},
      {"Neg", {1, text([](const Args& a) { return "(-" + a[0] + ")"; })}},
      {"Square", {1, text([](const Args& a) { return "(" + a[0] + " * " + a[0] + ")"; })}},
      {"Sign", {1, text([](const Args& a) { return "(float)((" + a[0] + " > 0.0f) - (" + a[0] + " < 0.0f))"; })}},
      {"ReLU", {1, text([](const Args& a) { return "(!(" + a[0] + " <= 0.0f) ? " + a[0] + " : 0.0f)"; })}},
      {"IdentityMath", {1, text([](const Args& a) { return a[0]; })}},
      {"OnesLike", {1, text([](const Args&) { return std::string("1.0f"); })}},
      {"ZerosLike", {1, text([](const Args&) { return std::string("0.0f"); })}},
      {"Sigmoid", {1, withDialect([](const Args& a, const KernelDialect& d) { return "(1.0f / (1.0f + " + call(d, "exp", "-" + a[0]) + "))"; })}},
      {"SiLU", {1, withDialect([](const Args& a, const KernelDialect& d) { return "(" + a[0] + " / (1.0f + " + call(d, "exp", "-" + a[0]) + "))"; })}},
      {"FastGeLU", {1, withDialect([](const Args& a, const KernelDialect& d) {
         const std::string ax = call(d, "fabs", a[0]);
         return "(" + a[0] + " * " + call(d, "exp", "0.851f * (" + a[0] + " - " + ax + ")") + " / (1.0f + " +
                call(d, "exp", "-1.702f * " + ax) + "))";
       })}},
      {"ReLU6", {1, text([](const Args& a) { return stdMin(stdMax(a[0], "0.0f"), "6.0f"); })}},
      {"HSigmoid", {1, text([](const Args& a) { return stdMin(stdMax("(" + a[0] + " / 6.0f + 0.5f)", "0.0f"), "1.0f"); })}},
      {"HSwish", {1, text([](const Args& a) { return "(" + a[0] + " * " + stdMin(stdMax("(" + a[0] + " + 3.0f)", "0.0f"), "6.0f") + " / 6.0f)"; })}},
      {"Softsign", {1, withDialect([](const Args& a, const KernelDialect& d) { return "(" + a[0] + " / (1.0f + " + call(d, "fabs", a[0]) + "))"; })}},
      {"GeLU", {1, [](const Args& a, const ir::Node& n, const KernelDialect& d) {
         const std::string& x = a[0];
         if (n.attrs.get<GeluAttrs>().approximate == GeluApprox::kNone) {
           return "(0.5f * " + x + " * (1.0f + " + call(d, "erf", x + " * " + floatLiteral(0.70710678f)) + "))";
         }
         return "(0.5f * " + x + " * (1.0f + " +
                call(d, "tanh", floatLiteral(0.7978845608028654f) + " * (" + x + " + " + floatLiteral(0.044715f) + " * " +
                                    x + " * " + x + " * " + x + ")") + "))";
       }}},
      {"Softplus", {1, [](const Args& a, const ir::Node& n, const KernelDialect& d) {
         const auto& p = n.attrs.get<SoftplusAttrs>();
         const std::string bx = "(" + floatLiteral(p.beta) + " * " + a[0] + ")";
         return "((" + bx + " > " + floatLiteral(p.threshold) + ") ? " + a[0] + " : " + call(d, "log1p", call(d, "exp", bx)) +
                " / " + floatLiteral(p.beta) + ")";
       }}},
      {"LeakyReLU", {1, [](const Args& a, const ir::Node& n, const KernelDialect&) {
         return "((" + a[0] + " < 0.0f) ? " + floatLiteral(n.attrs.get<AlphaAttrs>().alpha) + " * " + a[0] + " : " + a[0] + ")";
       }}},
      {"Elu", {1, [](const Args& a, const ir::Node& n, const KernelDialect& d) {
         return "((" + a[0] + " > 0.0f) ? " + a[0] + " : " + floatLiteral(n.attrs.get<AlphaAttrs>().alpha) + " * " +
                call(d, "expm1", a[0]) + ")";
       }}},
      {"HShrink", {1, [](const Args& a, const ir::Node& n, const KernelDialect& d) {
         return "((" + call(d, "fabs", a[0]) + " > " + floatLiteral(n.attrs.get<AlphaAttrs>().alpha) + ") ? " + a[0] + " : 0.0f)";
       }}},
      {"Clip", {1, [](const Args& a, const ir::Node& n, const KernelDialect&) {
         const auto& c = n.attrs.get<ClipAttrs>();
         return stdMin(stdMax(a[0], floatLiteral(c.min)), floatLiteral(c.max));
       }}},
  };
  return t;
}

bool isIntType(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

// Ops on bool and integer operands.
std::optional<std::string> typedExpression(const std::string& op, const Args& a, const std::vector<DType>& types, DType out,
                                           const KernelDialect& d) {
  static const std::map<std::string, const char*> kCompare = {{"Equal", "=="}, {"NotEqual", "!="}, {"Greater", ">"},
                                                              {"GreaterEqual", ">="}, {"Less", "<"}, {"LessEqual", "<="}};
  const std::string bool_t = d.uchar_type;
  if (auto c = kCompare.find(op); c != kCompare.end() && a.size() == 2 && out == DType::kBool && types[0] == types[1]) {
    return "(" + bool_t + ")(" + a[0] + " " + c->second + " " + a[1] + ")";
  }
  const bool all_bool = std::all_of(types.begin(), types.end(), [](DType t) { return t == DType::kBool; });
  if (all_bool && out == DType::kBool) {
    if (op == "LogicalAnd" && a.size() == 2) return "(" + bool_t + ")(" + a[0] + " && " + a[1] + ")";
    if (op == "LogicalOr" && a.size() == 2) return "(" + bool_t + ")(" + a[0] + " || " + a[1] + ")";
    if (op == "LogicalXor" && a.size() == 2) return "(" + bool_t + ")((" + a[0] + " != 0) != (" + a[1] + " != 0))";
    if (op == "LogicalNot" && a.size() == 1) return "(" + bool_t + ")(!" + a[0] + ")";
  }
  if (a.size() == 1 && types[0] == DType::kFloat32 && out == DType::kBool) {  // no fast-math: x != x holds for NaN
    if (op == "IsNan") return "(" + bool_t + ")(" + a[0] + " != " + a[0] + ")";
    if (op == "IsInf") return "(" + bool_t + ")(" + a[0] + " == GK_INF || " + a[0] + " == -GK_INF)";
    if (op == "IsFinite") return "(" + bool_t + ")(" + a[0] + " == " + a[0] + " && " + a[0] + " != GK_INF && " + a[0] + " != -GK_INF)";
  }
  if (op == "Select" && a.size() == 3 && types[0] == DType::kBool && types[1] == out && types[2] == out) {
    return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
  }
  if ((op == "IdentityMath" || op == "BroadcastTo") && a.size() == 1 && types[0] == out) return a[0];
  if (op == "OnesLike" && a.size() == 1) return std::string("(") + d.typeName(out) + ")1";
  if (op == "ZerosLike" && a.size() == 1) return std::string("(") + d.typeName(out) + ")0";
  if (op == "Cast" && a.size() == 1) {
    const DType from = types[0];
    const std::string to_t = d.typeName(out);
    if (out == DType::kBool) return "(" + bool_t + ")(" + a[0] + " != 0)";
    if (from == DType::kFloat32 && isIntType(out)) {  // truncate toward zero, saturate, NaN -> 0
      if (std::string(d.name) == "opencl") return std::string(out == DType::kInt32 ? "convert_int_sat_rtz(" : "convert_long_sat_rtz(") + a[0] + ")";
      return std::nullopt;
    }
    if (from == DType::kFloat32 && (out == DType::kInt8 || out == DType::kUInt8)) return std::nullopt;  // (saturation)
    return "(" + to_t + ")" + a[0];
  }
  const bool same_int = isIntType(out) && std::all_of(types.begin(), types.end(), [out](DType t) { return t == out; });
  if (same_int) {
    if (op == "Add" && a.size() == 2) return "(" + a[0] + " + " + a[1] + ")";
    if (op == "Sub" && a.size() == 2) return "(" + a[0] + " - " + a[1] + ")";
    if (op == "Mul" && a.size() == 2) return "(" + a[0] + " * " + a[1] + ")";
    if (op == "Maximum" && a.size() == 2) return "((" + a[0] + " > " + a[1] + ") ? " + a[0] + " : " + a[1] + ")";
    if (op == "Minimum" && a.size() == 2) return "((" + a[0] + " < " + a[1] + ") ? " + a[0] + " : " + a[1] + ")";
    if (op == "Neg" && a.size() == 1) return "(-" + a[0] + ")";
    if (op == "Abs" && a.size() == 1) return "((" + a[0] + " < 0) ? -" + a[0] + " : " + a[0] + ")";
    if (op == "Square" && a.size() == 1) return "(" + a[0] + " * " + a[0] + ")";
  }
  return std::nullopt;
}

}  // namespace

std::string powConstExpression(const std::string& x, float c, const KernelDialect& d) {
  if (c == 0.0f) return "1.0f";
  if (c == 1.0f) return x;
  if (c == 2.0f) return "(" + x + " * " + x + ")";
  if (c == 3.0f) return "(" + x + " * " + x + " * " + x + ")";
  if (c == 4.0f) return "((" + x + " * " + x + ") * (" + x + " * " + x + "))";
  if (c == 0.5f) return call(d, "sqrt", x);
  if (c == -1.0f) return "(1.0f / " + x + ")";
  if (std::string(d.name) == "opencl" && c == static_cast<float>(static_cast<int>(c)) && std::abs(c) < 1024) {
    return "pown(" + x + ", " + std::to_string(static_cast<int>(c)) + ")";
  }
  return call(d, "pow", x, floatLiteral(c));
}

std::string scalarLiteral(DType t, const void* data) {
  switch (t) {
    case DType::kFloat32: return floatLiteral(*static_cast<const float*>(data));
    case DType::kBool: return *static_cast<const uint8_t*>(data) ? "1" : "0";
    case DType::kInt8: return "(" + std::to_string(*static_cast<const int8_t*>(data)) + ")";
    case DType::kUInt8: return "(" + std::to_string(*static_cast<const uint8_t*>(data)) + ")";
    case DType::kInt32: return "(" + std::to_string(*static_cast<const int32_t*>(data)) + ")";
    case DType::kInt64: {
      const int64_t v = *static_cast<const int64_t*>(data);
      if (v == INT64_MIN) return "(-9223372036854775807L - 1)";
      return "(" + std::to_string(v) + "L)";
    }
    default: return "0";
  }
}

std::optional<std::string> opExpression(const ir::Node& node, const Args& args, const std::vector<DType>& types, DType out,
                                        const KernelDialect& d) {
  if (!node.op) return std::nullopt;
  const bool all_float = out == DType::kFloat32 &&
                         std::all_of(types.begin(), types.end(), [](DType t) { return t == DType::kFloat32; });
  if (!all_float || std::string(node.op->name) == "Cast" || std::string(node.op->name) == "Select" ||
      std::string(node.op->name) == "BroadcastTo") {
    return typedExpression(node.op->name, args, types, out, d);
  }
  const auto it = table().find(node.op->name);
  if (it == table().end()) return std::nullopt;
  if (it->second.arity >= 0 ? static_cast<int>(args.size()) != it->second.arity : args.empty()) return std::nullopt;
  return it->second.render(args, node, d);
}

bool isReshapeOp(const ir::Node& node) {
  return node.op && node.op->op_class == OpClass::kReshape;
}

}  // namespace gkrt::codegen
