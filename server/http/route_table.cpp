#include "server/http/route_table.hpp"

#include <algorithm>

#include "core/common/error.hpp"

namespace aph::server {

void RouteTable::relink() {
  // Entries moved when the vector grew: point the C strings at their new home.
  for (auto& e : entries_) {
    e.route.method = e.method.c_str();
    e.route.path = e.path.c_str();
  }
}

aph_status RouteTable::add(const aph_route& route, const std::string& owner, aph_error* err) {
  return guard(err, [&] {
    if (route.method == nullptr || route.method[0] == '\0') {
      throw invalid_argument("route.method is empty");
    }
    if (route.path == nullptr || route.path[0] != '/') {
      throw invalid_argument("route.path must start with '/'");
    }
    if (route.handle == nullptr) throw invalid_argument("route.handle is NULL");
    if (route.send_error == nullptr) throw invalid_argument("route.send_error is NULL");
    if (route.auth != APH_ROUTE_AUTH_REQUIRED && route.auth != APH_ROUTE_AUTH_LEGACY) {
      throw invalid_argument("route.auth " + std::to_string(route.auth) + " is unknown");
    }
    std::string method = route.method;
    std::transform(method.begin(), method.end(), method.begin(), ::toupper);
    bool prefix = route.prefix_match != 0;
    for (const auto& e : entries_) {
      if (e.method == method && e.path == route.path && (e.route.prefix_match != 0) == prefix) {
        throw invalid_argument("route " + method + " " + route.path + " of '" + owner +
                               "' is already registered by '" + e.owner + "'");
      }
    }
    RouteEntry entry;
    entry.method = method;
    entry.path = route.path;
    entry.owner = owner;
    entry.route = route;
    entry.route.size = sizeof(aph_route);
    entries_.push_back(std::move(entry));
    relink();
  });
}

void RouteTable::remove_owner(const std::string& owner) {
  std::erase_if(entries_, [&](const RouteEntry& e) { return e.owner == owner; });
  relink();
}

RouteTable::Lookup RouteTable::find(const std::string& method, const std::string& path) const {
  Lookup out;
  // Exact routes of the path win over every prefix route.
  size_t best_prefix = 0;
  bool exact_path = false;
  for (const auto& e : entries_) {
    if (e.route.prefix_match == 0 && e.path == path) exact_path = true;
  }
  for (const auto& e : entries_) {
    bool on_path;
    if (exact_path) {
      on_path = e.route.prefix_match == 0 && e.path == path;
    } else {
      on_path = e.route.prefix_match != 0 && path.compare(0, e.path.size(), e.path) == 0;
      if (on_path && e.path.size() < best_prefix) continue;
      if (on_path && e.path.size() > best_prefix) {
        // A longer prefix supersedes what shorter ones contributed.
        best_prefix = e.path.size();
        out = Lookup{};
      }
    }
    if (!on_path) continue;
    if (out.on_path == nullptr) out.on_path = &e;
    if (std::find(out.allowed.begin(), out.allowed.end(), e.method) == out.allowed.end()) {
      out.allowed.push_back(e.method);
    }
    if (e.method == method && out.match == nullptr) out.match = &e;
  }
  return out;
}

}  // namespace aph::server
