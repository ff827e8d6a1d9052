// aph_samplers: every built-in sampler stage behind the sampler ABI.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <new>

#include "aphrodite/sampler.h"
#include "core/common/error.hpp"
#include "plugins/samplers/plugin_state.hpp"
#include "plugins/samplers/stage_shim.hpp"
#include "plugins/samplers/stages/banned_strings.hpp"
#include "plugins/samplers/stages/dry.hpp"
#include "plugins/samplers/stages/masks.hpp"
#include "plugins/samplers/stages/penalties.hpp"
#include "plugins/samplers/stages/selection.hpp"
#include "plugins/samplers/stages/shaping.hpp"
#include "plugins/samplers/stages/temperature.hpp"
#include "plugins/samplers/stages/truncation.hpp"

namespace aph::samplers {
namespace {

const std::array<aph_sampler_stage, 23> kStages = {
    make_stage<MinTokensStage>(),     make_stage<LogitBiasStage>(),  make_stage<TokenBansStage>(),
    make_stage<AllowedTokensStage>(), make_stage<BannedStringsStage>(),
    make_stage<DryStage>(),           make_stage<PenaltiesStage>(),  make_stage<NoRepeatNgramStage>(),
    make_stage<TemperatureStage>(),   make_stage<TopNsigmaStage>(),  make_stage<TopKStage>(),
    make_stage<TopPStage>(),          make_stage<TopAStage>(),       make_stage<MinPStage>(),
    make_stage<TfsStage>(),           make_stage<EtaCutoffStage>(),  make_stage<EpsilonCutoffStage>(),
    make_stage<TypicalPStage>(),      make_stage<QuadraticStage>(),  make_stage<XtcStage>(),
    make_stage<SkewStage>(),          make_stage<MirostatStage>(),   make_stage<SampleStage>(),
};

aph_status set_vocab(void* state, const aph_sampler_vocab* vocab, aph_error* err) {
  return guard(err, [&] {
    if (vocab == nullptr) throw invalid_argument("set_vocab: vocab is NULL");
    static_cast<PluginState*>(state)->set_vocab(*vocab);
  });
}

const aph_sampler_vtable kVtable = {sizeof(aph_sampler_vtable), static_cast<uint32_t>(kStages.size()),
                                    kStages.data(), &set_vocab};

aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  return guard(err, [&] { *state = new PluginState(services); });
}

void shutdown(void* state) { delete static_cast<PluginState*>(state); }

}  // namespace
}  // namespace aph::samplers

extern "C" APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer, aph_plugin_info* out,
                                                  aph_error* err) {
  return aph::guard(err, [&] {
    if (offer == nullptr || out == nullptr) throw aph::invalid_argument("aph_plugin_entry: NULL argument");
    if (offer->major != APH_ABI_MAJOR || offer->min_minor > APH_ABI_MINOR) {
      throw aph::Error(APH_ERR_VERSION, "aph_samplers speaks ABI 1." + std::to_string(APH_ABI_MINOR));
    }
    aph_plugin_info info{};
    info.size = sizeof(aph_plugin_info);
    info.abi_major = APH_ABI_MAJOR;
    info.abi_minor = std::min<uint32_t>(APH_ABI_MINOR, offer->max_minor);
    info.kind = APH_KIND_SAMPLER;
    info.name = "samplers";
    info.version = "0.1.0";
    info.description = "Aphrodite's sampler stack: penalties, DRY, temperature, truncation, XTC, mirostat, masks";
    info.vtable = &aph::samplers::kVtable;
    info.init = &aph::samplers::init;
    info.shutdown = &aph::samplers::shutdown;
    *out = info;
  });
}
