// aph_render_template: the C++ side of the jinja2 oracle test.
//   aph_render_template TEMPLATE < context.json   -> rendered text on stdout,
//       or the error on stderr with exit code 2.
//   aph_render_template --batch CASES.json        -> one JSON array on stdout,
//       [{"ok": true, "output": "..."} | {"ok": false, "error": "..."}], for
//       CASES = [{"template": PATH, "context": {...}}, ...]; one process for
//       every case keeps the test fast.
// APH_FIXED_DATE=YYYY-MM-DD pins strftime_now so outputs are comparable.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "core/chat/chat_template.hpp"
#include "core/common/error.hpp"

namespace {

std::string read_all(std::istream& in) {
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_path(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw aph::invalid_argument("cannot open " + path);
  return read_all(in);
}

aph::chat::RenderOptions options_from_env() {
  aph::chat::RenderOptions options;
  if (const char* date = std::getenv("APH_FIXED_DATE")) options.fixed_now = aph::chat::parse_civil_time(date);
  return options;
}

int run_batch(const std::string& cases_path) {
  boost::json::value cases = boost::json::parse(read_path(cases_path));
  auto options = options_from_env();
  std::map<std::string, std::unique_ptr<aph::chat::ChatTemplate>> compiled;
  std::map<std::string, std::string> compile_errors;
  boost::json::array results;
  for (const auto& c : cases.as_array()) {
    const auto& obj = c.as_object();
    std::string path(obj.at("template").as_string());
    boost::json::object result;
    try {
      if (!compiled.count(path) && !compile_errors.count(path)) {
        try {
          compiled[path] = aph::chat::ChatTemplate::compile(read_path(path));
        } catch (const aph::Error& e) {
          compile_errors[path] = e.what();
        }
      }
      if (compile_errors.count(path)) throw aph::invalid_argument(compile_errors[path]);
      result["output"] = compiled[path]->render(obj.at("context").as_object(), options);
      result["ok"] = true;
    } catch (const aph::Error& e) {
      result["ok"] = false;
      result["error"] = e.what();
    }
    results.push_back(std::move(result));
  }
  std::cout << boost::json::serialize(results);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::string(argv[1]) == "--batch") return run_batch(argv[2]);
    if (argc != 2) {
      std::cerr << "usage: aph_render_template TEMPLATE < context.json\n"
                   "       aph_render_template --batch CASES.json\n";
      return 64;
    }
    auto tmpl = aph::chat::ChatTemplate::compile(read_path(argv[1]));
    boost::json::value context = boost::json::parse(read_all(std::cin));
    std::cout << tmpl->render(context.as_object(), options_from_env());
    return 0;
  } catch (const aph::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
