// The route table API plugins (and the host's own /health, /version,
// /metrics) register into: exact paths first, then the longest prefix.
// Filled on the start-up thread before the server accepts; read-only after.
#pragma once

#include <string>
#include <vector>

#include "aphrodite/api.h"

namespace aph::server {

struct RouteEntry {
  std::string method;
  std::string path;
  std::string owner;  // plugin name, or "host"
  aph_route route{};  // method/path point into the strings above
};

class RouteTable {
 public:
  // Copies the route. A second route with the same method and path (and
  // match kind) is APH_ERR_INVALID_ARGUMENT naming both owners.
  aph_status add(const aph_route& route, const std::string& owner, aph_error* err);
  void remove_owner(const std::string& owner);

  struct Lookup {
    const RouteEntry* match = nullptr;    // method and path match
    const RouteEntry* on_path = nullptr;  // some route of the path (for a 405's send_error)
    std::vector<std::string> allowed;     // methods on the path, for the Allow header
  };
  Lookup find(const std::string& method, const std::string& path) const;

  size_t size() const { return entries_.size(); }
  const std::vector<RouteEntry>& entries() const { return entries_; }

 private:
  std::vector<RouteEntry> entries_;  // std::vector of stable strings: rebuilt pointers in add()
  void relink();
};

}  // namespace aph::server
