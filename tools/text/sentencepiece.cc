// SentencePiece-style encoding of one span (bpe_tokenizer.h, BpeConfig::sentencepiece),
// as llama.cpp's "llama" vocabularies are encoded: start from the span's characters and
// merge, again and again, the adjacent pair whose join is a token with the highest score
// (the leftmost on ties); a symbol that is no token is spelled as its bytes' <0xXX> tokens.
#include "tools/text/bpe_tokenizer.h"

namespace gkrt::text {

void BpeTokenizer::encodeSentencePiece(const std::string& text, std::vector<int64_t>* out) const {
  std::vector<std::string> sym;
  for (size_t k = 0; k < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    sym.push_back(text.substr(k, std::min(n, text.size() - k)));
    k += n;
  }
  while (sym.size() > 1) {
    float best = 0;
    size_t at = sym.size();
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const int64_t id = tokenId(sym[i] + sym[i + 1]);
      if (id < 0) continue;
      const float score = config_.scores[size_t(id)];
      if (at == sym.size() || score > best) best = score, at = i;
    }
    if (at == sym.size()) break;
    sym[at] += sym[at + 1];
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  for (const std::string& s : sym) {
    const int64_t id = tokenId(s);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (unsigned char b : s) {  // byte fallback
      if (byte_token_[b] >= 0) out->push_back(byte_token_[b]);
    }
  }
}

}  // namespace gkrt::text
