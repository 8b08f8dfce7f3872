// Byte-level BPE (the GPT-2 family: SmolLM2, Llama 3, Qwen2, GPT-2), text to token ids and
// back, as Hugging Face `tokenizers` and llama.cpp do it:
//   1. added (special) tokens are cut out of the text first, each matched literally;
//   2. each remaining span is split by the pre-tokenizer's expressions in order (PCRE2
//      with Unicode classes: every piece an expression matches, and the text between
//      matches, become pieces; the next expression splits each piece again);
//   3. each piece's UTF-8 bytes are spelled with GPT-2's byte-to-character table and
//      merged pair by pair, lowest merge rank first, into vocabulary tokens.
// decode() spells ids back to bytes; TextStream hands out only whole UTF-8 characters
// when a character's bytes span several tokens.
//
//   ASSIGN_OR_RETURN(BpeTokenizer t, loadTokenizerJson("tokenizer.json"));  // tokenizer_load.h
//   ASSIGN_OR_RETURN(std::vector<int64_t> ids, t.encode("The capital of France is"));
//   std::string text = t.decode(ids);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/ir/status.h"

namespace gkrt::text {

struct BpeConfig {
  std::vector<std::string> tokens;              // by id, in GPT-2's byte spelling
  std::vector<std::string> merges;              // "left right", by rank
  std::vector<int64_t> added;                   // ids of the special (control) tokens, matched literally
  std::vector<int64_t> user_defined;            // ids of added tokens that are not special: always matched
  std::vector<std::string> split_expressions;   // the pre-tokenizer's expressions (PCRE2 syntax), in order
  bool add_prefix_space = false;                // a space before the text (ByteLevel's option; SentencePiece's add_space_prefix)
  // SentencePiece-style vocabularies (llama.cpp's "llama" model: Llama 2, TinyLlama, Phi-3):
  // no pre-tokenizer, spaces spelled U+2581, the pair whose join is the best-scored token
  // merged first, characters without a token spelled as byte tokens <0xXX>.
  bool sentencepiece = false;
  std::vector<float> scores;                    // sentencepiece: by id
  bool ignore_merges = false;                   // a piece that is a token as a whole is taken as is (Llama 3)
  int64_t bos = -1, eos = -1;                   // -1: none
  bool add_bos = false;                         // encode() puts bos first
  std::string chat_template;                    // the model's chat template (Jinja source), "" if none
  std::string what;                             // where it came from, for messages
};

class BpeTokenizer {
 public:
  static StatusOr<BpeTokenizer> create(BpeConfig config);
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // `special`: special tokens in the text become their ids and bos goes first where the
  // tokenizer adds one (else special tokens are plain text and nothing is added; tokens
  // added as not special are matched either way, as Hugging Face and llama.cpp do).
  StatusOr<std::vector<int64_t>> encode(const std::string& text, bool special = true) const;
  // The bytes of `ids` (special tokens as their text; SentencePiece's prefix space dropped).
  // Ids outside the vocabulary are an error.
  StatusOr<std::string> decode(const std::vector<int64_t>& ids) const;
  // One token's bytes as they continue a text (for streaming: no prefix space dropped).
  StatusOr<std::string> decodePiece(int64_t id) const;
  int64_t vocabSize() const { return static_cast<int64_t>(config_.tokens.size()); }
  int64_t tokenId(const std::string& token) const;  // -1 when it is no token
  int64_t bos() const { return config_.bos; }
  int64_t eos() const { return config_.eos; }
  const BpeConfig& config() const { return config_; }

 private:
  BpeTokenizer() = default;
  Status splitPieces(const std::string& span, std::vector<std::string>* pieces) const;
  void encodePiece(const std::string& piece, std::vector<int64_t>* out) const;
  void encodeSentencePiece(const std::string& text, std::vector<int64_t>* out) const;  // sentencepiece.cc

  BpeConfig config_;
  // Keyed by views of config_'s strings (their bytes stay put when the tokenizer moves):
  // copying 100,000 tokens and merges into the maps was most of loading a tokenizer.
  std::unordered_map<std::string_view, int64_t> ids_;
  std::unordered_map<std::string_view, int> ranks_;
  std::vector<std::string> byte_spelling_;  // byte -> its character, UTF-8
  std::unordered_map<std::string, uint8_t> byte_of_;
  std::unordered_set<int64_t> literal_;     // every added token (their text is themselves)
  std::vector<int64_t> byte_token_;         // sentencepiece: byte -> the id of <0xXX>, -1 if none
  std::unordered_map<int64_t, uint8_t> token_byte_;
  struct Patterns;
  std::unique_ptr<Patterns> patterns_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

// Text out, one token at a time: push() returns the bytes that end on a whole UTF-8
// character so far; flush() the rest.
class TextStream {
 public:
  std::string push(const std::string& bytes);
  std::string flush();

 private:
  std::string pending_;
};

// Whether this build has the tokenizer (it needs PCRE2); messages for the others.
bool tokenizerAvailable();

}  // namespace gkrt::text
