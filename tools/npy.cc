#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

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
  }
  return "";
}

StatusOr<DType> dtypeFromDescr(const std::string& d) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (*npyDescr(static_cast<DType>(i)) && d == npyDescr(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  return makeError(StatusCode::kUnsupported, "npy dtype '", d, "' is not supported; use one of ", dtypeList(),
                   " (little-endian; bfloat16 has no .npy form)");
}

}  // namespace

StatusOr<HostTensor> readNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return makeError(StatusCode::kNotFound, "cannot open '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
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
  if (bytes.size() < offset + header_len) return bad("truncated header");
  const std::string header = bytes.substr(offset, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'"))) return bad("no descr");
  ASSIGN_OR_RETURN(DType dtype, dtypeFromDescr(m[1]));
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True"))) return bad("Fortran order is not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) return bad("no shape");
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
  ASSIGN_OR_RETURN(int64_t count, checkedNumElements(shape));
  HostTensor t(dtype, shape);
  const size_t data_off = offset + header_len;
  if (bytes.size() - data_off != t.bytes()) {
    return bad("data is " + std::to_string(bytes.size() - data_off) + " bytes, shape needs " + std::to_string(t.bytes()));
  }
  (void)count;
  std::memcpy(t.data(), bytes.data() + data_off, t.bytes());
  return t;
}

Status writeNpy(const std::string& path, const HostTensor& tensor) {
  // numpy has no bfloat16: such tensors are written as float32, which holds them exactly.
  const HostTensor widened = tensor.dtype() == DType::kBFloat16 ? HostTensor::fromFloats(tensor.shape(), tensor.toFloats())
                                                              : HostTensor();
  const HostTensor& t = tensor.dtype() == DType::kBFloat16 ? widened : tensor;
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.shape().size() > 1) shape.resize(shape.size() - 1);  // "(4,)" for rank 1, "(4, 4)" otherwise
  if (t.shape().size() > 1) shape.pop_back();
  std::string header = std::string("{'descr': '") + npyDescr(t.dtype()) + "', 'fortran_order': False, 'shape': (" +
                       (t.shape().size() == 1 ? std::to_string(t.shape()[0]) + "," : shape) + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) return makeError(StatusCode::kIoError, "cannot write '", path, "'");
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
  if (!f) return makeError(StatusCode::kIoError, "writing '", path, "' failed");
  return Status::Ok();
}

}  // namespace gkrt
