// tokenizer.json parsing and encoding of arbitrary bytes must only ever end
// in a value or an aph::Error.
//
// Input: [tokenizer.json text] 0xFF 0xFF [text to encode]. Without the marker
// the whole input is the text and a fixed byte-level tokenizer encodes it.
// Whatever loads is also round-tripped through decode, the streaming
// detokenizer and a stop matcher.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/common/error.hpp"
#include "core/text/incremental_detokenizer.hpp"
#include "core/text/stop_matcher.hpp"
#include "core/text/tokenizer.hpp"

namespace {

constexpr const char* kFixedTokenizer = R"({
  "added_tokens": [{"id": 9, "content": "<|end|>", "special": true},
                   {"id": 10, "content": "ab", "special": false, "rstrip": true}],
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": true},
    {"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "Ġ": 2, "c": 3, "Ġa": 4, "bc": 5, "Ġabc": 6,
                                      "Ã": 7, "©": 8, "<|end|>": 9, "ab": 10},
            "merges": ["Ġ a", "b c", "Ġa bc"]}
})";

void exercise(const aph::text::Tokenizer& tok, std::string_view text) {
  for (bool parse_special : {false, true}) {
    const auto ids = tok.encode(text, {true, parse_special});
    (void)tok.decode(ids, true);
    (void)tok.decode(ids, false);
    aph::text::IncrementalDetokenizer detok(tok, {parse_special, true});
    aph::text::StopMatcher stops({"a", "bc", "\n\n"}, parse_special);
    for (int32_t id : ids) {
      (void)tok.token_text(id);
      stops.push(detok.push(id));
    }
    stops.push(detok.flush());
    (void)stops.flush();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<aph::text::Tokenizer> fixed =
      aph::text::Tokenizer::from_hf_json(kFixedTokenizer);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t marker = input.find("\xFF\xFF");
  try {
    if (marker == std::string_view::npos) {
      exercise(*fixed, input);
    } else {
      auto tok = aph::text::Tokenizer::from_hf_json(input.substr(0, marker), {}, {}, "fuzz input");
      exercise(*tok, input.substr(marker + 2));
    }
  } catch (const aph::Error&) {
    // Refusing bad input with a message is the expected outcome.
  }
  return 0;
}
