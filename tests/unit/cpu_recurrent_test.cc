// LSTM, GRU and RNN on the cpu backend against the reference kernels: the session's
// choice, the own recurrent kernel (backends/cpu/rnn/recurrent_kernel.cc) on 1 and 2 threads
// and oneDNN's primitives (backends/cpu/rnn/onednn_recurrent.cc) where they take the case,
// each called directly so both are tested whatever the dispatch picks: forward, reverse, bidirectional,
// sequence_lens, layout 1, initial states, peepholes, input_forget, clip,
// linear_before_reset and non-default activations. Also a hand-computed one-step RNN,
// so the reference itself is pinned to the ONNX formula, and the shape errors.
#include <cmath>
#include <random>

#include "backends/cpu/rnn/onednn_recurrent.h"
#include "backends/cpu/rnn/quantized_lstm_kernel.h"
#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/rnn/recurrent_kernel.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

using testing::randomTensor;

struct Case {
  const char* op = "LSTM";
  RecurrentAttrs attrs;
  int64_t seq = 5, batch = 3, input = 4, hidden = 6;
  bool bias = true, init_states = false, seq_lens = false, peepholes = false;
};

int64_t gatesOf(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

// The graph of one recurrent node with constant weights (scaled down so the gates do
// not saturate) and its runtime inputs; every output is a graph output.
struct Built {
  std::unique_ptr<ir::Graph> graph;
  std::vector<HostTensor> inputs;
};
Built build(const Case& c) {
  const int64_t D = c.attrs.direction == RnnDirection::kBidirectional ? 2 : 1, G = gatesOf(c.op), H = c.hidden;
  const bool lstm = std::string(c.op) == "LSTM";
  GraphBuilder b;
  Built out;
  auto weight = [&](const Shape& s, uint32_t seed) {
    std::vector<float> v = randomTensor(s, seed).toFloats();
    for (float& x : v) x *= 0.3f;
    return b.constant(s, v);
  };
  const Shape xs = c.attrs.layout ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
  const Shape state = c.attrs.layout ? Shape{c.batch, D, H} : Shape{D, c.batch, H};
  std::vector<Value> ins = {b.input("x", DType::kFloat32, xs), weight({D, G * H, c.input}, 2),
                            weight({D, G * H, H}, 3)};
  out.inputs.push_back(randomTensor(xs, 1));
  ins.push_back(c.bias ? weight({D, 2 * G * H}, 4) : Value{-1});
  if (c.seq_lens) {
    std::vector<int32_t> lens(c.batch);
    for (int64_t i = 0; i < c.batch; ++i) lens[i] = static_cast<int32_t>(c.seq - i % c.seq);
    ins.push_back(b.input("lens", DType::kInt32, {c.batch}));
    HostTensor t(DType::kInt32, {c.batch});
    std::memcpy(t.data(), lens.data(), lens.size() * 4);
    out.inputs.push_back(t);
  } else {
    ins.push_back(Value{-1});
  }
  if (c.init_states) {
    ins.push_back(b.input("h0", DType::kFloat32, state));
    out.inputs.push_back(randomTensor(state, 5));
    if (lstm) {
      ins.push_back(b.input("c0", DType::kFloat32, state));
      out.inputs.push_back(randomTensor(state, 6));
    }
  } else {
    ins.push_back(Value{-1});
    if (lstm) ins.push_back(Value{-1});
  }
  if (lstm && c.peepholes) ins.push_back(weight({D, 3 * H}, 7));
  while (ins.back().id < 0) ins.pop_back();
  auto ys = b.op(c.op, ins, c.attrs, lstm ? 3 : 2);
  for (size_t k = 0; k < ys.size(); ++k) b.output(ys[k], "y" + std::to_string(k));
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.status().toString();
  if (g.ok()) out.graph = std::make_unique<ir::Graph>(std::move(*g));
  return out;
}

// Runs one compiled kernel on the node's inputs (graph inputs from `inputs`, constants
// from the graph); outputs in node order.
std::vector<HostTensor> launchKernel(Kernel& k, const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  const ir::Node& node = g.nodes.back();
  std::vector<TensorView> in;
  for (int t : node.inputs) {
    TensorView v;
    if (t >= 0) {
      const ir::Tensor& tensor = g.tensors[t];
      v.dtype = tensor.dtype;
      v.shape = tensor.shape;
      if (tensor.isConstant()) {
        v.data = tensor.constant->data;
      } else {
        for (size_t i = 0; i < g.inputs.size(); ++i)
          if (g.inputs[i] == t) v.data = inputs[i].data();
      }
    }
    in.push_back(v);
  }
  std::vector<HostTensor> outs;
  std::vector<MutableTensorView> out;
  for (int t : node.outputs) outs.emplace_back(g.tensors[t].dtype, g.tensors[t].shape);
  for (HostTensor& h : outs) out.push_back({h.dtype(), h.shape(), h.data()});
  Status s = k.launch(in, out, nullptr);
  EXPECT_TRUE(s.ok()) << s.toString();
  return outs;
}

void expectAllClose(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(testing::compareTensors(got[k], want[k], 1e-4, 2e-5), "") << what << ", output " << k;
  }
}

// Returns whether oneDNN took the case.
bool expectCpuMatchesReference(const Case& c) {
  Built m = build(c);
  if (!m.graph) return false;
  const ir::Graph& g = *m.graph;
  const ir::Node& node = g.nodes.back();
  const std::string what = std::string(c.op) + " " + Attrs(c.attrs).toString();
  auto want = testing::runGraph(g, m.inputs, "reference");
  EXPECT_TRUE(want.ok()) << want.status().toString();
  if (!want.ok()) return false;
  for (int threads : {1, 2}) {
    auto got = testing::runGraph(g, m.inputs, "cpu", std::nullopt, threads);
    EXPECT_TRUE(got.ok()) << got.status().toString();
    if (got.ok()) expectAllClose(*got, *want, what + ", cpu session, " + std::to_string(threads) + " threads");
    EXPECT_TRUE(cpu::canRunRecurrent(g, node)) << what;
    cpu::ThreadPool pool(threads);
    auto own = cpu::compileRecurrent(g, node, pool);
    EXPECT_TRUE(own.ok()) << own.status().toString();
    if (own.ok())
      expectAllClose(launchKernel(**own, g, m.inputs), *want,
                     what + ", own kernel, " + std::to_string(threads) + " threads");
  }
  if (!cpu::canRunOneDnnRecurrent(g, node)) return false;
  auto dnnl = cpu::compileOneDnnRecurrent(g, node);
  EXPECT_TRUE(dnnl.ok()) << dnnl.status().toString();
  if (dnnl.ok()) expectAllClose(launchKernel(**dnnl, g, m.inputs), *want, what + ", oneDNN");
  return dnnl.ok();
}

RecurrentAttrs attrs(RnnDirection dir, int64_t layout = 0) {
  RecurrentAttrs a;
  a.direction = dir;
  a.layout = layout;
  return a;
}

#ifdef GKRT_HAVE_DNNL
constexpr bool kHaveOneDnn = true;
#else
constexpr bool kHaveOneDnn = false;
#endif

TEST(CpuRecurrent, EveryOpAndDirection) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    for (RnnDirection dir : {RnnDirection::kForward, RnnDirection::kReverse, RnnDirection::kBidirectional}) {
      for (bool lbr : {false, true}) {
        if (lbr && std::string(op) != "GRU") continue;
        Case c;
        c.op = op;
        c.attrs = attrs(dir);
        c.attrs.linear_before_reset = lbr;
        c.init_states = dir == RnnDirection::kBidirectional;
        // Default activations, no lengths: oneDNN's primitives take these.
        EXPECT_EQ(expectCpuMatchesReference(c), kHaveOneDnn) << op;
      }
    }
  }
}

TEST(CpuRecurrent, OneDnnWithLayout1AndRnnActivations) {
  Case c;
  c.attrs = attrs(RnnDirection::kBidirectional, 1);
  c.init_states = true;
  c.peepholes = true;
  EXPECT_EQ(expectCpuMatchesReference(c), kHaveOneDnn);
  for (RnnActivation fn : {RnnActivation::kRelu, RnnActivation::kSigmoid}) {
    Case r;
    r.op = "RNN";
    r.attrs = attrs(RnnDirection::kForward);
    r.attrs.activations = {fn};
    EXPECT_EQ(expectCpuMatchesReference(r), kHaveOneDnn);
  }
}

TEST(CpuRecurrent, InitialStatesSequenceLensLayout1) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    for (int64_t layout : {0, 1}) {
      Case c;
      c.op = op;
      c.attrs = attrs(RnnDirection::kBidirectional, layout);
      c.init_states = true;
      c.seq_lens = true;
      c.batch = 4;
      EXPECT_FALSE(expectCpuMatchesReference(c)) << "sequence_lens stay on the own kernel";
    }
  }
}

// The own kernel's batched LSTM steps (every row a step in one pass over R): 6 rows (a
// group of 4, then 2), hidden 24 (96 gate columns: a 64-column group, then 16, then 16)
// and hidden 20 (80: 64 + 16, no remainder), both layouts; small LSTMs with the default
// gates run there rather than on oneDNN, larger ones and other gates on oneDNN.
TEST(CpuRecurrent, SmallLstmsRunTheBatchedStepsAndMatch) {
  for (int64_t hidden : {24, 20}) {
    for (int64_t layout : {0, 1}) {
      Case c;
      c.attrs = attrs(RnnDirection::kBidirectional, layout);
      c.init_states = true;
      c.batch = 6;
      c.seq = 7;
      c.input = 10;
      c.hidden = hidden;
      expectCpuMatchesReference(c);
      Built m = build(c);
      ASSERT_TRUE(m.graph);
      EXPECT_TRUE(cpu::ownRecurrentIsFaster(*m.graph, m.graph->nodes.back())) << hidden;
    }
  }
  Case big;
  big.hidden = 72;
  Built m = build(big);
  ASSERT_TRUE(m.graph);
  EXPECT_FALSE(cpu::ownRecurrentIsFaster(*m.graph, m.graph->nodes.back()));
  // One batch row of 512 over 20 steps: the own kernel on full-width AVX-512 cores (oneDNN's
  // RNN the slower there), oneDNN elsewhere; one step of 512 on oneDNN everywhere (the own
  // kernel's results at that size: corpus_models' ddddocr_rec against onnxruntime).
  Case row;
  row.attrs = attrs(RnnDirection::kBidirectional, 0);
  row.batch = 1;
  row.seq = 20;
  row.input = 16;
  row.hidden = 512;
  Built r = build(row);
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(cpu::ownRecurrentIsFaster(*r.graph, r.graph->nodes.back()), cpu::cpuTier().full_width_512);
  row.seq = 1;
  Built one = build(row);
  ASSERT_TRUE(one.graph);
  EXPECT_FALSE(cpu::ownRecurrentIsFaster(*one.graph, one.graph->nodes.back()));
  Case peep;
  peep.peepholes = true;
  Built p = build(peep);
  ASSERT_TRUE(p.graph);
  EXPECT_FALSE(cpu::ownRecurrentIsFaster(*p.graph, p.graph->nodes.back()));
}

// An LSTM whose R^T is over 1 MiB a direction (hidden 320: five 64-unit panels, 3 + 2 on
// two threads): at 2 threads the own kernel splits each step's units over the threads,
// one direction after the other; with sequence lengths it runs the directions apart.
TEST(CpuRecurrent, LargeLstmStepsSharedByTheThreadsMatch) {
  for (int64_t layout : {0, 1}) {
    for (bool lens : {false, true}) {
      Case c;
      c.attrs = attrs(RnnDirection::kBidirectional, layout);
      c.init_states = true;
      c.seq_lens = lens;
      c.batch = 2;
      c.seq = 4;
      c.input = 24;
      c.hidden = 320;
      expectCpuMatchesReference(c);
    }
  }
}

// onnxruntime's DynamicQuantizeLSTM (X and h quantized at run time): the cpu kernel's
// integer products are the reference's (the small-R float path exact, the int8 GEMM for
// hidden sizes over 128), so they agree to float rounding of the gates; with
// sequence_lens, initial states, uint8 and int8 weights, per-direction and per-column
// scales and zero points, both directions.
TEST(CpuRecurrent, DynamicQuantizeLstmMatchesTheReference) {
  struct QCase {
    int64_t hidden, batch;
    DType wt;
    bool per_column, lens;
  };
  for (const QCase& q : {QCase{20, 3, DType::kUInt8, false, true}, QCase{64, 2, DType::kInt8, true, false},
                         QCase{136, 2, DType::kInt8, false, true}}) {
    SCOPED_TRACE("hidden " + std::to_string(q.hidden));
    const int64_t D = 2, H = q.hidden, GH = 4 * H, I = 12, T = 6, B = q.batch, P = q.per_column ? GH : 1;
    GraphBuilder b;
    std::mt19937 rng(7);
    auto bytes = [&](const std::string& name, const Shape& s) {
      std::vector<uint8_t> v(numElements(s));
      for (auto& x : v) x = static_cast<uint8_t>(q.wt == DType::kUInt8 ? 64 + rng() % 128 : rng() % 256);
      return b.constant(name, q.wt, s, v.data());
    };
    std::vector<float> ws(D * P), rs(D * P);
    std::vector<uint8_t> wz(D * P), rz(D * P);
    for (int64_t i = 0; i < D * P; ++i) {
      ws[i] = 0.004f + 0.0001f * (i % 7);
      rs[i] = 0.003f + 0.0001f * (i % 5);
      wz[i] = static_cast<uint8_t>(q.wt == DType::kUInt8 ? 120 + i % 9 : static_cast<uint8_t>(static_cast<int8_t>(i % 5 - 2)));
      rz[i] = static_cast<uint8_t>(q.wt == DType::kUInt8 ? 126 + i % 5 : static_cast<uint8_t>(static_cast<int8_t>(i % 3 - 1)));
    }
    const Shape ps = q.per_column ? Shape{D, GH} : Shape{D};
    std::vector<float> bias = randomTensor({D, 2 * GH}, 4).toFloats();
    for (float& x : bias) x *= 0.1f;
    std::vector<Value> ins = {b.input("x", DType::kFloat32, {T, B, I}), bytes("w", {D, I, GH}), bytes("r", {D, H, GH}),
                              b.constant({D, 2 * GH}, bias)};
    std::vector<HostTensor> inputs = {randomTensor({T, B, I}, 1)};
    if (q.lens) {
      ins.push_back(b.input("lens", DType::kInt32, {B}));
      HostTensor t(DType::kInt32, {B});
      for (int64_t i = 0; i < B; ++i) t.as<int32_t>()[i] = static_cast<int32_t>(T - i);
      inputs.push_back(t);
    } else {
      ins.push_back(Value{-1});
    }
    ins.push_back(b.input("h0", DType::kFloat32, {D, B, H}));
    ins.push_back(b.input("c0", DType::kFloat32, {D, B, H}));
    inputs.push_back(randomTensor({D, B, H}, 5));
    inputs.push_back(randomTensor({D, B, H}, 6));
    ins.push_back(Value{-1});
    ins.push_back(b.constant("ws", DType::kFloat32, ps, ws.data()));
    ins.push_back(b.constant("wz", q.wt, ps, wz.data()));
    ins.push_back(b.constant("rs", DType::kFloat32, ps, rs.data()));
    ins.push_back(b.constant("rz", q.wt, ps, rz.data()));
    auto ys = b.op("DynamicQuantizeLSTM", ins, attrs(RnnDirection::kBidirectional), 3);
    for (size_t k = 0; k < ys.size(); ++k) b.output(ys[k], "y" + std::to_string(k));
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    EXPECT_TRUE(cpu::canRunQuantizedLstm(*g, g->nodes.back()));
    auto want = testing::runGraph(*g, inputs, "reference");
    ASSERT_TRUE(want.ok()) << want.status().toString();
    for (int threads : {1, 2}) {
      cpu::ThreadPool pool(threads);
      auto k = cpu::compileQuantizedLstm(*g, g->nodes.back(), pool);
      ASSERT_TRUE(k.ok()) << k.status().toString();
      expectAllClose(launchKernel(**k, *g, inputs), *want, "DynamicQuantizeLSTM, " + std::to_string(threads) + " threads");
    }
  }
}

TEST(CpuRecurrent, LstmPeepholesInputForgetClip) {
  Case c;
  c.attrs = attrs(RnnDirection::kBidirectional);
  c.peepholes = true;
  c.init_states = true;
  expectCpuMatchesReference(c);
  c.attrs.input_forget = true;
  c.attrs.clip = 0.5f;
  EXPECT_FALSE(expectCpuMatchesReference(c)) << "clip and input_forget stay on the own kernel";
}

TEST(CpuRecurrent, GruLinearBeforeResetWithAndWithoutBias) {
  for (bool bias : {true, false}) {
    Case c;
    c.op = "GRU";
    c.attrs = attrs(RnnDirection::kReverse);
    c.attrs.linear_before_reset = true;
    c.bias = bias;
    c.init_states = true;
    expectCpuMatchesReference(c);
  }
}

TEST(CpuRecurrent, EveryActivationWithAlphaBeta) {
  const std::vector<RnnActivation> all = {
      RnnActivation::kRelu,       RnnActivation::kTanh,        RnnActivation::kSigmoid,
      RnnActivation::kAffine,     RnnActivation::kLeakyRelu,   RnnActivation::kThresholdedRelu,
      RnnActivation::kScaledTanh, RnnActivation::kHardSigmoid, RnnActivation::kElu,
      RnnActivation::kSoftsign,   RnnActivation::kSoftplus};
  for (size_t i = 0; i < all.size(); ++i) {
    Case c;
    c.op = "LSTM";
    c.attrs = attrs(RnnDirection::kBidirectional);
    // Forward: the activation under test as f, g and h; reverse: defaults.
    c.attrs.activations = {all[i], all[i], all[i], RnnActivation::kSigmoid, RnnActivation::kTanh, RnnActivation::kTanh};
    c.attrs.activation_alpha = {0.3f, 0.6f, 0.9f, 0, 0, 0};
    c.attrs.activation_beta = {0.2f, -0.1f, 0.4f, 0, 0, 0};
    c.attrs.clip = 3.0f;
    EXPECT_FALSE(expectCpuMatchesReference(c));
  }
}

// One step, batch 1, hidden 1, by hand: Y = tanh(x w + h0 r + wb + rb).
TEST(CpuRecurrent, ReferenceFollowsTheOnnxFormula) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {1, 1, 1});
  Value h0 = b.input("h0", DType::kFloat32, {1, 1, 1});
  auto ys = b.op("RNN",
                 {x, b.constant({1, 1, 1}, {0.5f}), b.constant({1, 1, 1}, {-2.0f}), b.constant({1, 2}, {0.25f, 0.125f}),
                  Value{-1}, h0},
                 attrs(RnnDirection::kForward), 2);
  b.output(ys[0], "y");
  b.output(ys[1], "y_h");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
  const float want = std::tanh(0.8f * 0.5f + 0.3f * -2.0f + 0.25f + 0.125f);
  for (const char* backend : {"reference", "cpu"}) {
    auto got = testing::runGraph(
        *g, {HostTensor::fromFloats({1, 1, 1}, {0.8f}), HostTensor::fromFloats({1, 1, 1}, {0.3f})}, backend);
    ASSERT_TRUE(got.ok()) << got.status().toString();
    EXPECT_NEAR((*got)[0].toFloats()[0], want, 1e-6) << backend;
    EXPECT_NEAR((*got)[1].toFloats()[0], want, 1e-6) << backend;
  }
}

TEST(CpuRecurrent, BadShapesAndAttributesAreClearErrors) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, {5, 2, 4});
  RecurrentAttrs a;
  a.hidden_size = 7;  // R says 6
  b.op("LSTM",
       {x, b.constant({1, 24, 4}, std::vector<float>(96, 0.1f)), b.constant({1, 24, 6}, std::vector<float>(144, 0.1f))},
       a, 3);
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().toString().find("hidden_size=7"), std::string::npos) << g.status().toString();

  GraphBuilder b2;
  Value x2 = b2.input("x", DType::kFloat32, {5, 2, 4});
  RecurrentAttrs a2;
  a2.activations = {RnnActivation::kTanh};  // GRU takes 2 per direction
  b2.op("GRU",
        {x2, b2.constant({1, 18, 4}, std::vector<float>(72, 0.1f)),
         b2.constant({1, 18, 6}, std::vector<float>(108, 0.1f))},
        a2, 2);
  auto g2 = b2.finish();
  ASSERT_FALSE(g2.ok());
  EXPECT_NE(g2.status().toString().find("activations per direction"), std::string::npos) << g2.status().toString();
}

}  // namespace
}  // namespace gkrt
