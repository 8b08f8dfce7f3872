// Template machinery behind Attrs: printing, equality and hashing walk `fields`.
#pragma once

#include <cstring>
#include <functional>
#include <sstream>
#include <type_traits>

namespace gkrt {
namespace detail {

template <class E>
constexpr bool kIsNamedEnum = std::is_enum_v<E> && !std::is_same_v<E, DType> && !std::is_same_v<E, AttrKind>;

struct FieldPrinter {
  std::ostringstream& os;
  bool first = true;
  template <class F> void operator()(const char* name, const F& f) {
    os << (first ? "" : " ") << name << "=";
    first = false;
    print(f);
  }
  void print(int64_t x) { os << x; }
  void print(float x) { os << x; }
  void print(bool x) { os << (x ? "true" : "false"); }
  void print(DType x) { os << dtypeName(x); }
  void print(const Ints& xs) {
    os << "[";
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
    os << "]";
  }
  void print(const Floats& xs) {
    os << "[";
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
    os << "]";
  }
  template <class E, std::enable_if_t<kIsNamedEnum<E>, int> = 0> void print(E e) {
    const int i = static_cast<int>(e);
    os << (i < EnumNames<E>::count ? EnumNames<E>::names[i] : "?");
  }
  template <class E, std::enable_if_t<kIsNamedEnum<E>, int> = 0> void print(const std::vector<E>& es) {
    os << "[";
    for (size_t i = 0; i < es.size(); ++i) {
      os << (i ? "," : "");
      print(es[i]);
    }
    os << "]";
  }
};

struct FieldHasher {
  size_t h = 0;
  void mix(size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }
  template <class F> void operator()(const char*, const F& f) { add(f); }
  void add(int64_t x) { mix(std::hash<int64_t>()(x)); }
  void add(float x) { uint32_t u; std::memcpy(&u, &x, 4); mix(u); }
  void add(bool x) { mix(x ? 1 : 2); }
  void add(const Ints& xs) { for (int64_t x : xs) add(x); mix(xs.size()); }
  void add(const Floats& xs) { for (float x : xs) add(x); mix(xs.size()); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void add(E e) { mix(static_cast<size_t>(e)); }
  template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void add(const std::vector<E>& es) {
    for (E e : es) add(e);
    mix(es.size());
  }
};

// Collects field references of one struct so two instances compare field by field.
template <class T> bool fieldsEqual(const T& a, const T& b) {
  std::ostringstream sa, sb;  // exact text of every field, floats at full precision
  sa.precision(9);
  sb.precision(9);
  FieldPrinter pa{sa}, pb{sb};
  T::fields(a, pa);
  T::fields(b, pb);
  return sa.str() == sb.str();
}

template <class T> struct AttrsHolder final : AttrsHolderBase {
  explicit AttrsHolder(T v) : value(std::move(v)) {}
  AttrKind kind() const override { return T::kKind; }
  std::string toString() const override {
    std::ostringstream os;
    FieldPrinter p{os};
    T::fields(value, p);
    return os.str();
  }
  bool equals(const AttrsHolderBase& o) const override {
    return o.kind() == T::kKind && fieldsEqual(value, static_cast<const AttrsHolder<T>&>(o).value);
  }
  size_t hash() const override {
    FieldHasher hs;
    hs.mix(static_cast<size_t>(T::kKind));
    T::fields(value, hs);
    return hs.h;
  }
  T value;
};

}  // namespace detail

template <class T, class>
Attrs::Attrs(T value) : p_(std::make_shared<detail::AttrsHolder<T>>(std::move(value))) {}

template <class T> const T& Attrs::get() const {
  static const T kDefault{};
  if (!p_ || p_->kind() != T::kKind) return kDefault;  // callers check kind() first
  return static_cast<const detail::AttrsHolder<T>&>(*p_).value;
}

inline bool Attrs::operator==(const Attrs& o) const {
  if (kind() != o.kind()) return false;
  if (!p_) return true;
  return p_->equals(*o.p_);
}

// Calls fn(T{}) with the struct type of `kind`; returns false for kNone.
template <class Fn> bool dispatchAttrKind(AttrKind kind, Fn&& fn) {
  switch (kind) {
    case AttrKind::kNone: return false;
    case AttrKind::kAxes: fn(AxesAttrs{}); return true;
    case AttrKind::kAxis: fn(AxisAttrs{}); return true;
    case AttrKind::kShape: fn(ShapeAttrs{}); return true;
    case AttrKind::kPerm: fn(PermAttrs{}); return true;
    case AttrKind::kMatMul: fn(MatMulAttrs{}); return true;
    case AttrKind::kGemm: fn(GemmAttrs{}); return true;
    case AttrKind::kConv2D: fn(Conv2DAttrs{}); return true;
    case AttrKind::kPool: fn(PoolAttrs{}); return true;
    case AttrKind::kSlice: fn(SliceAttrs{}); return true;
    case AttrKind::kStridedSlice: fn(StridedSliceAttrs{}); return true;
    case AttrKind::kPad: fn(PadAttrs{}); return true;
    case AttrKind::kNorm: fn(NormAttrs{}); return true;
    case AttrKind::kCast: fn(CastAttrs{}); return true;
    case AttrKind::kClip: fn(ClipAttrs{}); return true;
    case AttrKind::kAlpha: fn(AlphaAttrs{}); return true;
    case AttrKind::kSoftplus: fn(SoftplusAttrs{}); return true;
    case AttrKind::kGelu: fn(GeluAttrs{}); return true;
    case AttrKind::kResize: fn(ResizeAttrs{}); return true;
    case AttrKind::kSplit: fn(SplitAttrs{}); return true;
    case AttrKind::kOneHot: fn(OneHotAttrs{}); return true;
    case AttrKind::kTile: fn(TileAttrs{}); return true;
    case AttrKind::kFormat: fn(FormatAttrs{}); return true;
    case AttrKind::kCumSum: fn(CumSumAttrs{}); return true;
    case AttrKind::kDropout: fn(DropoutAttrs{}); return true;
    case AttrKind::kStandardNormal: fn(StandardNormalAttrs{}); return true;
    case AttrKind::kOptimizer: fn(OptimizerAttrs{}); return true;
    case AttrKind::kReduction: fn(ReductionAttrs{}); return true;
    case AttrKind::kRounding: fn(RoundingAttrs{}); return true;
    case AttrKind::kRepeat: fn(RepeatAttrs{}); return true;
    case AttrKind::kRecurrent: fn(RecurrentAttrs{}); return true;
    case AttrKind::kLoop: fn(LoopAttrs{}); return true;
    case AttrKind::kScan: fn(ScanAttrs{}); return true;
    case AttrKind::kGatherND: fn(GatherNDAttrs{}); return true;
    case AttrKind::kScatter: fn(ScatterAttrs{}); return true;
    case AttrKind::kTopK: fn(TopKAttrs{}); return true;
    case AttrKind::kConvTranspose: fn(ConvTransposeAttrs{}); return true;
    case AttrKind::kQuant: fn(QuantAttrs{}); return true;
    case AttrKind::kSliceAtRun: fn(SliceAtRunAttrs{}); return true;
    case AttrKind::kAttention: fn(AttentionAttrs{}); return true;
    case AttrKind::kIf: fn(IfAttrs{}); return true;
  }
  return false;
}

}  // namespace gkrt
