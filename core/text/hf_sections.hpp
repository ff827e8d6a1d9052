// Readers for the sections of an HF tokenizer.json, each filling its part of
// a VocabularySpec. Unsupported components are refused by name rather than
// silently tokenizing differently from the reference.
#pragma once

#include <boost/json.hpp>

#include "core/text/vocabulary.hpp"

namespace aph::text {

class HfSections {
 public:
  explicit HfSections(VocabularySpec& spec) : spec_(spec) {}

  void read_model(const boost::json::object& root);         // "model": BPE only
  void read_added_tokens(const boost::json::object& root);  // "added_tokens"
  void read_normalizer(const boost::json::object& root);    // "normalizer"
  void read_pre_tokenizer(const boost::json::object& root); // "pre_tokenizer"
  void read_decoder(const boost::json::object& root);       // "decoder"
  // "post_processor": which special tokens encode adds. False when absent.
  bool read_post_processor(const boost::json::object& root);

 private:
  void normalizer(const boost::json::value& node);
  void pre_tokenizer(const boost::json::value& node, bool first_step);
  void decoder(const boost::json::value& node);
  bool post_processor(const boost::json::value& node);
  [[noreturn]] void fail(const std::string& where, const std::string& what) const;

  VocabularySpec& spec_;
  bool byte_level_ = false;
};

}  // namespace aph::text
