#include "runtime/resource_limits.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

namespace gkrt {

size_t defaultMaxMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return size_t{1} << 30;
  const unsigned long long total = static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page_size);
  return static_cast<size_t>(total / 4 * 3);
}

StatusOr<size_t> parseByteSize(std::string_view text) {
  auto bad = [&]() {
    return makeError(StatusCode::kInvalidArgument, "memory size '", text,
                     "' is not a byte count; write bytes or a number with K, M or G (powers of 1024), e.g. 512M");
  };
  size_t i = 0;
  unsigned long long value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const unsigned digit = static_cast<unsigned>(text[i] - '0');
    if (value > (~0ULL - digit) / 10) return bad();
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return bad();
  std::string unit(text.substr(i));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  int shift = 0;
  if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else if (!unit.empty() && unit != "B") return bad();
  if (shift && value > (~0ULL >> shift)) return bad();
  value <<= shift;
  if (value == 0) {
    return makeError(StatusCode::kInvalidArgument, "memory size '", text, "' is zero; give a positive size such as 512M");
  }
  return static_cast<size_t>(value);
}

std::string formatByteSize(uint64_t bytes) {
  char buf[48];
  if (bytes >= (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(uint64_t{1} << 30));
  else if (bytes >= (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(uint64_t{1} << 20));
  else if (bytes >= (uint64_t{1} << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

Status checkMemoryCap(uint64_t bytes, size_t cap, const std::string& what) {
  if (bytes <= cap) return Status::Ok();
  return makeError(StatusCode::kInvalidArgument, what, " needs ", bytes, " bytes (", formatByteSize(bytes),
                   "), more than the memory cap of ", formatByteSize(cap),
                   "; give smaller input shapes or raise the cap (SessionOptions::max_memory_bytes, "
                   "gkrt run --max-memory)");
}

Status checkTensorsFitCap(const ir::Graph& g, size_t cap) {
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const ir::Tensor& tensor = g.tensors[t];
    if (!isStatic(tensor.shape)) continue;
    auto count = checkedNumElements(tensor.shape);
    if (!count.ok()) return count.status().withContext(ir::describeTensor(g, static_cast<int>(t)));
    // In 64 bits: on a 32-bit board a shape past 4 GiB would wrap size_t to a small size.
    const uint64_t bytes = static_cast<uint64_t>(*count) * dtypeSize(tensor.dtype);
    const std::string what = ir::describeTensor(g, static_cast<int>(t)) + " (" + dtypeName(tensor.dtype) + " " +
                             shapeToString(tensor.shape) + ")";
    RETURN_IF_ERROR(checkMemoryCap(bytes, cap, what));
  }
  return Status::Ok();
}

Status checkGraphSize(size_t nodes, size_t tensors, const ModelLimits& limits) {
  if (nodes > limits.max_nodes) {
    return makeError(StatusCode::kInvalidModel, "the graph has ", nodes, " nodes, more than the limit of ",
                     limits.max_nodes, " (ModelLimits::max_nodes); the file is corrupted or not meant for this runtime");
  }
  if (tensors > limits.max_tensors) {
    return makeError(StatusCode::kInvalidModel, "the graph has ", tensors, " tensors, more than the limit of ",
                     limits.max_tensors, " (ModelLimits::max_tensors); the file is corrupted or not meant for this runtime");
  }
  return Status::Ok();
}

Status checkGraphDepth(const ir::Graph& g, const ModelLimits& limits) {
  // Kahn's order over node -> consumer edges; depth[n] = 1 + the deepest producer.
  const std::vector<int> producer = g.producers();
  const size_t n = g.nodes.size();
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int t : g.nodes[i].inputs) {
      if (t < 0 || static_cast<size_t>(t) >= producer.size() || producer[t] < 0) continue;
      consumers[size_t(producer[t])].push_back(static_cast<int>(i));
      ++pending[i];
    }
  }
  std::vector<size_t> depth(n, 1);
  std::vector<int> ready;
  for (size_t i = 0; i < n; ++i) if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    if (depth[i] > limits.max_depth) {
      return makeError(StatusCode::kInvalidModel, ir::describeNode(g, i), " ends a chain of ", depth[i],
                       " nodes, longer than the limit of ", limits.max_depth,
                       " (ModelLimits::max_depth); the file is corrupted or not meant for this runtime");
    }
    for (int c : consumers[size_t(i)]) {
      depth[size_t(c)] = std::max(depth[size_t(c)], depth[size_t(i)] + 1);
      if (--pending[size_t(c)] == 0) ready.push_back(c);
    }
  }
  for (const ir::Node& node : g.nodes) {
    if (node.subgraph) RETURN_IF_ERROR(checkGraphDepth(*node.subgraph, limits).withContext("subgraph"));
    for (const auto& sub : node.subgraphs) if (sub) RETURN_IF_ERROR(checkGraphDepth(*sub, limits).withContext("subgraph"));
  }
  return Status::Ok();
}

}  // namespace gkrt
