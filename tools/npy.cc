#include "tools/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "runtime/fault_injection.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt {
namespace {

const char* npyDescr(DType t) {
  switch (t) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat16: return "<f2";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kBool: return "|b1";
    case DType::kFloat64: return "<f8";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kBFloat16: return "";  // numpy has no bfloat16
    default: return "";                // nor the narrow types (dtype.h isStorageOnly)
  }
  return "";
}

StatusOr<DType> dtypeFromDescr(const std::string& d) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (*npyDescr(static_cast<DType>(i)) && d == npyDescr(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  return makeError(StatusCode::kUnsupported, "npy dtype '", d, "' is not supported; use one of ", dtypeList(),
                   " (little-endian; bfloat16, float8 and float4 are read from float32 files, int4/int2 from int8, uint4/uint2 from uint8)");
}

}  // namespace

StatusOr<HostTensor> readNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return makeError(StatusCode::kNotFound, "cannot open '", path, "'");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return readNpyBytes(bytes, path);
}

StatusOr<HostTensor> readNpyBytes(const std::string& bytes, const std::string& path) {
  auto bad = [&](const std::string& why) { return makeError(StatusCode::kInvalidArgument, path, ": not a valid .npy file: ", why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return bad("missing \\x93NUMPY magic");
  const int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return bad("format version " + std::to_string(major));
  }
  if (header_len > kMaxNpyHeaderBytes) {  // numpy's own limit (max_header_size); keeps the regexes shallow
    return bad("header is " + std::to_string(header_len) + " bytes, more than " + std::to_string(kMaxNpyHeaderBytes));
  }
  if (bytes.size() < offset + header_len) return bad("truncated header");
  const std::string header = bytes.substr(offset, header_len);
  std::smatch m;
  static const std::regex descr_re("'descr':\\s*'([^']*)'"), fortran_re("'fortran_order':\\s*True"),
      shape_re("'shape':\\s*\\(([^)]*)\\)");  // compiled once: compiling costs more than a small file's parse
  if (!std::regex_search(header, m, descr_re)) return bad("no descr");
  ASSIGN_OR_RETURN(DType dtype, dtypeFromDescr(m[1]));
  if (std::regex_search(header, m, fortran_re)) return bad("Fortran order is not supported");
  if (!std::regex_search(header, m, shape_re)) return bad("no shape");
  Shape shape;
  std::stringstream dims(m[1].str());
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (...) {
      return bad("shape entry '" + item + "'");
    }
  }
  auto count = checkedNumElements(shape);
  if (!count.ok()) return bad(count.status().message());
  // Checked before allocating: a header may claim far more elements than the file holds.
  // In 64 bits: on a 32-bit board a huge claimed shape would wrap size_t to a small size.
  const uint64_t need = static_cast<uint64_t>(*count) * dtypeSize(dtype);
  const size_t data_off = offset + header_len;
  if (static_cast<uint64_t>(bytes.size() - data_off) != need) {
    return bad("data is " + std::to_string(bytes.size() - data_off) + " bytes, shape needs " + std::to_string(need));
  }
  HostTensor t(dtype, shape);
  if (need) std::memcpy(t.data(), bytes.data() + data_off, static_cast<size_t>(need));
  return t;
}

// numpy has no bfloat16 and none of the narrow types: bfloat16, float8 and float4 are
// written as float32 (which holds every value exactly), int4/int2 as int8, uint4/uint2
// as uint8 (gkrt's one element per byte, unpacked).
static HostTensor npyWritable(const HostTensor& t) {
  if (t.dtype() == DType::kBFloat16 || isNarrowFloat(t.dtype())) return HostTensor::fromFloats(t.shape(), t.toFloats());
  if (isNarrowInteger(t.dtype())) {
    HostTensor bytes(t.dtype() == DType::kInt4 || t.dtype() == DType::kInt2 ? DType::kInt8 : DType::kUInt8, t.shape());
    std::memcpy(bytes.data(), t.data(), t.bytes());
    return bytes;
  }
  return t;
}

StatusOr<HostTensor> npyToModelType(const HostTensor& t, DType want, const std::string& name) {
  if (t.dtype() == want) return t;
  const bool from_float = t.dtype() == DType::kFloat32 && (want == DType::kBFloat16 || isNarrowFloat(want));
  const bool from_int = (t.dtype() == DType::kInt8 || t.dtype() == DType::kUInt8) && isNarrowInteger(want);
  if (!from_float && !from_int) return t;  // Session::setInput names the mismatch
  HostTensor out(want, t.shape());
  const std::vector<float> v = t.toFloats();
  for (int64_t i = 0; i < t.size(); ++i) {
    if (from_int && (v[i] < narrowIntMin(want) || v[i] > narrowIntMax(want))) {
      return makeError(StatusCode::kInvalidArgument, "input '", name, "' is ", dtypeName(want), ": element ", i, " is ",
                       v[i], ", outside ", narrowIntMin(want), "..", narrowIntMax(want));
    }
    ops::storeF(out.data(), want, i, v[i]);  // float8/float4: round to nearest even, saturating
  }
  return out;
}

Status writeNpy(const std::string& path, const HostTensor& tensor) {
  const HostTensor t = npyWritable(tensor);
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.shape().size() > 1) shape.resize(shape.size() - 1);  // "(4,)" for rank 1, "(4, 4)" otherwise
  if (t.shape().size() > 1) shape.pop_back();
  std::string header = std::string("{'descr': '") + npyDescr(t.dtype()) + "', 'fortran_order': False, 'shape': (" +
                       (t.shape().size() == 1 ? std::to_string(t.shape()[0]) + "," : shape) + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return makeError(StatusCode::kIoError, "cannot write '", path, "': ", std::strerror(errno));
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  bool ok = std::fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 && std::fwrite(len_bytes, 1, 2, f) == 2 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            writeOrFault(t.data(), t.bytes(), f, "output_full") == t.bytes();  // $GKRT_FAULT (fault_injection.h)
  std::string why = ok ? "" : std::strerror(errno);
  if (std::fclose(f) != 0 && why.empty()) why = std::strerror(errno);  // a full disk shows at the flush
  if (!why.empty()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);  // no truncated .npy left
    return makeError(StatusCode::kIoError, "writing '", path, "' failed: ", why);
  }
  return Status::Ok();
}

}  // namespace gkrt
