#include "runtime/attrs_codec.h"

#include <cstring>

namespace gkrt {
namespace {

flatbuffers::voffset_t slot(int i) { return flatbuffers::FieldIndexToOffset(static_cast<flatbuffers::voffset_t>(i)); }

// Nested vectors must exist before the table starts: create them first.
struct VectorMaker {
  flatbuffers::FlatBufferBuilder& fbb;
  std::vector<flatbuffers::uoffset_t> vecs;
  void operator()(const char*, const Ints& v) { vecs.push_back(fbb.CreateVector(v).o); }
  void operator()(const char*, const Floats& v) { vecs.push_back(fbb.CreateVector(v).o); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void operator()(const char*, const std::vector<E>& v) {
    std::vector<int8_t> raw(v.size());
    for (size_t k = 0; k < v.size(); ++k) raw[k] = static_cast<int8_t>(v[k]);
    vecs.push_back(fbb.CreateVector(raw).o);
  }
  template <class F> void operator()(const char*, const F&) { vecs.emplace_back(0); }
};

struct FieldWriter {
  flatbuffers::FlatBufferBuilder& fbb;
  const std::vector<flatbuffers::uoffset_t>& vecs;
  int i = 0;
  void addVector() { fbb.AddOffset(slot(i), flatbuffers::Offset<void>(vecs[i])); ++i; }
  void operator()(const char*, const Ints&) { addVector(); }
  void operator()(const char*, const Floats&) { addVector(); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void operator()(const char*, const std::vector<E>&) {
    addVector();
  }
  void operator()(const char*, int64_t v) { fbb.AddElement<int64_t>(slot(i++), v, 0); }
  void operator()(const char*, float v) { fbb.AddElement<float>(slot(i++), v, 0.0f); }
  void operator()(const char*, bool v) { fbb.AddElement<uint8_t>(slot(i++), v ? 1 : 0, 0); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
  void operator()(const char*, E v) { fbb.AddElement<int8_t>(slot(i++), static_cast<int8_t>(v), 0); }
};

template <class E> constexpr int enumCount() {
  if constexpr (std::is_same_v<E, DType>) return kNumDTypes;
  else return EnumNames<E>::count;
}

struct FieldReader {
  const flatbuffers::Table* t;
  int i = 0;
  Status status;
  void operator()(const char*, Ints& v) {
    const auto* vec = t->GetPointer<const flatbuffers::Vector<int64_t>*>(slot(i++));
    if (vec) v = copyInt64Vector(vec);
  }
  void operator()(const char*, Floats& v) {
    const auto* vec = t->GetPointer<const flatbuffers::Vector<float>*>(slot(i++));
    if (vec) v.assign(vec->begin(), vec->end());
  }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void operator()(const char* name, std::vector<E>& v) {
    const auto* vec = t->GetPointer<const flatbuffers::Vector<int8_t>*>(slot(i++));
    if (!vec) return;
    v.clear();
    for (int8_t raw : *vec) {
      if (raw < 0 || raw >= enumCount<E>()) {
        status = makeError(StatusCode::kInvalidModel, "attribute '", name, "' has an entry ", int(raw),
                           ", valid are 0..", enumCount<E>() - 1);
        return;
      }
      v.push_back(static_cast<E>(raw));
    }
  }
  void operator()(const char*, int64_t& v) { v = t->GetField<int64_t>(slot(i++), v); }
  void operator()(const char*, float& v) { v = t->GetField<float>(slot(i++), v); }
  void operator()(const char*, bool& v) { v = t->GetField<uint8_t>(slot(i++), v ? 1 : 0) != 0; }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void operator()(const char* name, E& v) {
    const int raw = t->GetField<int8_t>(slot(i++), static_cast<int8_t>(v));
    if (raw < 0 || raw >= enumCount<E>()) {
      status = makeError(StatusCode::kInvalidModel, "attribute '", name, "' has value ", raw, ", valid are 0..",
                         enumCount<E>() - 1);
      return;
    }
    v = static_cast<E>(raw);
  }
};

}  // namespace

std::vector<int64_t> copyInt64Vector(const flatbuffers::Vector<int64_t>* v) {
  std::vector<int64_t> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(int64_t));  // little-endian targets
  return out;
}

flatbuffers::Offset<void> encodeAttrs(flatbuffers::FlatBufferBuilder& fbb, const Attrs& attrs) {
  flatbuffers::Offset<void> result(0);
  dispatchAttrKind(attrs.kind(), [&](auto tag) {
    using T = decltype(tag);
    const T& value = attrs.get<T>();
    VectorMaker vm{fbb, {}};
    T::fields(value, vm);
    const auto start = fbb.StartTable();
    FieldWriter w{fbb, vm.vecs};
    T::fields(value, w);
    result = flatbuffers::Offset<void>(fbb.EndTable(start));
  });
  return result;
}

StatusOr<Attrs> decodeAttrs(uint8_t union_type, const void* table) {
  if (union_type >= kNumAttrKinds) {
    return makeError(StatusCode::kInvalidModel, "attribute kind ", int(union_type), " is unknown (valid 0..",
                     kNumAttrKinds - 1, "); the file may come from a newer gkrt");
  }
  const auto kind = static_cast<AttrKind>(union_type);
  if (kind == AttrKind::kNone) return Attrs();
  if (!table) return makeError(StatusCode::kInvalidModel, attrKindName(kind), " attributes are missing");
  Attrs result;
  Status status;
  dispatchAttrKind(kind, [&](auto value) {
    using T = decltype(value);
    FieldReader r{static_cast<const flatbuffers::Table*>(table), 0, Status::Ok()};
    T::fields(value, r);
    status = r.status;
    result = Attrs(value);
  });
  if (!status.ok()) return status;
  return result;
}

}  // namespace gkrt
