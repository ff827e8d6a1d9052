#include "server/settings.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/error.hpp"

namespace aph::server {
namespace {

const std::string& as_string(const SettingValue& v) { return std::get<std::string>(v); }
int64_t as_int(const SettingValue& v) { return std::get<int64_t>(v); }
double as_float(const SettingValue& v) { return std::get<double>(v); }
bool as_bool(const SettingValue& v) { return std::get<bool>(v); }
const std::vector<std::string>& as_list(const SettingValue& v) {
  return std::get<std::vector<std::string>>(v);
}

int64_t in_range(const SettingValue& v, int64_t lo, int64_t hi) {
  int64_t x = as_int(v);
  if (x < lo || x > hi) {
    throw invalid_argument("must be an integer in " + std::to_string(lo) + ".." +
                           std::to_string(hi) + " (got " + std::to_string(x) + ")");
  }
  return x;
}

std::string one_of(const SettingValue& v, const std::vector<std::string>& choices) {
  const std::string& s = as_string(v);
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw invalid_argument("must be one of " + list + " (got \"" + s + "\")");
}

std::string nonempty(const SettingValue& v) {
  const std::string& s = as_string(v);
  if (s.empty()) throw invalid_argument("must not be empty");
  return s;
}

std::vector<std::string> nonempty_items(const SettingValue& v) {
  const auto& list = as_list(v);
  for (const auto& item : list) {
    if (item.empty()) throw invalid_argument("must not contain an empty string");
  }
  return list;
}

std::string normalize_dtype(const SettingValue& v) {
  std::string s = as_string(v);
  if (s == "half" || s == "fp16") return "float16";
  if (s == "float" || s == "fp32") return "float32";
  if (s == "bf16") return "bfloat16";
  return one_of(SettingValue(s), {"auto", "float32", "float16", "bfloat16"});
}

std::vector<Setting> build_settings() {
  using T = SettingType;
  std::vector<Setting> s;
  auto add = [&](std::string key, std::vector<std::string> flags, T type, std::string help,
                 std::function<void(DaemonConfig&, const SettingValue&)> apply) {
    Setting setting;
    setting.toml_key = std::move(key);
    setting.flags = std::move(flags);
    setting.type = type;
    setting.help = std::move(help);
    setting.apply = std::move(apply);
    s.push_back(std::move(setting));
  };

  // [model]
  add("model.path", {"--model"}, T::String, "model file or directory (GGUF, HF folder); \"\" = serve without a model",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.model_path = as_string(v); });
  add("model.served_model_name", {"--served-model-name"}, T::String,
      "the name clients use; \"\" = derived from the path",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.served_model_name = as_string(v); });
  add("model.max_model_len", {"--max-model-len"}, T::Int, "context length; 0 = the model's",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.max_model_len = in_range(v, 0, int64_t(1) << 24);
      });
  add("model.dtype", {"--dtype"}, T::String,
      "auto | float32 | float16 | bfloat16 (half, float, fp16, bf16 accepted)",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.dtype = normalize_dtype(v); });
  add("model.quantization", {"--quantization", "-q"}, T::String,
      "weight format plugin (e.g. gguf); \"\" = the plugin whose probe scores highest",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.quantization = as_string(v); });
  add("model.chat_template", {"--chat-template"}, T::String,
      "\"\" = the model's own; else a file path or inline Jinja",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.chat_template = as_string(v); });

  // [server]
  add("server.host", {"--host"}, T::String, "address to listen on",
      [](DaemonConfig& c, const SettingValue& v) { c.http.host = nonempty(v); });
  add("server.port", {"--port"}, T::Int, "TCP port (default 2242; 0 = any free port)",
      [](DaemonConfig& c, const SettingValue& v) { c.http.port = int(in_range(v, 0, 65535)); });
  {
    Setting keys;
    keys.toml_key = "server.api_keys";
    keys.flags = {"--api-keys", "--api-key"};
    keys.type = T::StringList;
    keys.help = "keys accepted as `Authorization: Bearer <key>` or `X-API-KEY`; none = open";
    keys.flag_takes_many = true;
    keys.apply = [](DaemonConfig& c, const SettingValue& v) { c.http.api_keys = nonempty_items(v); };
    s.push_back(std::move(keys));
  }
  add("server.max_body_bytes", {"--max-body-bytes"}, T::Int, "larger request bodies get 413",
      [](DaemonConfig& c, const SettingValue& v) {
        c.http.max_body_bytes = uint64_t(in_range(v, 1, int64_t(1) << 32));
      });
  add("server.max_header_bytes", {}, T::Int, "larger request headers get 431",
      [](DaemonConfig& c, const SettingValue& v) {
        c.http.max_header_bytes = uint64_t(in_range(v, 1024, 1 << 20));
      });
  add("server.kobold_routes_open", {}, T::Bool,
      "true leaves the KoboldAI (legacy) routes open without an API key",
      [](DaemonConfig& c, const SettingValue& v) { c.http.kobold_routes_open = as_bool(v); });
  add("server.max_connections", {}, T::Int, "concurrent connections; beyond it 503",
      [](DaemonConfig& c, const SettingValue& v) {
        c.http.max_connections = int(in_range(v, 1, 100000));
      });
  add("server.keep_alive_timeout_s", {}, T::Int, "idle keep-alive connections close after this",
      [](DaemonConfig& c, const SettingValue& v) {
        c.http.keep_alive_timeout_s = int(in_range(v, 1, 86400));
      });
  add("server.cors_allow_origin", {}, T::String,
      "Access-Control-Allow-Origin value; \"\" = no CORS headers",
      [](DaemonConfig& c, const SettingValue& v) { c.http.cors_allow_origin = as_string(v); });

  // [engine]
  add("engine.device", {"--device"}, T::String, "cpu | cuda | auto",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.device = one_of(v, {"cpu", "cuda", "auto"});
      });
  add("engine.gpu_memory_utilization", {"--gpu-memory-utilization"}, T::Float,
      "fraction of GPU memory the engine may use, in (0, 1]",
      [](DaemonConfig& c, const SettingValue& v) {
        double x = as_float(v);
        if (!(x > 0.0 && x <= 1.0)) {
          throw invalid_argument("must be a number in (0, 1] (got " + std::to_string(x) + ")");
        }
        c.engine.gpu_memory_utilization = x;
      });
  add("engine.max_num_seqs", {"--max-num-seqs"}, T::Int, "sequences per engine step",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.max_num_seqs = int(in_range(v, 1, 65536));
      });
  add("engine.max_num_batched_tokens", {"--max-num-batched-tokens"}, T::Int,
      "tokens per engine step (chunked prefill)", [](DaemonConfig& c, const SettingValue& v) {
        c.engine.max_num_batched_tokens = int(in_range(v, 1, 1 << 24));
      });
  add("engine.kv_cache_dtype", {"--kv-cache-dtype"}, T::String,
      "auto | fp16 | bf16 | fp8 | fp8_e4m3 | fp8_e5m2", [](DaemonConfig& c, const SettingValue& v) {
        c.engine.kv_cache_dtype = one_of(v, {"auto", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2"});
      });
  add("engine.block_size", {"--block-size"}, T::Int, "tokens per KV block: 8, 16 or 32",
      [](DaemonConfig& c, const SettingValue& v) {
        int64_t x = as_int(v);
        if (x != 8 && x != 16 && x != 32) {
          throw invalid_argument("must be 8, 16 or 32 (got " + std::to_string(x) + ")");
        }
        c.engine.block_size = int(x);
      });
  add("engine.cpu_kv_cache_bytes", {}, T::Int, "KV cache size when running on the CPU",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.cpu_kv_cache_bytes = in_range(v, 0, int64_t(1) << 50);
      });
  add("engine.kv_cache_memory", {"--kv-cache-memory"}, T::Int,
      "KV cache bytes on the GPU; overrides gpu_memory_utilization when > 0",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.kv_cache_memory = in_range(v, 0, int64_t(1) << 50);
      });
  add("engine.enforce_eager", {"--enforce-eager"}, T::Bool, "never capture CUDA graphs",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.enforce_eager = as_bool(v); });
  add("engine.overlap_decode", {"--overlap-decode"}, T::Bool,
      "queue each decode step before the previous step's tokens reach the host",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.overlap_decode = as_bool(v); });
  add("engine.enable_prefix_caching", {"--enable-prefix-caching"}, T::Bool,
      "reuse KV blocks of shared prompt prefixes",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.enable_prefix_caching = as_bool(v); });
  add("engine.max_waiting", {}, T::Int, "queued requests; beyond it submit answers busy",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.max_waiting = int(in_range(v, 1, 1 << 24));
      });
  add("engine.sampler_order", {}, T::StringList,
      "sampler stage names in order; empty = each stage's default position",
      [](DaemonConfig& c, const SettingValue& v) { c.engine.sampler_order = nonempty_items(v); });
  add("engine.cpu_threads", {}, T::Int, "CPU threads for the engine; 0 = all cores",
      [](DaemonConfig& c, const SettingValue& v) {
        c.engine.cpu_threads = int(in_range(v, 0, 4096));
      });

  // [plugins]
  add("plugins.dirs", {"--plugin-dir"}, T::StringList,
      "directories searched for plugin .so files (relative to the current directory)",
      [](DaemonConfig& c, const SettingValue& v) { c.plugins.dirs = nonempty_items(v); });
  {
    Setting enable;
    enable.toml_key = "plugins.enable";
    enable.flags = {"--enable-plugin"};
    enable.type = T::StringList;
    enable.help = "plugin names (or file stems) to load; empty = every plugin found";
    enable.list_mode = ListFlagMode::Enable;
    enable.apply = [](DaemonConfig& c, const SettingValue& v) { c.plugins.enable = nonempty_items(v); };
    s.push_back(std::move(enable));
    Setting disable;
    disable.toml_key = "plugins.disable";
    disable.flags = {"--disable-plugin"};
    disable.type = T::StringList;
    disable.help = "plugin names (or file stems) never loaded";
    disable.list_mode = ListFlagMode::Disable;
    disable.apply = [](DaemonConfig& c, const SettingValue& v) {
      c.plugins.disable = nonempty_items(v);
    };
    s.push_back(std::move(disable));
  }
  add("plugins.device_memory_budget", {}, T::Int,
      "bytes plugins may allocate per device through the host; 0 = unlimited",
      [](DaemonConfig& c, const SettingValue& v) {
        c.plugins.device_memory_budget = uint64_t(in_range(v, 0, int64_t(1) << 50));
      });
  add("plugins.pinned_memory_budget", {}, T::Int,
      "bytes of pinned host memory plugins may allocate; 0 = unlimited",
      [](DaemonConfig& c, const SettingValue& v) {
        c.plugins.pinned_memory_budget = uint64_t(in_range(v, 0, int64_t(1) << 50));
      });

  // [logging]
  add("logging.level", {"--log-level"}, T::String, "trace | debug | info | warn | error | critical | off",
      [](DaemonConfig& c, const SettingValue& v) {
        std::string level = as_string(v);
        if (level == "warning") level = "warn";
        c.log_level = one_of(SettingValue(level), {"trace", "debug", "info", "warn", "error", "critical", "off"});
      });
  return s;
}

}  // namespace

const std::vector<Setting>& all_settings() {
  static const std::vector<Setting> settings = build_settings();
  return settings;
}

const Setting* find_setting_by_key(const std::string& toml_key) {
  for (const auto& s : all_settings()) {
    if (s.toml_key == toml_key) return &s;
  }
  return nullptr;
}

const Setting* find_setting_by_flag(const std::string& flag) {
  for (const auto& s : all_settings()) {
    if (std::find(s.flags.begin(), s.flags.end(), flag) != s.flags.end()) return &s;
  }
  return nullptr;
}

const std::vector<std::string>& toml_sections() {
  static const std::vector<std::string> sections = {"model", "server", "engine", "plugins", "logging"};
  return sections;
}

}  // namespace aph::server
