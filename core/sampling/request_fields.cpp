#include "core/sampling/request_fields.hpp"

#include <cmath>
#include <sstream>

#include "core/common/error.hpp"

namespace aph::sampling {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

std::string format_number(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

bool integral(const boost::json::value& v, int64_t& out) {
  if (v.is_int64()) {
    out = v.get_int64();
    return true;
  }
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<uint64_t>(INT64_MAX)) return false;
    out = static_cast<int64_t>(v.get_uint64());
    return true;
  }
  if (v.is_double()) {
    const double d = v.get_double();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18) {
      out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

}  // namespace

void RequestFields::add(const aph_sampler_field& decl) {
  const std::string name = decl.name;
  auto it = fields_.find(name);
  if (it != fields_.end()) {
    if (it->second.decl.type != decl.type) {
      throw Error(APH_ERR_INVALID_ARGUMENT, "sampler field '" + name + "' is declared with two different types");
    }
    return;  // several stages read one field: the first declaration rules
  }
  Field f;
  f.decl = decl;
  f.name = name;
  if (decl.default_json != nullptr) {
    f.default_json = decl.default_json;
    f.has_default_json = true;
  }
  fields_.emplace(name, std::move(f));
}

void RequestFields::add_alias(const std::string& alias, const std::string& canonical) {
  if (alias == canonical) return;
  auto it = alias_to_canonical_.find(alias);
  if (it != alias_to_canonical_.end()) {
    if (it->second != canonical) {
      throw Error(APH_ERR_INVALID_ARGUMENT,
                  "sampler field alias '" + alias + "' points at both '" + it->second + "' and '" + canonical + "'");
    }
    return;
  }
  alias_to_canonical_[alias] = canonical;
  canonical_to_aliases_[canonical].push_back(alias);
}

void RequestFields::add_stage(const aph_sampler_stage& stage) {
  for (uint32_t i = 0; i < stage.n_fields; ++i) add(stage.fields[i]);
  if (stage.field_aliases == nullptr) return;
  std::stringstream list(stage.field_aliases);
  std::string item;
  while (std::getline(list, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw Error(APH_ERR_INVALID_ARGUMENT, std::string("sampler stage '") + stage.name + "': bad alias '" + item + "'");
    }
    add_alias(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
  }
}

boost::json::value RequestFields::check(const Field& f, const boost::json::value& v, const std::string& sent) const {
  auto fail = [&](const std::string& why) -> boost::json::value {
    std::string name = sent == f.name ? sent : sent + " (" + f.name + ")";
    throw invalid_argument(name + ": " + why);
  };
  const double lo = f.decl.min_value, hi = f.decl.max_value;
  auto range = [&](double x) {
    if ((!std::isnan(lo) && x < lo) || (!std::isnan(hi) && x > hi)) {
      fail(format_number(x) + " is outside [" + (std::isnan(lo) ? std::string("-inf") : format_number(lo)) + ", " +
           (std::isnan(hi) ? std::string("inf") : format_number(hi)) + "]");
    }
  };
  switch (f.decl.type) {
    case APH_FIELD_FLOAT: {
      if (!v.is_number()) return fail("expected a number");
      const double x = v.to_number<double>();
      if (!std::isfinite(x)) return fail("expected a finite number");
      range(x);
      return x;
    }
    case APH_FIELD_INT: {
      int64_t x = 0;
      if (!integral(v, x)) return fail("expected an integer");
      range(static_cast<double>(x));
      return x;
    }
    case APH_FIELD_BOOL: {
      if (v.is_bool()) return v.get_bool();
      int64_t x = 0;
      if (integral(v, x) && (x == 0 || x == 1)) return x == 1;
      return fail("expected true or false");
    }
    case APH_FIELD_STRING:
      if (!v.is_string()) return fail("expected a string");
      return v;
    case APH_FIELD_INT_LIST: {
      boost::json::array out;
      if (v.is_string()) {  // "1,2,3" (Kobold) or a JSON-encoded array
        std::string s(v.get_string());
        boost::system::error_code ec;
        boost::json::value parsed = boost::json::parse(s, ec);
        if (!ec && parsed.is_array()) return check(f, parsed, sent);
        std::stringstream list(s);
        std::string item;
        while (std::getline(list, item, ',')) {
          item = trim(item);
          if (item.empty()) continue;
          size_t used = 0;
          long long x = 0;
          try {
            x = std::stoll(item, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (used != item.size()) return fail("'" + item + "' is not an integer");
          out.push_back(static_cast<int64_t>(x));
        }
        return out;
      }
      if (!v.is_array()) return fail("expected an array of integers");
      for (const boost::json::value& e : v.as_array()) {
        int64_t x = 0;
        if (!integral(e, x)) return fail("expected an array of integers");
        out.push_back(x);
      }
      return out;
    }
    case APH_FIELD_STRING_LIST: {
      if (v.is_string()) {  // SillyTavern sends a JSON-encoded array as a string
        std::string s(v.get_string());
        boost::system::error_code ec;
        boost::json::value parsed = boost::json::parse(s, ec);
        if (!ec && parsed.is_array()) return check(f, parsed, sent);
        return boost::json::array{v};
      }
      if (!v.is_array()) return fail("expected an array of strings");
      for (const boost::json::value& e : v.as_array()) {
        if (!e.is_string()) return fail("expected an array of strings");
      }
      return v;
    }
    case APH_FIELD_JSON:
    default:
      return v;
  }
}

boost::json::object RequestFields::normalize(const boost::json::object& request) const {
  boost::json::object out;
  for (const auto& [name, f] : fields_) {
    const boost::json::value* v = request.if_contains(name);
    std::string sent = name;
    if (v == nullptr || v->is_null()) {
      v = nullptr;
      auto aliases = canonical_to_aliases_.find(name);
      if (aliases != canonical_to_aliases_.end()) {
        for (const std::string& a : aliases->second) {
          const boost::json::value* av = request.if_contains(a);
          if (av != nullptr && !av->is_null()) {
            v = av;
            sent = a;
            break;
          }
        }
      }
    }
    if (v != nullptr) {
      out[name] = check(f, *v, sent);
    } else if (f.decl.type == APH_FIELD_FLOAT) {
      out[name] = f.decl.default_number;
    } else if (f.decl.type == APH_FIELD_INT) {
      out[name] = static_cast<int64_t>(f.decl.default_number);
    } else if (f.decl.type == APH_FIELD_BOOL) {
      out[name] = f.decl.default_number != 0.0;
    } else if (f.has_default_json) {
      boost::system::error_code ec;
      boost::json::value d = boost::json::parse(f.default_json, ec);
      if (ec) throw Error(APH_ERR_INTERNAL, "sampler field '" + name + "' has a default that is not JSON");
      out[name] = std::move(d);
    } else {
      out[name] = nullptr;
    }
  }
  return out;
}

}  // namespace aph::sampling
