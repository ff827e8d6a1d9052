// The request fields the sampler stages declare, gathered from every stage:
// canonical names, aliases, types, defaults and ranges. Turns a client's
// request object into the normalized object every stage's row_create reads.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "aphrodite/sampler.h"

namespace aph::sampling {

class RequestFields {
 public:
  // Adds a stage's fields and aliases. Throws aph::Error when a field is
  // declared twice with different types or an alias points two ways.
  void add_stage(const aph_sampler_stage& stage);
  // Adds a field the chain itself reads (seed, logprobs, ...).
  void add(const aph_sampler_field& field);
  void add_alias(const std::string& alias, const std::string& canonical);

  // Every declared field, by canonical name, with defaults filled in for the
  // absent ones (null when a non-numeric field has no default). Throws
  // aph::Error (APH_ERR_INVALID_ARGUMENT) whose message starts with the name
  // the client used.
  boost::json::object normalize(const boost::json::object& request) const;

 private:
  struct Field {
    aph_sampler_field decl;
    std::string name;
    std::string default_json;
    bool has_default_json = false;
  };
  boost::json::value check(const Field& f, const boost::json::value& v, const std::string& sent_as) const;

  std::map<std::string, Field> fields_;
  std::map<std::string, std::string> alias_to_canonical_;
  std::map<std::string, std::vector<std::string>> canonical_to_aliases_;
};

}  // namespace aph::sampling
