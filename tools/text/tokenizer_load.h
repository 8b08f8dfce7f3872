// Where a BPE tokenizer comes from (bpe_tokenizer.h):
//  - a Hugging Face tokenizer.json (model BPE without byte fallback; pre-tokenizers
//    ByteLevel, Digits, Split (Isolated) and Sequences of them; added tokens; a
//    TemplateProcessing that puts a begin token first; bos/eos from a
//    tokenizer_config.json beside it);
//  - a GGUF file's tokenizer.ggml.* metadata (model "gpt2"; pre "gpt2", "smollm",
//    "llama-bpe", "qwen2" or "default"; control and user-defined tokens matched literally).
// Anything else is an error naming the field and what is supported (SentencePiece
// vocabularies, tokenizer.ggml.model "llama", are not yet).
//
//   ASSIGN_OR_RETURN(text::BpeTokenizer t, text::loadTokenizer("tokenizer.json"));  // or a .gguf, or a folder
#pragma once

#include <string>

#include "runtime/ir/graph.h"
#include "tools/gguf/gguf_file.h"
#include "tools/text/bpe_tokenizer.h"

namespace gkrt::text {

StatusOr<BpeTokenizer> loadTokenizerJson(const std::string& path);
StatusOr<BpeTokenizer> loadTokenizerGguf(const gguf::GgufFile& file, const std::string& what);
// By what `path` is: a .gguf file, a tokenizer.json, or a folder holding tokenizer.json.
StatusOr<BpeTokenizer> loadTokenizer(const std::string& path);
// The tokenizer that goes with model file `model` when none is named: tokenizer.json in
// its folder; "" when there is none.
std::string tokenizerBeside(const std::string& model);
// The tokenizer for prompts to model file `model_path` (its graph `model`): `named` when
// given, else the model's own (a .gguf file's, or the GGUF metadata a converted .gkm
// keeps), else tokenizer.json beside it; an error saying how to name one otherwise.
StatusOr<BpeTokenizer> tokenizerForModel(const std::string& model_path, const ir::Graph& model, const std::string& named);

// A text prompt for model file `model_path`: the tokenizer (tokenizerForModel, `named`
// when given), the prompt's ids (with `chat`, in the model's chat template as a user turn
// after `system`) and the ids that end the generated text (the template's end of turn
// with `chat`, the end-of-sequence id).
struct TextPrompt {
  BpeTokenizer tokenizer;
  std::vector<int64_t> ids, stops;
};
StatusOr<TextPrompt> textPrompt(const std::string& model_path, const ir::Graph& model, const std::string& named,
                                const std::string& prompt, bool chat, const std::string& system);

// The pre-tokenizer expressions of llama.cpp's pre-tokenizer name (tokenizer.ggml.pre);
// empty for a name it does not know.
std::vector<std::string> preTokenizerExpressions(const std::string& pre);

}  // namespace gkrt::text
