// `gkrt info MODEL.gguf`: what a GGUF file holds, as text: version, alignment, every
// metadata entry (scalars as values, strings cut at 100 characters, arrays as their
// element type and count), tensor counts by ggml type and bytes; with `tensors`, one
// line per tensor (name, type, dims in ggml order, bytes, data offset).
#pragma once

#include <ostream>
#include <string>

#include "tools/gguf/gguf_file.h"

namespace gkrt::gguf {

bool looksLikeGguf(const std::string& path);  // the file starts with "GGUF"
void printSummary(const GgufFile& f, const std::string& path, bool tensors, std::ostream& out);

}  // namespace gkrt::gguf
