#include "runtime/base/log.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace gkrt {
namespace {

LogLevel levelFromEnv() {
  const char* v = std::getenv("GKRT_LOG");
  if (!v) return LogLevel::kWarning;
  if (!std::strcmp(v, "error")) return LogLevel::kError;
  if (!std::strcmp(v, "info")) return LogLevel::kInfo;
  if (!std::strcmp(v, "debug")) return LogLevel::kDebug;
  return LogLevel::kWarning;
}

std::atomic<int>& level() {
  static std::atomic<int> l{static_cast<int>(levelFromEnv())};
  return l;
}

}  // namespace

LogLevel logLevel() { return static_cast<LogLevel>(level().load()); }
void setLogLevel(LogLevel l) { level().store(static_cast<int>(l)); }

void logMessage(LogLevel l, const std::string& text) {
  static const char* names[] = {"ERROR", "WARNING", "INFO", "DEBUG"};
  std::cerr << "[" << names[static_cast<int>(l)] << "] gkrt: " << text << "\n";
}

}  // namespace gkrt
