// Attributes, op table, structural validation and shape inference.
#include <gtest/gtest.h>

#include "runtime/builder.h"
#include "runtime/ir/op_def.h"

namespace gkrt {
namespace {

TEST(Attrs, PrintCompareHash) {
  Attrs a = AxesAttrs{{1, 2}, true};
  Attrs b = AxesAttrs{{1, 2}, true};
  Attrs c = AxesAttrs{{1}, true};
  EXPECT_EQ(a.toString(), "axes=[1,2] keep_dims=true");
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a.hash(), c.hash());
  EXPECT_FALSE(a == Attrs(AxisAttrs{1, true}));
  EXPECT_EQ(Attrs().kind(), AttrKind::kNone);
}

TEST(Attrs, ParseFromText) {
  auto a = makeAttrs(AttrKind::kConv2D, {{"strides", "2,2"}, {"pads", "[1,1,1,1]"}, {"groups", "4"}});
  ASSERT_TRUE(a.ok()) << a.status().toString();
  const auto& c = a->get<Conv2DAttrs>();
  EXPECT_EQ(c.strides, (Ints{2, 2}));
  EXPECT_EQ(c.pads, (Ints{1, 1, 1, 1}));
  EXPECT_EQ(c.groups, 4);
  EXPECT_EQ(c.dilations, (Ints{1, 1}));  // default kept
  auto e = makeAttrs(AttrKind::kPad, {{"mode", "mirror"}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("'mirror' is not one of: constant, reflect, edge"), std::string::npos);
  auto u = makeAttrs(AttrKind::kAxis, {{"axes", "1"}});
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("unknown attribute 'axes' for Axis attributes"), std::string::npos);
  auto n = makeAttrs(AttrKind::kAxis, {{"axis", "x1"}});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("'x1' is not an integer"), std::string::npos);
}

TEST(OpTable, NamesAreUniqueAndAliasesResolve) {
  std::set<std::string> names;
  for (const OpDef& op : allOps()) {
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate op " << op.name;
    EXPECT_NE(op.reference, nullptr) << op.name;
    EXPECT_NE(op.shape_rule, nullptr) << op.name;
    EXPECT_NE(op.dtype_rule, nullptr) << op.name;
  }
  EXPECT_STREQ(findOp("Gelu")->name, "GeLU");
  EXPECT_STREQ(findOp("Where")->name, "Select");
  EXPECT_STREQ(findOp("FastGelu")->name, "FastGeLU");
  EXPECT_EQ(findOp("NoSuchOp"), nullptr);
  EXPECT_EQ(closestOpName("Mull"), "Mul");
}

// Every op named in the seeds' Appendix 1 (expanders) and Appendix 2 (cluster ops).
TEST(OpTable, CoversBothSeedAppendices) {
  const char* appendix1[] = {
      "Adam", "AdamApplyOneWithDecayAssign", "Addcmul", "AddN", "BiasAdd", "BiasAddGrad", "FillV2", "GeLU", "Gelu",
      "FastGelu", "FastGeluGrad", "FastGeLU", "FastGeLUGrad", "SiLU", "SiLUGrad", "GeLUGrad", "RsqrtGrad", "SqrtGrad",
      "Square", "Tile", "ClipByNormNoDivSum", "FusedMulAdd", "Sigmoid", "SigmoidGrad", "SigmoidCrossEntropyWithLogits",
      "SigmoidCrossEntropyWithLogitsGrad", "SquaredDifference", "TanhGrad", "OnesLike", "ZerosLike", "ReduceMean",
      "LogSoftmaxGrad", "ReLU", "ReluGrad", "AssignAdd", "LambApplyOptimizerAssign", "LambApplyWeightAssign",
      "AdamApplyOneWithDecay", "ExpandDims", "Squeeze", "SoftmaxGradExt", "ApplyMomentum", "LeakyReLUExt", "EluExt",
      "SoftplusExt", "SoftplusGradExt", "RepeatInterleaveInt", "HShrink", "HSigmoid", "HSwish", "BinaryCrossEntropy",
      "Erf", "Tanh", "Cosh", "Sinh", "ClampScalar", "DivMod", "BCEWithLogitsLoss", "AcoshExt", "AsinhExt", "MeanExt",
      "Erfc", "AdamWeightDecay", "BatchMatMul", "Dropout", "DropoutGrad", "MaximumGrad", "MinimumGrad", "LayerNorm",
      "LayerNormGrad", "LogSoftmax", "MatMul", "ArgMaxWithValue", "ArgMinWithValue", "Slice", "Softmax",
      "SoftmaxCrossEntropyWithLogits", "EqualCount", "SquareSumAll", "IdentityMath", "StandardNormal", "Softplus",
      "SoftplusGrad"};
  const char* appendix2[] = {
      "Abs", "Add", "BroadcastTo", "Cast", "Exp", "Log", "Maximum", "Minimum", "Mul", "Neg", "Pow", "Div", "RealDiv",
      "Reciprocal", "Rsqrt", "Sqrt", "Sub", "Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual",
      "LogicalAnd", "LogicalOr", "LogicalNot", "Select", "Assign", "ReduceSum", "IsFinite", "Reshape", "Transpose",
      "Floor", "Ceil", "Trunc", "Round", "Tanh", "ACos", "Acosh", "ArgMax", "Argmin", "Asin", "Asinh", "Atan", "Atan2",
      "Cos", "Erf", "Expm1", "FloorDiv", "FloorMod", "IsInf", "IsNan", "Mod", "ReduceMax", "ReduceMin", "Sign", "Sin",
      "StridedSlice", "CumSum", "OneHot"};
  const char* networks[] = {
      "MatMul", "BatchMatMul", "Gemm", "FullyConnected", "Conv2D", "MaxPool", "AvgPool", "GlobalAvgPool", "Concat",
      "Split", "Slice", "Gather", "Reshape", "Transpose", "Squeeze", "ExpandDims", "Pad", "Softmax", "LogSoftmax",
      "LayerNorm", "RmsNorm", "Erf", "Where", "Select", "Cast", "Clip", "ReLU6", "HSigmoid", "HSwish", "Sigmoid",
      "Tanh", "GeLU", "SiLU", "Pow", "Sqrt", "Rsqrt", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ArgMax",
      "ArgMin", "Resize"};
  for (const char* n : appendix1) EXPECT_NE(findOp(n), nullptr) << "Appendix 1 op " << n;
  for (const char* n : appendix2) EXPECT_NE(findOp(n), nullptr) << "Appendix 2 op " << n;
  for (const char* n : networks) EXPECT_NE(findOp(n), nullptr) << "network op " << n;
}

TEST(ShapeInference, BroadcastAndErrors) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2, 1, 4});
  Value y = b.input("y", DType::kFloat32, {3, 1});
  Value z = b.add(x, y);
  b.output(z);
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->tensors[z.id].shape, (Shape{2, 3, 4}));

  GraphBuilder bad;
  Value p = bad.input("p", DType::kFloat32, {2, 3});
  Value q = bad.input("q", DType::kFloat32, {4, 3});
  bad.output(bad.add(p, q));
  auto e = bad.finish();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("shapes 2x3 and 4x3 cannot be broadcast"), std::string::npos);
}

TEST(ShapeInference, DTypeRules) {
  GraphBuilder b;
  Value x = b.input("x", DType::kInt32, {3});
  b.output(b.op1("Exp", {x}));
  auto e = b.finish();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("Exp input 0 must be float32 or float16, got int32"), std::string::npos);

  GraphBuilder c;
  Value f = c.input("f", DType::kFloat32, {3});
  Value i = c.input("i", DType::kInt32, {3});
  c.output(c.add(f, i));
  auto m = c.finish();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("insert a Cast"), std::string::npos);
}

TEST(ShapeInference, ReshapeConvPoolMatmul) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 3, 32, 32});
  std::vector<float> w(8 * 3 * 3 * 3, 0.1f);
  Value wt = b.constant({8, 3, 3, 3}, w);
  Conv2DAttrs conv;
  conv.strides = {2, 2};
  conv.pads = {1, 1, 1, 1};
  Value y = b.op1("Conv2D", {x, wt, Value{}}, conv);
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.strides = {2, 2};
  Value p = b.op1("MaxPool", {y}, pool);
  Value r = b.op1("Reshape", {p}, ShapeAttrs{{1, -1}});
  b.output(r);
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(g->tensors[y.id].shape, (Shape{1, 8, 16, 16}));
  EXPECT_EQ(g->tensors[p.id].shape, (Shape{1, 8, 8, 8}));
  EXPECT_EQ(g->tensors[r.id].shape, (Shape{1, 512}));

  GraphBuilder bad;
  Value a = bad.input("a", DType::kFloat32, {4, 5});
  bad.output(bad.op1("Reshape", {a}, ShapeAttrs{{3, -1}}));
  auto e = bad.finish();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("cannot infer the -1 dim: 20 elements do not divide into 3"), std::string::npos);
}

TEST(ShapeInference, ReinferAfterResize) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {-1, 8}, {"batch", ""});
  Value w = b.constant({8, 4}, std::vector<float>(32, 1.0f));
  b.output(b.op1("MatMul", {x, w}, MatMulAttrs{}), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  ir::Graph copy = ir::cloneGraph(*g);
  copy.tensors[copy.inputs[0]].shape = {5, 8};
  ASSERT_TRUE(ir::inferShapes(copy).ok());
  EXPECT_EQ(copy.tensors[copy.outputs[0]].shape, (Shape{5, 4}));
  copy.tensors[copy.inputs[0]].shape = {2, 8};
  ASSERT_TRUE(ir::inferShapes(copy).ok());
  EXPECT_EQ(copy.tensors[copy.outputs[0]].shape, (Shape{2, 4}));
}

TEST(Validate, TopologicalOrder) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2});
  Value y = b.exp(x);
  b.output(b.add(y, x));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  std::swap(g->nodes[0], g->nodes[1]);  // consumer before producer
  ASSERT_TRUE(ir::validateGraph(*g).ok());
  EXPECT_STREQ(g->nodes[0].op->name, "Exp");
}

TEST(Validate, RestoreTopologicalOrderOnlyReordersAndFindsCycles) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {2});
  Value y = b.exp(x);
  Value z = b.op1("Neg", {y});
  b.output(b.add(z, x));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(ir::restoreTopologicalOrder(*g).ok());  // in order: left as it is
  EXPECT_STREQ(g->nodes[0].op->name, "Exp");
  std::swap(g->nodes[0], g->nodes[2]);  // Add, Neg, Exp: both readers before their producers
  ASSERT_TRUE(ir::restoreTopologicalOrder(*g).ok());
  EXPECT_STREQ(g->nodes[0].op->name, "Exp");
  EXPECT_STREQ(g->nodes[1].op->name, "Neg");
  EXPECT_STREQ(g->nodes[2].op->name, "Add");
  g->nodes[0].inputs[0] = g->nodes[1].outputs[0];  // Exp reads Neg, which reads Exp
  const Status cycle = ir::restoreTopologicalOrder(*g);
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.message().find("cycle"), std::string::npos) << cycle.message();
}

}  // namespace
}  // namespace gkrt
