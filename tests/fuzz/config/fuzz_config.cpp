// libFuzzer: arbitrary bytes as aphrodite.toml. Parsing and validation must
// only ever succeed or throw aph::Error; any crash or other exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/common/error.hpp"
#include "server/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aph::server::DaemonConfig config;
  try {
    aph::server::apply_toml(std::string_view(reinterpret_cast<const char*>(data), size),
                            "fuzz.toml", config);
  } catch (const aph::Error&) {
  }
  return 0;
}
