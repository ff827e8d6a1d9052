#include "server/plugin_loader.hpp"

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "server/host_services.hpp"
#include "server/plugin_validate.hpp"

namespace aph::server {

namespace fs = std::filesystem;

struct PluginLoader::Plugin {
  boost::dll::shared_library library;
  aph_plugin_info info{};
  std::unique_ptr<PluginHostContext> ctx;
  void* state = nullptr;
  bool initialized = false;
};

const char* kind_name(int32_t kind) {
  switch (kind) {
    case APH_KIND_QUANT: return "quant";
    case APH_KIND_SAMPLER: return "sampler";
    case APH_KIND_LORA: return "lora";
    case APH_KIND_API: return "api";
    default: return "unknown";
  }
}

namespace {

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// A fresh aph_error with its size set, as the ABI expects the caller to pass.
aph_error empty_error() {
  aph_error err{};
  err.size = sizeof(err);
  err.code = APH_OK;
  return err;
}

std::string message_of(const aph_error& err) {
  std::string m(err.message, strnlen(err.message, sizeof(err.message)));
  return m.empty() ? "(no message)" : m;
}

}  // namespace

PluginLoader::PluginLoader(PluginLoadOptions options) : options_(std::move(options)) {
  if (!options_.memory) options_.memory = std::make_shared<MemoryBudget>();
}

PluginLoader::~PluginLoader() { shutdown(); }

void PluginLoader::skip(const std::string& file, const std::string& reason) {
  skipped_.push_back({file, reason});
  logger("plugins")->warn("skipped plugin {}: {}", file, reason);
}

bool PluginLoader::allowed(const std::string& name, const std::string& stem) const {
  if (contains(options_.disable, name) || contains(options_.disable, stem)) return false;
  if (options_.enable.empty()) return true;
  return contains(options_.enable, name) || contains(options_.enable, stem);
}

void PluginLoader::load_all() {
  auto log = logger("plugins");
  for (const std::string& dir : options_.dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      log->info("plugin directory {} does not exist; nothing loaded from it", dir);
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".so" && entry.is_regular_file(ec)) {
        files.push_back(entry.path());
      }
    }
    if (ec) log->warn("plugin directory {}: {}", dir, ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) load_file(file.string());
  }
  log->info("{} plugin(s) loaded, {} skipped", loaded_.size(), skipped_.size());
}

bool PluginLoader::load_file(const std::string& path_text) {
  std::error_code ec;
  // An absolute path keeps dlopen away from every search path.
  fs::path path = fs::absolute(path_text, ec);
  if (ec) path = path_text;
  const std::string file = path.string();
  std::string stem = path.stem().string();
  if (contains(options_.disable, stem)) {
    skip(file, "disabled by [plugins] disable / --disable-plugin");
    return false;
  }

  auto plugin = std::make_unique<Plugin>();
  try {
    plugin->library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    skip(file, std::string("cannot load the library: ") + e.what());
    return false;
  }
  if (!plugin->library.has(APH_PLUGIN_ENTRY_SYMBOL)) {
    skip(file, "missing entry symbol " APH_PLUGIN_ENTRY_SYMBOL);
    return false;
  }
  auto entry = reinterpret_cast<aph_plugin_entry_fn>(
      plugin->library.get<aph_status(const aph_version_offer*, aph_plugin_info*, aph_error*)>(
          APH_PLUGIN_ENTRY_SYMBOL));

  aph_version_offer offer{};
  offer.size = sizeof(offer);
  offer.major = APH_ABI_MAJOR;
  offer.min_minor = options_.offer_min_minor;
  offer.max_minor = options_.offer_max_minor;
  std::string offered = std::to_string(offer.major) + "." + std::to_string(offer.min_minor) +
                        ".." + std::to_string(offer.major) + "." + std::to_string(offer.max_minor);

  aph_plugin_info& info = plugin->info;
  std::memset(&info, 0, sizeof(info));
  aph_error err = empty_error();
  aph_status rc = APH_ERR_INTERNAL;
  try {
    rc = entry(&offer, &info, &err);
  } catch (const std::exception& e) {
    skip(file, std::string("entry threw: ") + e.what());
    return false;
  } catch (...) {
    skip(file, "entry threw an unknown exception");
    return false;
  }
  if (rc == APH_ERR_VERSION) {
    skip(file, "speaks no ABI version the host offers (" + offered + "): " + message_of(err));
    return false;
  }
  if (rc != APH_OK) {
    skip(file, "entry failed with status " + std::to_string(rc) + ": " + message_of(err));
    return false;
  }
  // Major first: a plugin of another major may have a different info layout.
  if (info.abi_major != APH_ABI_MAJOR) {
    skip(file, "wrong ABI major " + std::to_string(info.abi_major) + " (host speaks " +
                   std::to_string(APH_ABI_MAJOR) + ")");
    return false;
  }
  if (info.size < kPluginInfoMinSize) {
    skip(file, "bad plugin info size " + std::to_string(info.size) + " (ABI 1.0 needs at least " +
                   std::to_string(kPluginInfoMinSize) + ")");
    return false;
  }
  if (info.abi_minor < offer.min_minor || info.abi_minor > offer.max_minor) {
    skip(file, "answered ABI minor " + std::to_string(info.abi_minor) + " outside the offer " +
                   offered);
    return false;
  }
  std::string problem = check_plugin_info(info);
  if (!problem.empty()) {
    skip(file, problem);
    return false;
  }
  const std::string name = info.name;
  if (!allowed(name, stem)) {
    skip(file, "plugin '" + name + "' is not enabled ([plugins] enable / disable)");
    return false;
  }
  for (const auto& other : loaded_) {
    if (other.name == name) {
      skip(file, "duplicate plugin name '" + name + "' (already loaded from " + other.file + ")");
      return false;
    }
  }

  plugin->ctx = std::make_unique<PluginHostContext>();
  PluginHostContext& ctx = *plugin->ctx;
  ctx.name = name;
  ctx.log = logger("plugin." + name);
  auto section = options_.sections_json.find(name);
  if (section != options_.sections_json.end()) ctx.config_json = section->second;
  ctx.memory = options_.memory;
  ctx.register_route = options_.register_route;
  ctx.active_device = options_.active_device;
  bind_host_services(ctx, info.kind == APH_KIND_API ? options_.engine : nullptr);

  if (info.init != nullptr) {
    err = empty_error();
    ctx.in_init = true;
    std::string failure;
    try {
      rc = info.init(&ctx.services, &plugin->state, &err);
      if (rc != APH_OK) {
        failure = "init failed with status " + std::to_string(rc) + ": " + message_of(err);
      }
    } catch (const std::exception& e) {
      failure = std::string("init threw: ") + e.what();
    } catch (...) {
      failure = "init threw an unknown exception";
    }
    ctx.in_init = false;
    if (!failure.empty()) {
      if (ctx.routes_registered > 0 && options_.unregister_routes) options_.unregister_routes(name);
      skip(file, failure);
      return false;
    }
  }
  plugin->initialized = true;

  LoadedPluginInfo record;
  record.name = name;
  record.version = info.version ? info.version : "";
  record.description = info.description ? info.description : "";
  record.file = file;
  record.kind = info.kind;
  record.abi_major = info.abi_major;
  record.abi_minor = info.abi_minor;
  loaded_.push_back(record);
  switch (info.kind) {
    case APH_KIND_QUANT:
      registry_.quant.push_back(
          {name, static_cast<const aph_quant_vtable*>(info.vtable), plugin->state});
      break;
    case APH_KIND_SAMPLER:
      registry_.samplers.push_back(
          {name, static_cast<const aph_sampler_vtable*>(info.vtable), plugin->state});
      break;
    case APH_KIND_LORA:
      registry_.lora.push_back(
          {name, static_cast<const aph_lora_vtable*>(info.vtable), plugin->state});
      break;
    default: break;  // API plugins live in the route table
  }
  logger("plugins")->info("loaded {} plugin '{}' {} (ABI {}.{}) from {}", kind_name(info.kind), name,
                          record.version, info.abi_major, info.abi_minor, file);
  plugins_.push_back(std::move(plugin));
  return true;
}

void PluginLoader::shutdown() {
  registry_ = PluginRegistry{};
  while (!plugins_.empty()) {
    std::unique_ptr<Plugin> plugin = std::move(plugins_.back());
    plugins_.pop_back();
    if (plugin->initialized && plugin->info.shutdown != nullptr) {
      try {
        plugin->info.shutdown(plugin->state);
      } catch (...) {
        logger("plugins")->error("plugin '{}' threw from shutdown", plugin->ctx->name);
      }
    }
    plugin->library.unload();
  }
}

}  // namespace aph::server
