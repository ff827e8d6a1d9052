#include "core/common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace aph {
namespace {
std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;
}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto existing = spdlog::get(component)) return existing;
  auto created = spdlog::stderr_color_mt(component);
  created->set_level(g_level);
  return created;
}

void set_log_level(const std::string& level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_level = spdlog::level::from_str(level);
  spdlog::set_level(g_level);
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->set_level(g_level); });
}

}  // namespace aph
