// SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm runs it on GGUF
// vocabularies: characters merge pairwise, highest token score first (leftmost
// on ties); a final piece that is not a token is split back along its merges,
// and what still is not a token falls back to <0xNN> byte tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/text/string_map.hpp"

namespace aph::text {

struct SpmVocabView {
  const StringIdMap* token_to_id;
  const std::vector<float>* scores;     // one per token
  std::array<int32_t, 256> byte_token;  // <0xNN> (or a fallback) per byte; -1 none
};

// `text` is already escaped ('▁' for spaces, prefix added). Appends ids.
void spm_encode(std::string_view text, const SpmVocabView& vocab, std::vector<int32_t>& out);

}  // namespace aph::text
