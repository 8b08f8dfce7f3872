// schema/gkm.fbs attribute tables and runtime/ir/attrs.h structs list the same fields
// in the same order with matching types; the codec relies on it. Also a round trip of
// every attribute kind through a saved model.
#include <gtest/gtest.h>

#include "gkm_generated.h"
#include "runtime/attrs_codec.h"

namespace gkrt {
namespace {

struct FieldNames {
  std::vector<std::pair<std::string, flatbuffers::ElementaryType>> fields;
  void operator()(const char* n, const Ints&) { fields.emplace_back(n, flatbuffers::ET_LONG); }
  void operator()(const char* n, const Floats&) { fields.emplace_back(n, flatbuffers::ET_FLOAT); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
  void operator()(const char* n, const std::vector<E>&) { fields.emplace_back(n, flatbuffers::ET_CHAR); }
  void operator()(const char* n, int64_t) { fields.emplace_back(n, flatbuffers::ET_LONG); }
  void operator()(const char* n, float) { fields.emplace_back(n, flatbuffers::ET_FLOAT); }
  void operator()(const char* n, bool) { fields.emplace_back(n, flatbuffers::ET_BOOL); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
  void operator()(const char* n, E) { fields.emplace_back(n, flatbuffers::ET_CHAR); }
};

TEST(SchemaAttrs, TablesMatchStructs) {
  const flatbuffers::TypeTable* u = fb::AttrsTypeTable();
  ASSERT_EQ(static_cast<int>(u->num_elems), kNumAttrKinds);  // NONE + one per kind
  for (int k = 1; k < kNumAttrKinds; ++k) {
    const auto kind = static_cast<AttrKind>(k);
    const flatbuffers::TypeTable* t = u->type_refs[u->type_codes[k].sequence_ref]();
    EXPECT_EQ(std::string(u->names[k]), std::string(attrKindName(kind)) + "Attrs");
    dispatchAttrKind(kind, [&](auto value) {
      FieldNames f;
      decltype(value)::fields(value, f);
      ASSERT_EQ(f.fields.size(), t->num_elems) << attrKindName(kind);
      for (size_t i = 0; i < f.fields.size(); ++i) {
        EXPECT_EQ(f.fields[i].first, t->names[i]) << attrKindName(kind) << " field " << i;
        EXPECT_EQ(static_cast<int>(f.fields[i].second), static_cast<int>(t->type_codes[i].base_type))
            << attrKindName(kind) << "." << f.fields[i].first;
      }
    });
  }
}

TEST(SchemaAttrs, EveryKindRoundTrips) {
  for (int k = 1; k < kNumAttrKinds; ++k) {
    dispatchAttrKind(static_cast<AttrKind>(k), [&](auto value) {
      using T = decltype(value);
      flatbuffers::FlatBufferBuilder fbb;
      fbb.ForceDefaults(true);
      Attrs original = T{};
      auto off = encodeAttrs(fbb, original);
      fbb.Finish(off);
      const void* table = flatbuffers::GetRoot<flatbuffers::Table>(fbb.GetBufferPointer());
      auto back = decodeAttrs(static_cast<uint8_t>(k), table);
      ASSERT_TRUE(back.ok()) << back.status().toString();
      EXPECT_TRUE(*back == original) << T::kName << ": " << back->toString() << " vs " << original.toString();
    });
  }
  // A non-default value survives too.
  flatbuffers::FlatBufferBuilder fbb;
  Attrs conv = Conv2DAttrs{{2, 3}, {1, 2, 3, 4}, {1, 2}, 4};
  fbb.Finish(encodeAttrs(fbb, conv));
  auto back = decodeAttrs(static_cast<uint8_t>(AttrKind::kConv2D), flatbuffers::GetRoot<flatbuffers::Table>(fbb.GetBufferPointer()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->toString(), "strides=[2,3] pads=[1,2,3,4] dilations=[1,2] groups=4");

  // Lists of floats and of enums too, and a bad enum entry in a file is refused.
  RecurrentAttrs ra;
  ra.hidden_size = 8;
  ra.direction = RnnDirection::kBidirectional;
  ra.activations = {RnnActivation::kSigmoid, RnnActivation::kLeakyRelu, RnnActivation::kSoftplus,
                    RnnActivation::kHardSigmoid};
  ra.activation_alpha = {0.0f, 0.25f, 0.0f, 0.5f};
  ra.activation_beta = {0.0f, 0.0f, 0.0f, -1.5f};
  flatbuffers::FlatBufferBuilder fbb2;
  fbb2.Finish(encodeAttrs(fbb2, Attrs(ra)));
  auto rback = decodeAttrs(static_cast<uint8_t>(AttrKind::kRecurrent),
                           flatbuffers::GetRoot<flatbuffers::Table>(fbb2.GetBufferPointer()));
  ASSERT_TRUE(rback.ok()) << rback.status().toString();
  EXPECT_TRUE(*rback == Attrs(ra));
  EXPECT_EQ(rback->toString(),
            "hidden_size=8 direction=bidirectional layout=0 clip=0 input_forget=false linear_before_reset=false "
            "activations=[Sigmoid,LeakyRelu,Softplus,HardSigmoid] activation_alpha=[0,0.25,0,0.5] "
            "activation_beta=[0,0,0,-1.5]");
  RecurrentAttrs other = ra;
  other.activation_alpha[1] = 0.5f;
  EXPECT_FALSE(Attrs(other) == Attrs(ra));
  EXPECT_NE(Attrs(other).hash(), Attrs(ra).hash());

  flatbuffers::FlatBufferBuilder fbb3;
  const auto acts = fbb3.CreateVector(std::vector<int8_t>{1, 42});
  const auto start = fbb3.StartTable();
  fbb3.AddOffset(flatbuffers::FieldIndexToOffset(6), acts);
  fbb3.Finish(flatbuffers::Offset<void>(fbb3.EndTable(start)));
  auto bad = decodeAttrs(static_cast<uint8_t>(AttrKind::kRecurrent),
                         flatbuffers::GetRoot<flatbuffers::Table>(fbb3.GetBufferPointer()));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("activations"), std::string::npos) << bad.status().toString();
}

TEST(SchemaAttrs, ListFieldsParseFromText) {
  auto a = makeAttrs(AttrKind::kRecurrent, {{"activations", "Tanh,Elu"}, {"activation_alpha", "[0, 2.5]"},
                                            {"direction", "reverse"}, {"hidden_size", "3"}});
  ASSERT_TRUE(a.ok()) << a.status().toString();
  const auto& r = a->get<RecurrentAttrs>();
  EXPECT_EQ(r.activations, (std::vector<RnnActivation>{RnnActivation::kTanh, RnnActivation::kElu}));
  EXPECT_EQ(r.activation_alpha, (Floats{0.0f, 2.5f}));
  EXPECT_EQ(r.direction, RnnDirection::kReverse);
  auto bad = makeAttrs(AttrKind::kRecurrent, {{"activations", "Tanh,Swish"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("Swish"), std::string::npos) << bad.status().toString();
  EXPECT_FALSE(makeAttrs(AttrKind::kRecurrent, {{"activation_beta", "1,x"}}).ok());
}

}  // namespace
}  // namespace gkrt
