// aph_engine_api: the C table API plugins call, and the engine services
// behind it that need no engine-thread state (model info, tokens, chat).
#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/engine/engine_impl.hpp"

// The opaque request handle: the submitting thread's end of the channel.
struct aph_request {
  std::shared_ptr<aph::engine::RequestChannel> channel;
};

namespace aph::engine {
namespace {

EngineImpl* self(void* engine) { return static_cast<EngineImpl*>(engine); }

void fill_buffer(aph_buffer* out, const void* data, size_t len) {
  if (out == nullptr) throw invalid_argument("out: NULL buffer");
  // +1 so text buffers are also NUL-terminated for callers that want a C string.
  auto* mem = static_cast<char*>(std::malloc(len + 1));
  if (mem == nullptr) throw std::bad_alloc();
  if (len) std::memcpy(mem, data, len);
  mem[len] = '\0';
  out->size = sizeof(aph_buffer);
  out->data = mem;
  out->len = len;
}

aph_status api_model_info(void* engine, aph_model_desc* out, aph_error* err) {
  return guard(err, [&] {
    if (out == nullptr) throw invalid_argument("out: NULL");
    self(engine)->describe(out);
  });
}

aph_status api_tokenize(void* engine, const char* text, uint64_t text_len, int32_t add_special,
                        int32_t parse_special, aph_buffer* out, aph_error* err) {
  return guard(err, [&] {
    if (text == nullptr && text_len > 0) throw invalid_argument("text: NULL");
    auto ids = self(engine)->tokenize(std::string_view(text ? text : "", text_len),
                                      add_special != 0, parse_special != 0);
    fill_buffer(out, ids.data(), ids.size() * sizeof(int32_t));
  });
}

aph_status api_detokenize(void* engine, const int32_t* ids, uint64_t n_ids, int32_t skip_special,
                          aph_buffer* out, aph_error* err) {
  return guard(err, [&] {
    if (ids == nullptr && n_ids > 0) throw invalid_argument("ids: NULL");
    std::string text = self(engine)->detokenize(std::span(ids, n_ids), skip_special != 0);
    fill_buffer(out, text.data(), text.size());
  });
}

aph_status api_apply_chat_template(void* engine, const char* messages_json,
                                   const char* options_json, aph_buffer* out, aph_error* err) {
  return guard(err, [&] {
    if (messages_json == nullptr) throw invalid_argument("messages: NULL");
    std::string text =
        self(engine)->apply_chat_template(messages_json, options_json ? options_json : "{}");
    fill_buffer(out, text.data(), text.size());
  });
}

void api_free_buffer(void*, aph_buffer* buffer) {
  if (buffer == nullptr) return;
  std::free(buffer->data);
  buffer->data = nullptr;
  buffer->len = 0;
}

aph_status api_submit(void* engine, const char* request_json, aph_request** out, aph_error* err) {
  return guard(err, [&] {
    if (out == nullptr) throw invalid_argument("out: NULL");
    *out = nullptr;
    if (request_json == nullptr) throw invalid_argument("request: NULL");
    auto handle = std::make_unique<aph_request>();
    handle->channel = self(engine)->submit(request_json);
    *out = handle.release();
  });
}

aph_status api_next_event(aph_request* request, int32_t timeout_ms, aph_gen_event* out,
                          aph_error* err) {
  return guard(err, [&] {
    if (request == nullptr || out == nullptr) throw invalid_argument("request: NULL");
    request->channel->next(timeout_ms, out, err);
  });
}

void api_cancel(aph_request* request) {
  if (request != nullptr) request->channel->request_cancel();
}

void api_release(aph_request* request) {
  if (request == nullptr) return;
  // The engine keeps its own reference until the request has ended.
  request->channel->request_cancel();
  delete request;
}

std::string read_template_source(const std::string& value) {
  // A configured value naming an existing file is read; anything else is Jinja.
  std::error_code ec;
  if (value.find('\n') == std::string::npos && value.find("{%") == std::string::npos &&
      value.find("{{") == std::string::npos && std::filesystem::is_regular_file(value, ec)) {
    std::ifstream in(value, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) throw invalid_argument("chat_template: cannot read " + value);
    return ss.str();
  }
  return value;
}

}  // namespace

void install_api(aph_engine_api& api, EngineImpl* engine) {
  api.size = sizeof(aph_engine_api);
  api.engine = engine;
  api.model_info = api_model_info;
  api.tokenize = api_tokenize;
  api.detokenize = api_detokenize;
  api.apply_chat_template = api_apply_chat_template;
  api.free_buffer = api_free_buffer;
  api.submit = api_submit;
  api.next_event = api_next_event;
  api.cancel = api_cancel;
  api.release = api_release;
}

void EngineImpl::describe(aph_model_desc* out) const {
  const uint32_t caller_size = out->size;
  aph_model_desc d{};
  d.size = caller_size;
  d.served_model_name = served_name_.c_str();
  d.model_path = config_.model_path.c_str();
  d.max_model_len = max_model_len_;
  d.vocab_size = vocab_size_;
  d.bos_token_id = tokenizer_.bos_id();
  d.eos_token_id = tokenizer_.eos_id();
  d.add_bos = tokenizer_.adds_bos() ? 1 : 0;
  d.lora_names_json = "[]";
  d.ready = 1;
  std::memcpy(out, &d, std::min<size_t>(caller_size ? caller_size : sizeof d, sizeof d));
}

std::vector<int32_t> EngineImpl::tokenize(std::string_view text, bool add_special,
                                          bool parse_special) const {
  return tokenizer_.encode(text, {.add_special = add_special, .parse_special = parse_special});
}

std::string EngineImpl::detokenize(std::span<const int32_t> ids, bool skip_special) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= token_vocab_size_)
      throw invalid_argument("tokens[" + std::to_string(i) + "]: id " + std::to_string(ids[i]) +
                             " is outside the vocabulary (" + std::to_string(token_vocab_size_) +
                             ")");
  return tokenizer_.decode(std::vector<int32_t>(ids.begin(), ids.end()), skip_special);
}

const chat::ChatTemplate& EngineImpl::chat_template_for(const std::string& source) const {
  std::lock_guard lock(template_mu_);
  auto it = templates_.find(source);
  if (it != templates_.end()) return *it->second;
  // Per-request templates are compiled once each; bound the cache so a client
  // sending endless variants cannot grow it without limit.
  if (templates_.size() > 64) templates_.clear();
  auto compiled = chat::ChatTemplate::compile(read_template_source(source));
  return *templates_.emplace(source, std::move(compiled)).first->second;
}

std::string EngineImpl::apply_chat_template(const std::string& messages_json,
                                            const std::string& options_json) const {
  namespace json = boost::json;
  boost::system::error_code ec;
  json::value messages = json::parse(messages_json, ec);
  if (ec || !messages.is_array()) throw invalid_argument("messages: expected a JSON array");
  json::value options_v = json::parse(options_json, ec);
  if (ec || !options_v.is_object()) throw invalid_argument("options: expected a JSON object");
  const json::object& options = options_v.as_object();
  auto flag = [&](const char* key) {
    auto it = options.find(key);
    if (it == options.end() || it->value().is_null()) return false;
    if (!it->value().is_bool()) throw invalid_argument(std::string(key) + ": expected a boolean");
    return it->value().as_bool();
  };
  const bool add_generation_prompt = flag("add_generation_prompt");
  const bool continue_final = flag("continue_final_message");
  if (add_generation_prompt && continue_final)
    throw invalid_argument("continue_final_message: cannot be combined with add_generation_prompt");

  std::string source = default_template_;
  if (auto it = options.find("chat_template"); it != options.end() && !it->value().is_null()) {
    if (!it->value().is_string()) throw invalid_argument("chat_template: expected a string");
    if (!it->value().as_string().empty()) source = std::string(it->value().as_string());
  }
  if (source.empty())
    throw invalid_argument("chat_template: the model has no chat template and none is configured");

  json::object vars;
  if (auto it = options.find("chat_template_kwargs");
      it != options.end() && !it->value().is_null()) {
    if (!it->value().is_object())
      throw invalid_argument("chat_template_kwargs: expected an object");
    vars = it->value().as_object();
  }
  vars["messages"] = messages;
  vars["add_generation_prompt"] = add_generation_prompt;
  if (auto it = options.find("tools"); it != options.end() && !it->value().is_null())
    vars["tools"] = it->value();
  const model::ModelInfo& info = runner_->info();
  vars["bos_token"] = info.bos_token;
  vars["eos_token"] = info.eos_token;

  std::string prompt = chat_template_for(source).render(vars);
  if (continue_final) {
    // As vLLM: render without a generation prompt, then cut right after the
    // final message's content so the model continues it.
    const json::array& msgs = messages.as_array();
    if (msgs.empty() || !msgs.back().is_object())
      throw invalid_argument("continue_final_message: needs a final message");
    auto content = msgs.back().as_object().find("content");
    if (content == msgs.back().as_object().end() || !content->value().is_string())
      throw invalid_argument("continue_final_message: the final message needs string content");
    std::string text(content->value().as_string());
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    const size_t at = prompt.rfind(text);
    if (text.empty() || at == std::string::npos)
      throw invalid_argument(
          "continue_final_message: the template does not reproduce the final message");
    prompt.resize(at + text.size());
  }
  return prompt;
}

}  // namespace aph::engine
