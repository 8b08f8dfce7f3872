#include "tools/text/chat_template.h"

namespace gkrt::text {

StatusOr<std::string> chatPrompt(const std::string& chat_template, const std::string& system, const std::string& user) {
  if (chat_template.empty()) {
    return makeError(StatusCode::kInvalidArgument, "the model carries no chat template; --chat needs its ChatML template "
                     "(or write the prompt's turns yourself with --prompt)");
  }
  if (chat_template.find("<|im_start|>") == std::string::npos || chat_template.find("<|im_end|>") == std::string::npos) {
    return makeError(StatusCode::kUnsupported, "the model's chat template is not ChatML (<|im_start|>role ... <|im_end|>), "
                     "the only one --chat knows: '", chat_template.substr(0, 80), chat_template.size() > 80 ? "...'" : "'",
                     "; write the prompt's turns yourself with --prompt");
  }
  std::string sys = system;
  if (sys.empty()) {  // the default system turn the template writes before a first user turn
    const std::string open = "<|im_start|>system";
    const size_t at = chat_template.find(open);
    if (at != std::string::npos) {
      size_t body = at + open.size();
      if (chat_template.compare(body, 1, "\n") == 0) body += 1;
      else if (chat_template.compare(body, 2, "\\n") == 0) body += 2;
      const size_t end = chat_template.find("<|im_end|>", body);
      const std::string text = end == std::string::npos ? "" : chat_template.substr(body, end - body);
      // a literal message, not a template expression (message['content'] and the like)
      if (!text.empty() && text.find('{') == std::string::npos && text.find('\'') == std::string::npos) sys = text;
    }
  }
  std::string p;
  if (!sys.empty()) p += "<|im_start|>system\n" + sys + "<|im_end|>\n";
  p += "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
  return p;
}

}  // namespace gkrt::text
