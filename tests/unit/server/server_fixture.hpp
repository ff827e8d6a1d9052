// A real listening server on an ephemeral port with the host's routes and the
// fake API plugin (tests/unit/loader/fakes) loaded through the real loader.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "server/engine_facade.hpp"
#include "server/http/builtin_routes.hpp"
#include "server/http/http_server.hpp"
#include "server/plugin_loader.hpp"
#include "tests/unit/server/http_client.hpp"

namespace aph::test {

class ServerTest : public ::testing::Test {
 protected:
  void start(server::HttpConfig config = {}) {
    config.host = "127.0.0.1";
    config.port = 0;
    status_.counters = &counters_;
    status_.model_name = "test-model";
    server::register_builtin_routes(routes_, status_);
    facade_ = std::make_unique<server::EngineFacade>("test-model", "", 0);
    server::PluginLoadOptions options;
    options.dirs = {APH_FAKE_PLUGIN_DIR};
    options.enable = {"fake-api"};
    options.sections_json["fake-api"] = R"({"greeting":"hi"})";
    options.engine = facade_->api();
    options.register_route = [this](const aph_route& r, const std::string& owner, aph_error* err) {
      return routes_.add(r, owner, err);
    };
    loader_ = std::make_unique<server::PluginLoader>(std::move(options));
    loader_->load_all();
    ASSERT_EQ(loader_->loaded().size(), 1u) << "the fake API plugin did not load";
    server_ = std::make_unique<server::HttpServer>(config, routes_, counters_);
    port_ = server_->start();
  }

  void TearDown() override {
    server_.reset();  // every connection thread is gone before the plugin is
    loader_.reset();
  }

  server::HostStatus status_;
  server::HttpCounters counters_;
  server::RouteTable routes_;
  std::unique_ptr<server::EngineFacade> facade_;
  std::unique_ptr<server::PluginLoader> loader_;
  std::unique_ptr<server::HttpServer> server_;
  uint16_t port_ = 0;
};

}  // namespace aph::test
