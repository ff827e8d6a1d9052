// The daemon itself (a separate process) survives every broken plugin and
// reports each one: `aphrodited --list-plugins --plugin-dir <fakes>`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "aphrodite/plugin.h"

namespace {

struct ProcessResult {
  int status = -1;
  std::string output;
};

ProcessResult run(const std::string& command) {
  ProcessResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int rc = pclose(pipe);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

TEST(ListPlugins, DaemonListsLoadedAndSkippedPluginsAndExitsZero) {
  ProcessResult r = run(std::string(APH_DAEMON_PATH) + " --list-plugins --plugin-dir " + APH_FAKE_PLUGIN_DIR);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("loaded  sampler fake-good 9.9.9 ABI 1." + std::to_string(APH_ABI_MINOR)),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("loaded  api fake-api"), std::string::npos) << r.output;
  // One log line per skipped plugin, naming the file and the reason.
  EXPECT_NE(r.output.find("skipped plugin " APH_FAKE_PLUGIN_DIR "/wrong_major.so: wrong ABI major 2"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("skipped " APH_FAKE_PLUGIN_DIR "/init_throws.so: init threw"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("3 loaded, 11 skipped"), std::string::npos) << r.output;
}

TEST(ListPlugins, DisablePluginFlagIsHonoured) {
  ProcessResult r = run(std::string(APH_DAEMON_PATH) + " --list-plugins --plugin-dir " + APH_FAKE_PLUGIN_DIR +
              " --disable-plugin fake-api");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("loaded  api fake-api"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 loaded, 12 skipped"), std::string::npos) << r.output;
}

}  // namespace
