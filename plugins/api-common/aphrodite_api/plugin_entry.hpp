// ABI negotiation shared by the dialect plugins: accept the host's offer when
// its major matches ours and our minor falls inside the offered range.
#pragma once

#include <algorithm>
#include <cstdio>

#include "aphrodite/api.h"

namespace aph::api {

inline aph_status negotiate(const aph_version_offer* offer, aph_plugin_info* out, aph_error* err,
                            const char* plugin_name) {
  auto fail = [&](const char* why) {
    if (err != nullptr) {
      err->code = APH_ERR_VERSION;
      std::snprintf(err->message, sizeof(err->message), "%s: %s", plugin_name, why);
    }
    return APH_ERR_VERSION;
  };
  if (offer == nullptr || out == nullptr) return fail("no version offer");
  if (offer->major != APH_ABI_MAJOR) return fail("the host offers another ABI major");
  if (offer->max_minor < offer->min_minor) return fail("empty minor range");
  uint32_t minor = std::min<uint32_t>(APH_ABI_MINOR, offer->max_minor);
  if (minor < offer->min_minor) return fail("the host needs a newer ABI minor than this plugin");
  out->size = sizeof(aph_plugin_info);
  out->abi_major = APH_ABI_MAJOR;
  out->abi_minor = minor;
  return APH_OK;
}

}  // namespace aph::api
