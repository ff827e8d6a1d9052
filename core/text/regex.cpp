#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/text/regex.hpp"

#include <pcre2.h>

#include "core/common/error.hpp"
#include "core/text/utf8.hpp"

namespace aph::text {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// Match data and a JIT stack per thread: patterns such as `\s+(?!\S)` on a
// long run of spaces need more than PCRE2's default 32 KiB JIT stack.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_context* context = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  if (state.data == nullptr) throw Error(APH_ERR_OUT_OF_MEMORY, "PCRE2 match data allocation failed");
  return state;
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // DOLLAR_ENDONLY: `$` means the end of the piece, as in std::regex and
  // HF's engines, not "before a final newline".
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    throw invalid_argument("tokenizer regex '" + pattern + "' does not compile at offset " +
                           std::to_string(error_offset) + ": " + pcre2_message(error_code));
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view subject,
                     std::vector<std::pair<size_t, size_t>>& matches) const {
  matches.clear();
  auto& state = thread_state();
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* begin = reinterpret_cast<PCRE2_SPTR>(subject.data());
  // The caller's text may be ill-formed UTF-8 (raw user bytes): checking it
  // once here is cheaper than having PCRE2 re-check from every start offset.
  const bool valid = is_valid_utf8(subject);
  const uint32_t match_options = valid ? PCRE2_NO_UTF_CHECK : 0;
  if (!valid) {
    // PCRE2 refuses ill-formed subjects; the caller repairs text before
    // splitting, so this only protects against misuse.
    throw invalid_argument("tokenizer input is not valid UTF-8");
  }
  size_t offset = 0;
  while (offset <= subject.size()) {
    int rc = jit_ ? pcre2_jit_match(code, begin, subject.size(), offset, match_options, state.data,
                                    state.context)
                  : pcre2_match(code, begin, subject.size(), offset, match_options, state.data,
                                state.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code, begin, subject.size(), offset, match_options | PCRE2_NO_JIT,
                       state.data, state.context);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0 && rc != 0) {
      throw Error(APH_ERR_INTERNAL,
                  "tokenizer regex '" + pattern_ + "' failed: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t start = ovector[0];
    const size_t end = ovector[1];
    if (end > start) {
      matches.emplace_back(start, end);
      offset = end;
    } else {
      // An empty match: step over one whole character and try again.
      if (start >= subject.size()) break;
      offset = start + utf8_sequence_length(static_cast<uint8_t>(subject[start]));
    }
  }
}

}  // namespace aph::text
