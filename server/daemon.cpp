#include "server/daemon.hpp"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/common/device_choice.hpp"
#include "server/engine_facade.hpp"
#include "server/http/builtin_routes.hpp"
#include "server/http/http_server.hpp"
#include "server/plugin_loader.hpp"

namespace aph::server {
namespace {

std::string model_name_for(const engine::EngineConfig& e) {
  if (!e.served_model_name.empty()) return e.served_model_name;
  if (e.model_path.empty()) return "";
  std::filesystem::path p(e.model_path);
  return std::filesystem::is_directory(p) ? p.filename().string() : p.stem().string();
}

// Signals are taken synchronously by the main thread (sigtimedwait), so every
// other thread must have them blocked: block before any thread starts.
sigset_t block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a vanished client is an error value, not a signal
  return set;
}

}  // namespace

int run_daemon(const DaemonConfig& config) {
  auto log = logger("server");
  sigset_t signals = block_shutdown_signals();

  int32_t device = resolve_device(config.engine.device);
  HostStatus status;
  status.model_name = model_name_for(config.engine);
  HttpCounters counters;
  status.counters = &counters;

  RouteTable routes;
  register_builtin_routes(routes, status);
  EngineFacade facade(status.model_name, config.engine.model_path, config.engine.max_model_len);

  PluginLoadOptions options;
  options.dirs = config.plugins.dirs;
  options.enable = config.plugins.enable;
  options.disable = config.plugins.disable;
  options.sections_json = config.plugins.sections_json;
  options.engine = facade.api();
  options.memory = std::make_shared<MemoryBudget>(config.plugins.device_memory_budget,
                                                  config.plugins.pinned_memory_budget);
  options.active_device = device;
  options.register_route = [&routes](const aph_route& route, const std::string& plugin,
                                     aph_error* err) { return routes.add(route, plugin, err); };
  options.unregister_routes = [&routes](const std::string& plugin) { routes.remove_owner(plugin); };
  PluginLoader plugins(std::move(options));
  plugins.load_all();
  for (const auto& r : routes.entries()) {
    log->debug("route {} {}{} -> {}", r.method, r.path, r.route.prefix_match ? "*" : "", r.owner);
  }

  HttpServer server(config.http, routes, counters);
  try {
    server.start();
  } catch (const Error& e) {
    log->error("{}", e.what());
    return 1;
  }

  std::atomic<bool> load_failed{false};
  std::unique_ptr<engine::Engine> engine;
  std::thread engine_thread;
  if (config.engine.model_path.empty()) {
    log->warn("no model configured (model.path / --model): serving without an engine");
    status.set_phase(ModelPhase::NoModel);
  } else {
#ifdef APH_HAVE_ENGINE
    engine_thread = std::thread([&] {
      try {
        log->info("loading model {}", config.engine.model_path);
        auto created = engine::Engine::create(config.engine, plugins.registry());
        engine = std::move(created);
        facade.attach(engine->api());
        status.engine.store(engine.get());
        status.set_phase(ModelPhase::Ready);
        log->info("model {} ready", status.model_name);
      } catch (const std::exception& e) {
        log->error("model load failed ({}): {}", config.engine.model_path, e.what());
        status.set_phase(ModelPhase::Failed);
        load_failed.store(true);
      }
    });
#else
    log->error("this build has no engine (core/engine is not built): {} is not loaded",
               config.engine.model_path);
    status.set_phase(ModelPhase::NoModel);
#endif
  }

  // Wait for SIGINT/SIGTERM, or for the model load to fail.
  for (;;) {
    timespec slice{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &slice);
    if (sig == SIGINT || sig == SIGTERM) {
      log->info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
      break;
    }
    if (load_failed.load()) break;
  }

  status.set_phase(ModelPhase::Stopping);
  server.begin_stop();  // no new connections; streams see the client as gone
  facade.detach();
  if (engine_thread.joinable()) engine_thread.join();  // a load in progress finishes first
  status.engine.store(nullptr);
  if (engine) engine->shutdown();  // aborts in-flight requests so handlers return
  server.stop();
  engine.reset();
  plugins.shutdown();  // after everything the plugins created is gone
  log->info("stopped");
  return load_failed.load() ? 1 : 0;
}

}  // namespace aph::server
