// Chat prompts for `gkrt generate --chat`: the ChatML form SmolLM2 and Qwen2 use,
//   <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
// recognised in the model's own chat template (tokenizer.chat_template in a GGUF file,
// chat_template in tokenizer_config.json), whose default system message is kept when no
// system text is given. Other templates are an error naming them as unsupported (gkrt
// runs no Jinja).
#pragma once

#include <string>

#include "runtime/ir/status.h"

namespace gkrt::text {

// The prompt text for one user turn; `system` empty: the template's default, if it has one.
StatusOr<std::string> chatPrompt(const std::string& chat_template, const std::string& system, const std::string& user);

// The token that ends an assistant turn in ChatML.
inline const char* chatEndToken() { return "<|im_end|>"; }

}  // namespace gkrt::text
