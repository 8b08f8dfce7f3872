// Logging to stderr with a level from GKRT_LOG (error, warning, info, debug; default
// warning), read once here and nowhere else; setLogLevel() overrides it (`gkrt -v`).
#pragma once

#include <sstream>
#include <string>

namespace gkrt {

enum class LogLevel { kError = 0, kWarning, kInfo, kDebug };

LogLevel logLevel();
void setLogLevel(LogLevel level);
void logMessage(LogLevel level, const std::string& text);

template <typename... Args> void logf(LogLevel level, const Args&... args) {
  if (level > logLevel()) return;
  std::ostringstream os;
  (os << ... << args);
  logMessage(level, os.str());
}

}  // namespace gkrt

#define GKRT_LOG_INFO(...) ::gkrt::logf(::gkrt::LogLevel::kInfo, __VA_ARGS__)
#define GKRT_LOG_WARNING(...) ::gkrt::logf(::gkrt::LogLevel::kWarning, __VA_ARGS__)
