// Which stage runs when. The default order sorts stages by default_position;
// an order given by name (aphrodite.toml, SillyTavern's sampler_priority) or
// by Kobold id permutes the stages it names among the places those stages
// hold, so unnamed stages keep theirs and masks / selection never move.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aphrodite/sampler.h"

namespace aph::sampling {

using Order = std::vector<int32_t>;  // indices into StageOrder's stage list

class StageOrder {
 public:
  explicit StageOrder(std::vector<const aph_sampler_stage*> stages);

  const Order& default_order() const { return default_; }
  const aph_sampler_stage& stage(int32_t i) const { return *stages_[i]; }
  int32_t size() const { return static_cast<int32_t>(stages_.size()); }

  // Stages a name refers to: a stage name or a priority alias (in default
  // order). Throws aph::Error naming `field` for an unknown name or a stage
  // whose position is fixed.
  std::vector<int32_t> by_name(const std::string& name, const std::string& field) const;
  std::vector<int32_t> by_kobold_id(int64_t id, const std::string& field) const;

  // `base` with the listed stages permuted among the positions they hold.
  Order reorder(const Order& base, const std::vector<int32_t>& listed) const;
  // `base` with the stage named `name` moved after every other movable stage.
  Order move_last(const Order& base, const std::string& name) const;

 private:
  bool movable(int32_t i) const { return (stages_[i]->flags & APH_SAMPLER_FIXED_POSITION) == 0; }
  std::vector<const aph_sampler_stage*> stages_;
  Order default_;
};

}  // namespace aph::sampling
