// libFuzzer harness for the GGUF container parser: any byte string must
// either parse (and then every tensor lies inside the buffer) or raise
// aph::Error. Also feeds a parsed file through the model-source config
// builder, which reads metadata of arbitrary types.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/gguf_file.hpp"
#include "plugins/quant-gguf/model_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = aph::gguf::GgufFile::parse(data, size, "fuzz.gguf");
    for (const auto& t : f->tensors()) {
      if (t.data < data || t.nbytes > size || t.data + t.nbytes > data + size) std::abort();
      if (f->find(t.name) == nullptr) std::abort();
    }
    for (const auto& kv : f->metadata())
      if (f->key_type(kv.key()) == nullptr) std::abort();
    try {
      boost::json::object cfg = aph::gguf::hf_config(*f);
      (void)cfg;
    } catch (const aph::Error&) {
    }
  } catch (const aph::Error&) {
  }
  return 0;
}
