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
}

}  // namespace
}  // namespace gkrt
