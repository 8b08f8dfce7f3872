// Attrs <-> flatbuffers union tables. The schema's attribute tables list the fields
// of runtime/ir/attrs.h in the same order, so one generic walk encodes and decodes
// every kind.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include "runtime/ir/attrs.h"

namespace gkrt {

// Union type byte and table offset for `attrs` (type 0 / null offset for none).
flatbuffers::Offset<void> encodeAttrs(flatbuffers::FlatBufferBuilder& fbb, const Attrs& attrs);

// Copies a verified int64 vector. The flatbuffers verifier checks the length prefix's
// alignment, not the 8-byte alignment of the elements, so a hostile file can misalign
// them: read bytes, never `int64_t` loads (those can fault on 32-bit ARM).
std::vector<int64_t> copyInt64Vector(const flatbuffers::Vector<int64_t>* v);

// Decodes a verified union member; enum values out of range are errors.
StatusOr<Attrs> decodeAttrs(uint8_t union_type, const void* table);

}  // namespace gkrt
