// aphrodite.toml and the command line: unknown keys, bad values, precedence.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "core/common/error.hpp"
#include "server/config.hpp"

namespace aph::server {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "(no error)";
}

std::string toml_error(const std::string& text) {
  return error_of([&] {
    DaemonConfig c;
    apply_toml(text, "aphrodite.toml", c);
  });
}

std::string flag_error(const std::vector<std::string>& args) {
  return error_of([&] { parse_command_line(args); });
}

std::string temp_toml(const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("aph-config-test-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << text;
  return path.string();
}

TEST(Config, TheShippedTomlParses) {
  DaemonConfig c = parse_command_line({"--config", "aphrodite.toml"});
  EXPECT_EQ(c.http.port, 2242);
  EXPECT_EQ(c.http.host, "127.0.0.1");
  EXPECT_EQ(c.engine.model_path, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(c.plugins.dirs, std::vector<std::string>{"build/plugins"});
}

TEST(Config, UnknownKeysAreRejectedByName) {
  EXPECT_EQ(toml_error("[engine]\nmax_num_seq = 3\n"),
            "aphrodite.toml: unknown key engine.max_num_seq");
  EXPECT_EQ(toml_error("[servr]\nport = 1\n"), "aphrodite.toml: unknown key servr");
  EXPECT_EQ(toml_error("port = 1\n"), "aphrodite.toml: unknown key port");
  EXPECT_EQ(toml_error("[server.tls]\ncert = 'x'\n"), "aphrodite.toml: unknown key server.tls");
}

TEST(Config, WrongTypesAndValuesNameTheKey) {
  EXPECT_EQ(toml_error("[server]\nport = \"80\"\n"), "aphrodite.toml: server.port must be an integer");
  EXPECT_EQ(toml_error("[server]\nport = 70000\n"),
            "aphrodite.toml: server.port must be an integer in 0..65535 (got 70000)");
  EXPECT_EQ(toml_error("[engine]\ndevice = \"tpu\"\n"),
            "aphrodite.toml: engine.device must be one of cpu, cuda, auto (got \"tpu\")");
  EXPECT_EQ(toml_error("[server]\napi_keys = [1]\n"),
            "aphrodite.toml: server.api_keys must be an array of strings");
  EXPECT_EQ(toml_error("[engine]\ngpu_memory_utilization = 1.5\n").find(
                "aphrodite.toml: engine.gpu_memory_utilization must be a number in (0, 1]"),
            0u);
  EXPECT_EQ(toml_error("[engine]\nmax_num_seqs = 0\n"),
            "aphrodite.toml: engine.max_num_seqs must be an integer in 1..65536 (got 0)");
}

TEST(Config, SyntaxErrorsNameFileAndLine) {
  std::string e = toml_error("[server]\nport = = 3\n");
  EXPECT_EQ(e.rfind("aphrodite.toml:2:", 0), 0u) << e;
}

TEST(Config, PluginSectionsBecomeJson) {
  DaemonConfig c;
  apply_toml("[plugins.samplers]\nrate = 0.5\nnames = ['a', 'b']\n[plugins.samplers.deep]\nok = true\n",
             "t.toml", c);
  ASSERT_EQ(c.plugins.sections_json.count("samplers"), 1u);
  auto j = boost::json::parse(c.plugins.sections_json["samplers"]).as_object();
  EXPECT_DOUBLE_EQ(j["rate"].as_double(), 0.5);
  EXPECT_EQ(j["names"].as_array().size(), 2u);
  EXPECT_TRUE(j["deep"].as_object()["ok"].as_bool());
  EXPECT_EQ(toml_error("[plugins.x]\nv = nan\n"), "aphrodite.toml: plugins.x.v: nan and inf have no JSON form");
}

TEST(Config, FlagsOverrideTheTomlWhateverTheirOrder) {
  std::string path = temp_toml("[server]\nport = 1234\nhost = \"0.0.0.0\"\n[engine]\nmax_num_seqs = 8\n");
  DaemonConfig c = parse_command_line({"--port", "4321", "--config", path, "--max-num-seqs=16"});
  EXPECT_EQ(c.http.port, 4321);
  EXPECT_EQ(c.http.host, "0.0.0.0");  // from the toml, no flag
  EXPECT_EQ(c.engine.max_num_seqs, 16);
  EXPECT_EQ(c.config_path, path);
  std::filesystem::remove(path);
}

TEST(Config, EveryAphroditeFlagIsAccepted) {
  DaemonConfig c = parse_command_line(
      {"--model", "m.gguf", "--host", "::1", "--port", "8000", "--api-keys", "a", "b",
       "--api-key", "c", "--served-model-name", "smol", "--max-model-len", "1024", "--dtype",
       "half", "--quantization", "gguf", "--kv-cache-dtype", "fp8", "--gpu-memory-utilization",
       "0.5", "--max-num-seqs", "4", "--max-num-batched-tokens", "512", "--enforce-eager",
       "--chat-template", "t.jinja", "--device", "cpu", "--plugin-dir", "p1", "--plugin-dir",
       "p2", "--enable-plugin", "x", "--disable-plugin", "y", "--log-level", "debug"});
  EXPECT_EQ(c.engine.model_path, "m.gguf");
  EXPECT_EQ(c.http.host, "::1");
  EXPECT_EQ(c.http.port, 8000);
  EXPECT_EQ(c.http.api_keys, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(c.engine.served_model_name, "smol");
  EXPECT_EQ(c.engine.max_model_len, 1024);
  EXPECT_EQ(c.engine.dtype, "float16");
  EXPECT_EQ(c.engine.quantization, "gguf");
  EXPECT_EQ(c.engine.kv_cache_dtype, "fp8");
  EXPECT_DOUBLE_EQ(c.engine.gpu_memory_utilization, 0.5);
  EXPECT_EQ(c.engine.max_num_seqs, 4);
  EXPECT_EQ(c.engine.max_num_batched_tokens, 512);
  EXPECT_TRUE(c.engine.enforce_eager);
  EXPECT_EQ(c.engine.chat_template, "t.jinja");
  EXPECT_EQ(c.engine.device, "cpu");
  EXPECT_EQ(c.plugins.dirs, (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(c.plugins.enable, std::vector<std::string>{"x"});
  EXPECT_EQ(c.plugins.disable, std::vector<std::string>{"y"});
  EXPECT_EQ(c.log_level, "debug");
}

TEST(Config, BadFlagValuesNameTheFlag) {
  EXPECT_EQ(flag_error({"--port", "99999"}), "--port: must be an integer in 0..65535 (got 99999)");
  EXPECT_EQ(flag_error({"--port", "80x"}), "--port: must be an integer (got \"80x\")");
  EXPECT_EQ(flag_error({"--device", "gpu"}), "--device: must be one of cpu, cuda, auto (got \"gpu\")");
  EXPECT_EQ(flag_error({"--gpu-memory-utilization", "abc"}),
            "--gpu-memory-utilization: must be a number (got \"abc\")");
  EXPECT_EQ(flag_error({"--max-num-seqs"}), "--max-num-seqs: needs a value");
  EXPECT_EQ(flag_error({"--enforce-eager=maybe"}), "--enforce-eager: must be true or false (got \"maybe\")");
  EXPECT_EQ(flag_error({"--no-such-flag"}), "unknown flag --no-such-flag (see --help)");
  EXPECT_EQ(flag_error({"--config", "/nonexistent/a.toml"}), "--config: cannot read /nonexistent/a.toml");
  EXPECT_EQ(flag_error({"--log-level", "loud"}).rfind("--log-level: must be one of", 0), 0u);
}

TEST(Config, EnableAndDisableFlagsOverrideTheTomlLists) {
  std::string path = temp_toml("[plugins]\nenable = []\ndisable = [\"a\", \"b\"]\n");
  DaemonConfig c = parse_command_line({"--config", path, "--enable-plugin", "a"});
  EXPECT_EQ(c.plugins.disable, std::vector<std::string>{"b"});
  EXPECT_EQ(c.plugins.enable, std::vector<std::string>{"a"});
  std::filesystem::remove(path);
}

TEST(Config, PluginDirFlagsReplaceTheTomlDirs) {
  std::string path = temp_toml("[plugins]\ndirs = [\"from-toml\"]\n");
  EXPECT_EQ(parse_command_line({"--config", path}).plugins.dirs,
            std::vector<std::string>{"from-toml"});
  EXPECT_EQ(parse_command_line({"--config", path, "--plugin-dir", "x"}).plugins.dirs,
            std::vector<std::string>{"x"});
  std::filesystem::remove(path);
}

TEST(Config, RelativePathsResolveAgainstTheCurrentDirectory) {
  DaemonConfig c = parse_command_line({"--model", "models/m.gguf", "--plugin-dir", "build/p"});
  finalize_config(c);
  auto cwd = std::filesystem::current_path();
  EXPECT_EQ(c.engine.model_path, (cwd / "models/m.gguf").string());
  EXPECT_EQ(c.plugins.dirs, std::vector<std::string>{(cwd / "build/p").string()});
}

TEST(Config, DefaultPluginDirsAreBuildPluginsAndBesideTheExecutable) {
  DaemonConfig c = parse_command_line({});
  finalize_config(c);
  ASSERT_FALSE(c.plugins.dirs.empty());
  EXPECT_EQ(c.plugins.dirs[0], (std::filesystem::current_path() / "build/plugins").string());
}

TEST(Config, SubcommandParsingKeepsUnknownArguments) {
  std::vector<std::string> rest;
  DaemonConfig c = parse_command_line({"--model", "m", "hello world", "--text", "--port", "1"}, &rest);
  EXPECT_EQ(c.engine.model_path, "m");
  EXPECT_EQ(c.http.port, 1);
  EXPECT_EQ(rest, (std::vector<std::string>{"hello world", "--text"}));
}

TEST(Config, EnabledAndDisabledAtOnceIsAnError) {
  DaemonConfig c;
  c.plugins.enable = {"x"};
  c.plugins.disable = {"x"};
  EXPECT_EQ(error_of([&] { finalize_config(c); }), "plugins: 'x' is both enabled and disabled");
}

}  // namespace
}  // namespace aph::server
