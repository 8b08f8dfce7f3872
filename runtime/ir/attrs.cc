#include "runtime/ir/attrs.h"

#include <cerrno>
#include <cstdlib>
#include <set>

namespace gkrt {

const char* attrKindName(AttrKind k) {
  const char* name = "None";
  dispatchAttrKind(k, [&](auto t) { name = decltype(t)::kName; });
  return name;
}

namespace {

// Parses one field's text into its typed value.
struct FieldSetter {
  const std::map<std::string, std::string>& fields;
  std::set<std::string> used;
  Status status;

  template <class F> void operator()(const char* name, F& f) {
    auto it = fields.find(name);
    if (it == fields.end() || !status.ok()) return;
    used.insert(name);
    Status s = parse(it->second, f);
    if (!s.ok()) status = s.withContext(std::string("attribute '") + name + "'");
  }

  static Status parse(const std::string& text, int64_t& out) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
      return makeError(StatusCode::kInvalidArgument, "'", text, "' is not an integer");
    }
    out = v;
    return Status::Ok();
  }
  static Status parse(const std::string& text, float& out) {
    char* end = nullptr;
    float v = std::strtof(text.c_str(), &end);
    if (text.empty() || *end != '\0') return makeError(StatusCode::kInvalidArgument, "'", text, "' is not a number");
    out = v;
    return Status::Ok();
  }
  static Status parse(const std::string& text, bool& out) {
    if (text == "true" || text == "1") { out = true; return Status::Ok(); }
    if (text == "false" || text == "0") { out = false; return Status::Ok(); }
    return makeError(StatusCode::kInvalidArgument, "'", text, "' is not a bool (true/false)");
  }
  static Status parse(const std::string& text, DType& out) {
    ASSIGN_OR_RETURN(out, parseDType(text));
    return Status::Ok();
  }
  // Lists: "1,2,3" or "[1,2,3]", each item parsed as one value of the element type.
  template <class T> static Status parse(std::string text, std::vector<T>& out) {
    out.clear();
    if (!text.empty() && text.front() == '[') text = text.substr(1);
    if (!text.empty() && text.back() == ']') text.pop_back();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t comma = text.find(',', pos);
      if (comma == std::string::npos) comma = text.size();
      std::string item = text.substr(pos, comma - pos);
      while (!item.empty() && item.front() == ' ') item.erase(0, 1);
      T v{};
      RETURN_IF_ERROR(parse(item, v));
      out.push_back(v);
      pos = comma + 1;
    }
    return Status::Ok();
  }
  template <class E, std::enable_if_t<detail::kIsNamedEnum<E>, int> = 0>
  static Status parse(const std::string& text, E& out) {
    std::string valid;
    for (int i = 0; i < EnumNames<E>::count; ++i) {
      if (text == EnumNames<E>::names[i]) { out = static_cast<E>(i); return Status::Ok(); }
      valid += std::string(i ? ", " : "") + EnumNames<E>::names[i];
    }
    return makeError(StatusCode::kInvalidArgument, "'", text, "' is not one of: ", valid);
  }
};

}  // namespace

StatusOr<Attrs> makeAttrs(AttrKind kind, const std::map<std::string, std::string>& fields) {
  if (kind == AttrKind::kNone) {
    if (!fields.empty()) {
      return makeError(StatusCode::kInvalidArgument, "this op takes no attributes, got '", fields.begin()->first, "'");
    }
    return Attrs();
  }
  Attrs result;
  Status status;
  dispatchAttrKind(kind, [&](auto value) {
    using T = decltype(value);
    FieldSetter setter{fields, {}, Status::Ok()};
    T::fields(value, setter);
    status = setter.status;
    for (const auto& [name, text] : fields) {
      if (status.ok() && !setter.used.count(name)) {
        std::ostringstream valid;
        detail::FieldPrinter p{valid};
        T::fields(value, p);
        status = makeError(StatusCode::kInvalidArgument, "unknown attribute '", name, "' for ", T::kName,
                           " attributes (fields and defaults: ", valid.str(), ")");
      }
    }
    result = Attrs(value);
  });
  if (!status.ok()) return status;
  return result;
}

}  // namespace gkrt
