// gkrt tokenize TOKENIZER [--text T ...] [--lines FILE] [--decode IDS] [--decode-lines FILE] [--no-special]:
//   text to token ids (one line of comma-separated ids per text) or ids back to text, with
//   the tokenizer of a tokenizer.json, a GGUF file or a folder holding tokenizer.json
//   (tools/text/tokenizer_load.h). --lines reads one JSON string per line (so texts may
//   hold newlines); the ids of each go out on their own line.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "tools/parse_args.h"
#include "tools/text/tokenizer_load.h"

namespace gkrt::tools {
namespace {

struct TokenizeArgs {
  std::string tokenizer, lines, decode, decode_lines;
  std::vector<std::string> texts;
  bool no_special = false;
};

void printIds(const std::vector<int64_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
}

Status tokenize(const TokenizeArgs& a) {
  ASSIGN_OR_RETURN(text::BpeTokenizer t, text::loadTokenizer(a.tokenizer));
  if (!a.decode.empty()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, parseIdList(a.decode, "--decode"));
    ASSIGN_OR_RETURN(std::string s, t.decode(ids));
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::printf("\n");
    return Status::Ok();
  }
  if (!a.decode_lines.empty()) {  // one line of comma-separated ids in, one JSON string out
    std::ifstream in(a.decode_lines);
    if (!in) return makeError(StatusCode::kNotFound, "cannot open --decode-lines '", a.decode_lines, "'");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      ASSIGN_OR_RETURN(std::vector<int64_t> ids, parseIdList(line, "--decode-lines"));
      ASSIGN_OR_RETURN(std::string s, t.decode(ids));
      std::printf("%s\n", nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    return Status::Ok();
  }
  for (const std::string& s : a.texts) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, t.encode(s, !a.no_special));
    printIds(ids);
  }
  if (!a.lines.empty()) {
    std::ifstream in(a.lines);
    if (!in) return makeError(StatusCode::kNotFound, "cannot open --lines '", a.lines, "'");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::string s;
      try {
        s = nlohmann::json::parse(line).get<std::string>();
      } catch (const std::exception&) {
        return makeError(StatusCode::kInvalidArgument, a.lines, ":", n, ": not a JSON string (--lines takes one a line)");
      }
      ASSIGN_OR_RETURN(std::vector<int64_t> ids, t.encode(s, !a.no_special));
      printIds(ids);
    }
  }
  if (a.texts.empty() && a.lines.empty()) return makeError(StatusCode::kInvalidArgument, "nothing to do: give --text, --lines or --decode");
  return Status::Ok();
}

}  // namespace

Command addTokenizeCommand(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "text to token ids and back (byte-level BPE of a tokenizer.json or a GGUF file)");
  cmd->add_option("tokenizer", a->tokenizer, "tokenizer.json, a .gguf file, or a folder holding tokenizer.json")->required();
  cmd->add_option("--text", a->texts, "a text to encode (repeatable)");
  cmd->add_option("--lines", a->lines, "a file of texts to encode, one JSON string a line");
  cmd->add_option("--decode", a->decode, "comma-separated ids to turn back into text");
  cmd->add_option("--decode-lines", a->decode_lines, "a file of comma-separated ids a line; each line's text out as a JSON string");
  cmd->add_flag("--no-special", a->no_special, "special tokens in the text stay plain text, and no begin token is added");
  return reportingCommand("tokenize", [a] { return tokenize(*a); });
}

}  // namespace gkrt::tools
