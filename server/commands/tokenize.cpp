// `aphrodited tokenize --model PATH [--split SEP] [--add-special] [--parse-special]`
//
// Reads text on stdin and prints its token ids, space-separated. PATH is an
// HF model directory, a tokenizer.json, or a GGUF file (vocab-only ones too).
// GGUF files are read by whichever quant plugin's model source takes them:
// the core has no GGUF code. With --split SEP (escapes such as \n are
// interpreted) stdin is cut at every SEP and each piece gets one line in the
// format of the tokenizer fixtures' .out files (" id id ..."); a SEP at the
// very end terminates the last piece rather than starting an empty one.
// Special-token text is plain text unless --parse-special; BOS/EOS are added
// only with --add-special.
#include <boost/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/text/tokenizer.hpp"
#include "server/subcommands.hpp"

namespace aph::server {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "\n__ggml_vocab_test__\n" as typed in a shell -> the bytes it means.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case '0': out.push_back('\0'); break;
      case '\\': out.push_back('\\'); break;
      case 'x': {
        const int hi = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
        const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) throw invalid_argument("--split: \\x needs two hex digits");
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        break;
      }
      default:
        throw invalid_argument(std::string("--split: unknown escape \\") + c);
    }
  }
  return out;
}

// The GGUF's tokenizer.* keys, through the best-scoring quant plugin that is
// a model source.
std::unique_ptr<text::Tokenizer> tokenizer_from_plugins(const std::string& path,
                                                        const PluginRegistry& registry) {
  aph_checkpoint_desc desc{};
  desc.size = sizeof(desc);
  desc.path = path.c_str();
  desc.config_json = nullptr;
  desc.quantization = "";
  const LoadedQuantPlugin* best = nullptr;
  float best_score = 0;
  for (const auto& plugin : registry.quant) {
    const aph_quant_vtable* vt = plugin.vtable;
    if (vt == nullptr || vt->probe == nullptr || vt->source_open == nullptr ||
        vt->source_metadata_json == nullptr || vt->source_close == nullptr) {
      continue;
    }
    float score = 0;
    aph_error err{};
    if (vt->probe(plugin.state, &desc, &score, &err) == APH_OK && score > best_score) {
      best_score = score;
      best = &plugin;
    }
  }
  if (best == nullptr) {
    throw invalid_argument("--model " + path +
                           ": no loaded plugin reads this file as a model source (is the GGUF plugin in the "
                           "plugin directories? see --plugin-dir)");
  }
  const aph_quant_vtable* vt = best->vtable;
  aph_model_source* source = nullptr;
  aph_error err{};
  check(vt->source_open(best->state, &desc, &source, &err), err, "--model " + path + " (plugin " + best->name + ")");
  std::unique_ptr<aph_model_source, void (*)(aph_model_source*)> guard(source, vt->source_close);
  const char* meta_text = vt->source_metadata_json(source);
  if (meta_text == nullptr) throw invalid_argument("--model " + path + ": plugin " + best->name + " gave no metadata");
  boost::system::error_code ec;
  json::value meta = json::parse(meta_text, ec);
  if (ec || !meta.is_object()) {
    throw Error(APH_ERR_INTERNAL, "plugin " + best->name + ": source_metadata_json is not a JSON object");
  }
  const json::value* tok = meta.as_object().if_contains("tokenizer");
  if (tok == nullptr || !tok->is_object()) {
    throw invalid_argument("--model " + path + ": the model source has no \"tokenizer\" metadata");
  }
  return text::Tokenizer::from_gguf_metadata(tok->as_object());
}

std::unique_ptr<text::Tokenizer> load_tokenizer(const std::string& path, const PluginRegistry& registry) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "tokenizer.json", ec)) {
      throw invalid_argument("--model " + path + ": the directory has no tokenizer.json");
    }
    return text::Tokenizer::from_hf(path);
  }
  if (!fs::exists(path, ec)) throw invalid_argument("--model " + path + ": no such file or directory");
  if (fs::path(path).extension() == ".json") return text::Tokenizer::from_hf(path);
  return tokenizer_from_plugins(path, registry);
}

void print_ids(const std::vector<int32_t>& ids, bool leading_space, std::string& out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (leading_space || i > 0) out.push_back(' ');
    out += std::to_string(ids[i]);
  }
  out.push_back('\n');
}

int run_tokenize(const std::vector<std::string>& args) {
  auto setup = prepare_subcommand(args);
  bool split = false;
  std::string separator;
  text::EncodeOptions options;
  for (size_t i = 0; i < setup.rest.size(); ++i) {
    const std::string& a = setup.rest[i];
    if (a == "--split") {
      if (i + 1 == setup.rest.size()) throw invalid_argument("--split needs a separator");
      separator = unescape(setup.rest[++i]);
      if (separator.empty()) throw invalid_argument("--split: the separator is empty");
      split = true;
    } else if (a == "--add-special") {
      options.add_special = true;
    } else if (a == "--parse-special") {
      options.parse_special = true;
    } else {
      throw invalid_argument("tokenize: unknown argument \"" + a +
                             "\" (usage: tokenize --model PATH [--split SEP] [--add-special] [--parse-special])");
    }
  }
  const std::string& model = setup.config.engine.model_path;
  if (model.empty()) throw invalid_argument("tokenize: --model PATH is required");
  auto tokenizer = load_tokenizer(model, setup.plugins->registry());

  const std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  std::string out;
  if (!split) {
    print_ids(tokenizer->encode(input, options), false, out);
  } else {
    size_t pos = 0;
    while (pos < input.size()) {
      size_t hit = input.find(separator, pos);
      if (hit == std::string::npos) hit = input.size();
      print_ids(tokenizer->encode(std::string_view(input).substr(pos, hit - pos), options), true, out);
      pos = hit + separator.size();
    }
    // An input of only a separator, or nothing, is still one (empty) piece.
    if (input.empty()) print_ids({}, true, out);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

APH_SUBCOMMAND(tokenize, "tokenize", "print the token ids of the text on stdin", run_tokenize);

}  // namespace aph::server
