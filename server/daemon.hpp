// `aphrodited --config aphrodite.toml`: plugins, HTTP, then the engine on a
// background thread; SIGINT/SIGTERM end it gracefully.
#pragma once

#include "server/config.hpp"

namespace aph::server {

// Returns the process exit status: 0 after a signal, 1 when the model failed
// to load or the server could not listen.
int run_daemon(const DaemonConfig& config);

}  // namespace aph::server
