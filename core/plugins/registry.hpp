// What the plugin loader (server/) found, as the core sees it: plain tables of
// negotiated vtables plus each plugin's state pointer. Core code looks plugins
// up by capability (probe scores, stage names), never by a hard-coded name.
#pragma once

#include <string>
#include <vector>

#include "aphrodite/api.h"
#include "aphrodite/lora.h"
#include "aphrodite/quant.h"
#include "aphrodite/sampler.h"

namespace aph {

struct LoadedQuantPlugin {
  std::string name;
  const aph_quant_vtable* vtable = nullptr;
  void* state = nullptr;
};

struct LoadedSamplerPlugin {
  std::string name;
  const aph_sampler_vtable* vtable = nullptr;
  void* state = nullptr;
};

struct LoadedLoraPlugin {
  std::string name;
  const aph_lora_vtable* vtable = nullptr;
  void* state = nullptr;
};

struct PluginRegistry {
  std::vector<LoadedQuantPlugin> quant;
  std::vector<LoadedSamplerPlugin> samplers;
  std::vector<LoadedLoraPlugin> lora;
};

}  // namespace aph
