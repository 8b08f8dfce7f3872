#include "tools/text/bpe_tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <unordered_set>

#ifdef GKRT_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

namespace gkrt::text {
namespace {

[[maybe_unused]] std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Bytes in the character starting with lead byte `c` (1 for a stray continuation byte).
size_t charLength(unsigned char c) {
  if (c >= 0xF0 && c < 0xF8) return 4;
  if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
  if (c >= 0xC0) return 2;
  return 1;
}

}  // namespace

#ifdef GKRT_HAVE_PCRE2
struct BpeTokenizer::Patterns {
  std::vector<pcre2_code*> codes;
  ~Patterns() {
    for (pcre2_code* c : codes) pcre2_code_free(c);
  }
};
bool tokenizerAvailable() { return true; }
#else
struct BpeTokenizer::Patterns {};
bool tokenizerAvailable() { return false; }
#endif

BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

StatusOr<BpeTokenizer> BpeTokenizer::create(BpeConfig config) {
#ifndef GKRT_HAVE_PCRE2
  return makeError(StatusCode::kUnsupported, "this gkrt was built without PCRE2 (libpcre2-dev), which the tokenizer needs; "
                   "pass token ids instead (--input-ids), or build with libpcre2-dev installed");
#else
  BpeTokenizer t;
  if (config.tokens.empty()) return makeError(StatusCode::kInvalidArgument, config.what, ": the vocabulary is empty");
  for (size_t r = 0; r < config.merges.size(); ++r) {
    const std::string& m = config.merges[r];
    const size_t sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() || m.find(' ', sp + 1) != std::string::npos) {
      return makeError(StatusCode::kInvalidArgument, config.what, ": merge ", r, " '", m, "' is not two tokens joined by a space");
    }
  }
  for (const std::vector<int64_t>* list : {&config.added, &config.user_defined}) {
    for (int64_t id : *list) {
      if (id < 0 || id >= static_cast<int64_t>(config.tokens.size())) {
        return makeError(StatusCode::kInvalidArgument, config.what, ": added token id ", id, " is outside the vocabulary");
      }
    }
  }
  for (int64_t id : {config.bos, config.eos}) {
    if (id >= static_cast<int64_t>(config.tokens.size())) {
      return makeError(StatusCode::kInvalidArgument, config.what, ": special token id ", id, " is outside the vocabulary of ",
                       config.tokens.size());
    }
  }
  // GPT-2's table: printable Latin-1 bytes spell themselves, the others 256 + n in order
  t.byte_spelling_.resize(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    t.byte_spelling_[b] = utf8(printable ? b : next++);
    t.byte_of_.emplace(t.byte_spelling_[b], static_cast<uint8_t>(b));
  }
  if (config.sentencepiece) {
    if (config.scores.size() != config.tokens.size()) {
      return makeError(StatusCode::kInvalidArgument, config.what, ": ", config.scores.size(), " scores for ", config.tokens.size(), " tokens");
    }
    t.byte_token_.assign(256, -1);
    for (size_t i = 0; i < config.tokens.size(); ++i) {  // <0xXX>
      const std::string& tok = config.tokens[i];
      if (tok.size() == 6 && tok.compare(0, 3, "<0x") == 0 && tok[5] == '>') {
        char* end = nullptr;
        const long b = std::strtol(tok.substr(3, 2).c_str(), &end, 16);
        if (!end || *end != '\0' || b < 0 || b > 255) continue;
        t.byte_token_[size_t(b)] = static_cast<int64_t>(i);
        t.token_byte_[static_cast<int64_t>(i)] = static_cast<uint8_t>(b);
      }
    }
  }
  t.patterns_ = std::make_unique<Patterns>();
  for (const std::string& e : config.split_expressions) {
    int code = 0;
    PCRE2_SIZE at = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(e.c_str()), e.size(), PCRE2_UTF | PCRE2_UCP, &code, &at, nullptr);
    if (!re) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(code, msg, sizeof msg);
      return makeError(StatusCode::kInvalidArgument, config.what, ": pre-tokenizer expression '", e, "' does not compile at ", at,
                       ": ", reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // where the build has JIT; the interpreter otherwise
    t.patterns_->codes.push_back(re);
  }
  // Longest added tokens first, so one that starts another matches whole.
  auto longest_first = [&](int64_t a, int64_t b) { return config.tokens[size_t(a)].size() > config.tokens[size_t(b)].size(); };
  std::sort(config.added.begin(), config.added.end(), longest_first);
  std::sort(config.user_defined.begin(), config.user_defined.end(), longest_first);
  t.literal_.insert(config.added.begin(), config.added.end());
  t.literal_.insert(config.user_defined.begin(), config.user_defined.end());
  t.config_ = std::move(config);
  t.ids_.reserve(t.config_.tokens.size());
  for (size_t i = 0; i < t.config_.tokens.size(); ++i) t.ids_.emplace(t.config_.tokens[i], static_cast<int64_t>(i));
  t.ranks_.reserve(t.config_.merges.size());
  for (size_t r = 0; r < t.config_.merges.size(); ++r) {
    t.ranks_.emplace(t.config_.merges[r], static_cast<int>(r));  // the first of a repeated merge keeps its rank
  }
  return t;
#endif
}

int64_t BpeTokenizer::tokenId(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

Status BpeTokenizer::splitPieces(const std::string& span, std::vector<std::string>* pieces) const {
  pieces->assign(1, span);
#ifdef GKRT_HAVE_PCRE2
  for (size_t e = 0; e < patterns_->codes.size(); ++e) {
    pcre2_code* re = patterns_->codes[e];
    std::vector<std::string> next;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
    for (const std::string& p : *pieces) {
      size_t pos = 0, gap = 0;
      while (pos < p.size()) {
        const int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), pos, 0, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          pcre2_match_data_free(md);
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof msg);
          return makeError(StatusCode::kInvalidArgument, "the text cannot be split (", reinterpret_cast<const char*>(msg),
                           "): is it valid UTF-8?");
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t start = ov[0], end = ov[1];
        if (end == start) {  // an empty match: step one character on
          pos = start + charLength(static_cast<unsigned char>(p[start]));
          continue;
        }
        if (start > gap) next.push_back(p.substr(gap, start - gap));
        next.push_back(p.substr(start, end - start));
        gap = pos = end;
      }
      if (gap < p.size()) next.push_back(p.substr(gap));
    }
    pcre2_match_data_free(md);
    pieces->swap(next);
  }
#endif
  return Status::Ok();
}

void BpeTokenizer::encodePiece(const std::string& piece, std::vector<int64_t>* out) const {
  auto hit = cache_.find(piece);
  if (hit != cache_.end()) {
    out->insert(out->end(), hit->second.begin(), hit->second.end());
    return;
  }
  std::vector<std::string> sym;
  std::string whole;
  for (unsigned char c : piece) {
    sym.push_back(byte_spelling_[c]);
    whole += sym.back();
  }
  std::vector<int64_t> ids;
  const int64_t as_one = config_.ignore_merges ? tokenId(whole) : -1;
  if (as_one >= 0) {
    ids.push_back(as_one);
  } else {
    while (sym.size() > 1) {  // the lowest-ranked adjacent pair, leftmost first
      int best = INT_MAX;
      size_t at = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        auto r = ranks_.find(sym[i] + " " + sym[i + 1]);
        if (r != ranks_.end() && r->second < best) best = r->second, at = i;
      }
      if (best == INT_MAX) break;
      sym[at] += sym[at + 1];
      sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    for (const std::string& s : sym) {
      const int64_t id = tokenId(s);
      if (id >= 0) {
        ids.push_back(id);
        continue;
      }
      for (size_t k = 0; k < s.size();) {  // no such token: its bytes' tokens
        const size_t n = charLength(static_cast<unsigned char>(s[k]));
        const int64_t b = tokenId(s.substr(k, n));
        if (b >= 0) ids.push_back(b);
        k += n;
      }
    }
  }
  if (cache_.size() < 65536) cache_.emplace(piece, ids);
  out->insert(out->end(), ids.begin(), ids.end());
}

StatusOr<std::vector<int64_t>> BpeTokenizer::encode(const std::string& text, bool special) const {
  std::vector<int64_t> out;
  if (special && config_.add_bos && config_.bos >= 0) out.push_back(config_.bos);
  // the added tokens matched here, longest first
  std::vector<int64_t> literal = config_.user_defined;
  if (special) {
    literal.insert(literal.end(), config_.added.begin(), config_.added.end());
    std::stable_sort(literal.begin(), literal.end(), [&](int64_t a, int64_t b) {
      return config_.tokens[size_t(a)].size() > config_.tokens[size_t(b)].size();
    });
  }
  std::vector<std::string> pieces;
  bool first = true;
  auto plain = [&](const std::string& span) -> Status {
    if (span.empty()) return Status::Ok();
    if (config_.sentencepiece) {  // a space before the text's start, then every space as U+2581
      std::string s = first && config_.add_prefix_space ? "\xE2\x96\x81" : "";
      for (char ch : span) s += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
      first = false;
      encodeSentencePiece(s, &out);
      return Status::Ok();
    }
    std::string s = span;
    if (config_.add_prefix_space && s[0] != ' ') s.insert(s.begin(), ' ');
    RETURN_IF_ERROR(splitPieces(s, &pieces));
    for (const std::string& p : pieces) encodePiece(p, &out);
    return Status::Ok();
  };
  size_t pos = 0, start = 0;
  while (!literal.empty() && pos < text.size()) {
    int64_t found = -1;
    for (int64_t id : literal) {
      const std::string& tok = config_.tokens[size_t(id)];
      if (!tok.empty() && text.compare(pos, tok.size(), tok) == 0) {
        found = id;
        break;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    RETURN_IF_ERROR(plain(text.substr(start, pos - start)));
    first = false;
    out.push_back(found);
    pos += config_.tokens[size_t(found)].size();
    start = pos;
  }
  RETURN_IF_ERROR(plain(text.substr(start)));
  return out;
}

StatusOr<std::string> BpeTokenizer::decodePiece(int64_t id) const {
  if (id < 0 || id >= vocabSize()) {
    return makeError(StatusCode::kInvalidArgument, "token id ", id, " is outside the vocabulary [0, ", vocabSize(), ")");
  }
  const std::string& tok = config_.tokens[size_t(id)];
  if (literal_.count(id)) return tok;  // an added token's text is itself
  std::string out;
  if (config_.sentencepiece) {
    auto b = token_byte_.find(id);
    if (b != token_byte_.end()) return std::string(1, static_cast<char>(b->second));
    for (size_t k = 0; k < tok.size();) {
      if (tok.compare(k, 3, "\xE2\x96\x81") == 0) out += ' ', k += 3;
      else out += tok[k++];
    }
    return out;
  }
  for (size_t k = 0; k < tok.size();) {
    const size_t n = charLength(static_cast<unsigned char>(tok[k]));
    auto b = byte_of_.find(tok.substr(k, n));
    if (b != byte_of_.end()) out += static_cast<char>(b->second);
    else out += tok.substr(k, n);
    k += n;
  }
  return out;
}

StatusOr<std::string> BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSIGN_OR_RETURN(std::string piece, decodePiece(ids[i]));
    // the space SentencePiece put before the text
    if (i == 0 && config_.sentencepiece && config_.add_prefix_space && !literal_.count(ids[i]) && !piece.empty() &&
        piece[0] == ' ') {
      piece.erase(0, 1);
    }
    out += piece;
  }
  return out;
}

std::string TextStream::push(const std::string& bytes) {
  pending_ += bytes;
  // the end of the last whole character: back over at most 3 continuation bytes to a lead byte
  size_t end = pending_.size();
  for (size_t back = 1; back <= 4 && back <= pending_.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(pending_[pending_.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    if (c >= 0xC0 && charLength(c) > back) end = pending_.size() - back;  // its character is not whole yet
    break;
  }
  std::string out = pending_.substr(0, end);
  pending_.erase(0, end);
  return out;
}

std::string TextStream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace gkrt::text
