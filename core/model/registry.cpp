#include <map>

#include "core/common/error.hpp"
#include "core/model/decoder.hpp"

namespace aph::model {

namespace {
// Function-local so registration from any static initializer finds it built.
std::map<std::string, ArchitectureFactory>& table() {
  static std::map<std::string, ArchitectureFactory> t;
  return t;
}
}  // namespace

bool register_architecture(const char* hf_name, ArchitectureFactory factory) {
  if (!table().emplace(hf_name, factory).second) {
    throw Error(APH_ERR_INTERNAL, std::string("architecture ") + hf_name + " registered twice");
  }
  return true;
}

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const auto& [name, f] : table()) out.push_back(name);
  return out;
}

std::unique_ptr<DecoderModel> create_architecture(const weights::ModelConfig& config, const std::string& source) {
  for (const auto& name : config.architectures) {
    auto it = table().find(name);
    if (it != table().end()) return it->second(config);
  }
  std::string asked, known;
  for (const auto& n : config.architectures) asked += (asked.empty() ? "" : ", ") + n;
  for (const auto& n : supported_architectures()) known += (known.empty() ? "" : ", ") + n;
  throw Error(APH_ERR_UNSUPPORTED, source + ": architecture " + (asked.empty() ? "(none given)" : asked) +
                                       " is not supported; supported: " + known);
}

}  // namespace aph::model
