#include "tools/text/tokenizer_load.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "runtime/model_io.h"
#include "tools/gguf/gguf_summary.h"
#include "tools/text/chat_template.h"

namespace gkrt::text {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// GPT-2's pre-tokenizer (tokenizers' ByteLevel with use_regex).
const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3's; Qwen2's differs in taking digits one at a time.
const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Status bad(const std::string& what, const std::string& why) {
  return makeError(StatusCode::kInvalidArgument, what, ": ", why);
}

// A literal as a PCRE2 expression.
std::string quoteRegex(const std::string& s) { return "\\Q" + s + "\\E"; }

Status addPreTokenizer(const json& p, const std::string& what, BpeConfig* c) {
  if (p.is_null()) return Status::Ok();
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const json& q : p.value("pretokenizers", json::array())) RETURN_IF_ERROR(addPreTokenizer(q, what, c));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    if (p.value("use_regex", true)) c->split_expressions.push_back(kGpt2);
    c->add_prefix_space = p.value("add_prefix_space", false);
    return Status::Ok();
  }
  if (type == "Digits") {
    c->split_expressions.push_back(p.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    return Status::Ok();
  }
  if (type == "Split") {
    const json& pat = p.value("pattern", json::object());
    if (p.value("behavior", "") != "Isolated" || p.value("invert", false)) {
      return bad(what, "pre_tokenizer Split with behavior '" + p.value("behavior", "") + "'" +
                           (p.value("invert", false) ? " inverted" : "") + " is not supported (Isolated only)");
    }
    if (pat.contains("Regex")) c->split_expressions.push_back(pat["Regex"].get<std::string>());
    else if (pat.contains("String")) c->split_expressions.push_back(quoteRegex(pat["String"].get<std::string>()));
    else return bad(what, "pre_tokenizer Split without a Regex or String pattern");
    return Status::Ok();
  }
  return bad(what, "pre_tokenizer '" + type + "' is not supported (ByteLevel, Digits, Split and Sequence are)");
}

// A special token named in tokenizer_config.json: a string or {"content": ...}.
std::string configToken(const json& cfg, const char* key) {
  if (!cfg.contains(key)) return "";
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return v.value("content", "");
  return "";
}

}  // namespace

std::vector<std::string> preTokenizerExpressions(const std::string& pre) {
  if (pre == "gpt2" || pre == "gpt-2" || pre == "default" || pre == "mpt" || pre == "olmo") return {kGpt2};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell") {
    return {R"(\p{N})", kGpt2};
  }
  if (pre == "llama-bpe" || pre == "llama3") return {kLlama3};
  if (pre == "qwen2" || pre == "stablelm2") return {kQwen2};
  return {};
}

// j[key] when j is an object holding it, else null; by reference (json::value() copies,
// and copying a 50,000-token vocabulary twice took most of loading it).
static const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// j when it is an array, else an empty one (by reference, as member()).
static const json& arrayOrEmpty(const json& j) {
  static const json kEmpty = json::array();
  return j.is_array() ? j : kEmpty;
}

static StatusOr<BpeConfig> configFromJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(StatusCode::kNotFound, "cannot open tokenizer '", path, "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());  // parsing a string is faster than a stream
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    return bad(path, std::string("not JSON: ") + e.what());
  }
  const json& m = member(j, "model");
  if (!m.is_object()) return bad(path, "no \"model\" object: not a Hugging Face tokenizer.json");
  if (m.value("type", "") != "BPE") {
    return bad(path, "model type '" + m.value("type", std::string("?")) + "' is not supported (byte-level BPE only)");
  }
  if (m.value("byte_fallback", false)) return bad(path, "a BPE with byte_fallback (SentencePiece-style) is not supported yet");
  if (!j.value("normalizer", json()).is_null()) {
    return bad(path, "normalizer '" + j["normalizer"].value("type", std::string("?")) + "' is not supported (none only)");
  }
  BpeConfig c;
  c.what = path;
  c.ignore_merges = m.value("ignore_merges", false);
  std::map<int64_t, std::string> by_id;
  const json& vocab = member(m, "vocab");
  if (!vocab.is_null() && !vocab.is_object()) return bad(path, "model.vocab is not an object of token: id pairs");
  if (vocab.is_object()) {
    for (auto it = vocab.begin(); it != vocab.end(); ++it) by_id[it.value().get<int64_t>()] = it.key();
  }
  const json& added = member(j, "added_tokens");
  for (const json& a : arrayOrEmpty(added)) {
    const int64_t id = a.value("id", int64_t(-1));
    if (id < 0) return bad(path, "an added token without an id");
    by_id[id] = a.value("content", "");
    (a.value("special", false) ? c.added : c.user_defined).push_back(id);
  }
  if (by_id.empty()) return bad(path, "the vocabulary is empty");
  if (by_id.begin()->first < 0 || by_id.rbegin()->first > 10'000'000) return bad(path, "token ids out of range");
  c.tokens.resize(size_t(by_id.rbegin()->first + 1));
  for (auto& [id, tok] : by_id) c.tokens[size_t(id)] = tok;
  const json& merges = member(m, "merges");
  c.merges.reserve(merges.is_array() ? merges.size() : 0);
  for (const json& mg : arrayOrEmpty(merges)) {
    if (mg.is_string()) c.merges.push_back(mg.get<std::string>());
    else if (mg.is_array() && mg.size() == 2) c.merges.push_back(mg[0].get<std::string>() + " " + mg[1].get<std::string>());
    else return bad(path, "a merge that is neither \"a b\" nor [a, b]");
  }
  RETURN_IF_ERROR(addPreTokenizer(j.value("pre_tokenizer", json()), path, &c));
  const json& dec = j.value("decoder", json());
  if (!dec.is_null() && dec.value("type", "") != "ByteLevel") {
    return bad(path, "decoder '" + dec.value("type", std::string("?")) + "' is not supported (ByteLevel only)");
  }
  const json& post = j.value("post_processor", json());
  if (!post.is_null() && post.value("type", "") == "TemplateProcessing") {  // a begin token before the text
    const json& single = post.value("single", json::array());
    if (!single.empty() && single[0].contains("SpecialToken")) {
      const std::string first = single[0]["SpecialToken"].value("id", "");
      for (size_t i = 0; i < c.tokens.size(); ++i) if (c.tokens[i] == first) c.bos = int64_t(i), c.add_bos = true;
    }
  }
  const fs::path cfg_path = fs::path(path).parent_path() / "tokenizer_config.json";
  std::ifstream cin(cfg_path);
  if (cin) {
    json cfg;
    try {
      cfg = json::parse(cin);
    } catch (const std::exception& e) {
      return bad(cfg_path.string(), std::string("not JSON: ") + e.what());
    }
    if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) c.chat_template = cfg["chat_template"].get<std::string>();
    for (auto [key, slot] : {std::pair<const char*, int64_t*>{"bos_token", &c.bos}, {"eos_token", &c.eos}}) {
      const std::string name = configToken(cfg, key);
      for (size_t i = 0; i < c.tokens.size() && !name.empty(); ++i) if (c.tokens[i] == name) *slot = int64_t(i);
    }
  }
  return c;
}

StatusOr<BpeTokenizer> loadTokenizerJson(const std::string& path) {
  StatusOr<BpeConfig> c = makeError(StatusCode::kInternal, "unread");
  try {
    c = configFromJson(path);
  } catch (const std::exception& e) {  // a field of the wrong JSON type
    return bad(path, std::string("not a tokenizer.json gkrt reads: ") + e.what());
  }
  if (!c.ok()) return c.status();
  return BpeTokenizer::create(std::move(c).value());
}

StatusOr<BpeTokenizer> loadTokenizerGguf(const gguf::GgufFile& f, const std::string& what) {
  ASSIGN_OR_RETURN(std::string model, f.getString("tokenizer.ggml.model"));
  if (model != "gpt2" && model != "llama") {
    return bad(what, "tokenizer.ggml.model '" + model + "' is not supported (byte-level BPE, 'gpt2', and SentencePiece, "
                     "'llama')");
  }
  BpeConfig c;
  c.what = what;
  c.sentencepiece = model == "llama";
  const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != gguf::ValueType::kArray || tokens->array_type != gguf::ValueType::kString) {
    return bad(what, "tokenizer.ggml.tokens is missing or not an array of strings");
  }
  c.tokens = tokens->strings;
  if (c.sentencepiece) {
    const gguf::Value* scores = f.find("tokenizer.ggml.scores");
    if (!scores || scores->type != gguf::ValueType::kArray || scores->array_type != gguf::ValueType::kFloat32 ||
        scores->floats.size() != c.tokens.size()) {
      return bad(what, "tokenizer.ggml.scores is missing, not float32, or not one a token");
    }
    for (double v : scores->floats) c.scores.push_back(static_cast<float>(v));
    const gguf::Value* prefix = f.find("tokenizer.ggml.add_space_prefix");
    c.add_prefix_space = !prefix || prefix->type != gguf::ValueType::kBool || prefix->i != 0;
  } else {
    const gguf::Value* merges = f.find("tokenizer.ggml.merges");
    if (!merges || merges->type != gguf::ValueType::kArray || merges->array_type != gguf::ValueType::kString) {
      return bad(what, "tokenizer.ggml.merges is missing or not an array of strings");
    }
    c.merges = merges->strings;
  }
  if (const gguf::Value* types = f.find("tokenizer.ggml.token_type")) {
    if (types->arraySize() != c.tokens.size()) {
      return bad(what, "tokenizer.ggml.token_type has " + std::to_string(types->arraySize()) + " entries for " +
                           std::to_string(c.tokens.size()) + " tokens");
    }
    for (size_t i = 0; i < types->ints.size(); ++i) {
      const int64_t t = types->ints[i];
      if (t == 3) c.added.push_back(int64_t(i));         // control: matched when special tokens are
      if (t == 4) c.user_defined.push_back(int64_t(i));  // user-defined: always matched
    }
  }
  const gguf::Value* pre = f.find("tokenizer.ggml.pre");
  const std::string pre_name = pre && pre->type == gguf::ValueType::kString ? pre->s : "default";
  if (!c.sentencepiece) c.split_expressions = preTokenizerExpressions(pre_name);
  c.ignore_merges = pre_name == "llama-bpe" || pre_name == "llama3";  // as Llama 3's tokenizer.json sets it
  if (!c.sentencepiece && c.split_expressions.empty()) {
    return bad(what, "tokenizer.ggml.pre '" + pre_name + "' is not supported (gpt2, smollm, starcoder, refact, command-r, llama-bpe, qwen2, default)");
  }
  auto id = [&](const char* key) -> int64_t {
    auto v = f.getInt(key);
    return v.ok() ? *v : -1;
  };
  if (auto t = f.getString("tokenizer.chat_template"); t.ok()) c.chat_template = *t;
  c.bos = id("tokenizer.ggml.bos_token_id");
  c.eos = id("tokenizer.ggml.eos_token_id");
  const gguf::Value* add_bos = f.find("tokenizer.ggml.add_bos_token");
  c.add_bos = add_bos && add_bos->type == gguf::ValueType::kBool && add_bos->i != 0;
  return BpeTokenizer::create(std::move(c));
}

StatusOr<BpeTokenizer> loadTokenizer(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return loadTokenizerJson((fs::path(path) / "tokenizer.json").string());
  if (fs::path(path).extension() == ".gguf") {
    ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(path));
    return loadTokenizerGguf(f, path);
  }
  return loadTokenizerJson(path);
}

std::string tokenizerBeside(const std::string& model) {
  const fs::path p = fs::path(model).parent_path() / "tokenizer.json";
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : "";
}

StatusOr<BpeTokenizer> tokenizerForModel(const std::string& model_path, const ir::Graph& model, const std::string& named) {
  if (!named.empty()) return loadTokenizer(named);
  if (gguf::looksLikeGguf(model_path)) {
    ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(model_path));
    return loadTokenizerGguf(f, model_path);
  }
  auto kept = model.metadata.find(kGgufMetadataKey);
  if (kept != model.metadata.end()) {
    const std::string what = model_path + " (the GGUF metadata it was converted with)";
    ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::fromBytes(kept->second, what));
    return loadTokenizerGguf(f, what);
  }
  const std::string path = tokenizerBeside(model_path);
  if (path.empty()) {
    return makeError(StatusCode::kInvalidArgument, "--prompt needs a tokenizer: '", model_path, "' has none and there is no "
                     "tokenizer.json beside it; name one with --tokenizer (a tokenizer.json, or the model's .gguf file)");
  }
  return loadTokenizer(path);
}

StatusOr<TextPrompt> textPrompt(const std::string& model_path, const ir::Graph& model, const std::string& named,
                                const std::string& prompt, bool chat, const std::string& system) {
  ASSIGN_OR_RETURN(BpeTokenizer tok, tokenizerForModel(model_path, model, named));
  std::vector<int64_t> stops;
  std::string text = prompt;
  if (chat) {
    ASSIGN_OR_RETURN(text, chatPrompt(tok.config().chat_template, system, prompt));
    const int64_t end = tok.tokenId(chatEndToken());
    if (end >= 0) stops.push_back(end);
  }
  if (tok.eos() >= 0) stops.push_back(tok.eos());
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, tok.encode(text, true));
  return TextPrompt{std::move(tok), std::move(ids), std::move(stops)};
}

}  // namespace gkrt::text
