#include "core/sampling/stage_order.hpp"

#include <algorithm>
#include <sstream>

#include "core/common/error.hpp"

namespace aph::sampling {

StageOrder::StageOrder(std::vector<const aph_sampler_stage*> stages) : stages_(std::move(stages)) {
  default_.resize(stages_.size());
  for (size_t i = 0; i < stages_.size(); ++i) default_[i] = static_cast<int32_t>(i);
  std::stable_sort(default_.begin(), default_.end(), [&](int32_t a, int32_t b) {
    return stages_[a]->default_position < stages_[b]->default_position;
  });
}

std::vector<int32_t> StageOrder::by_name(const std::string& name, const std::string& field) const {
  std::vector<int32_t> out;
  for (int32_t i : default_) {
    const aph_sampler_stage& s = *stages_[i];
    bool match = name == s.name;
    if (!match && s.priority_aliases != nullptr) {
      std::stringstream list(s.priority_aliases);
      std::string alias;
      while (std::getline(list, alias, ',')) {
        if (alias == name) match = true;
      }
    }
    if (!match) continue;
    if (!movable(i)) throw invalid_argument(field + ": sampler '" + name + "' has a fixed position");
    out.push_back(i);
  }
  if (out.empty()) throw invalid_argument(field + ": unknown sampler '" + name + "'");
  return out;
}

std::vector<int32_t> StageOrder::by_kobold_id(int64_t id, const std::string& field) const {
  std::vector<int32_t> out;
  for (int32_t i : default_) {
    if (stages_[i]->kobold_id == id && movable(i)) out.push_back(i);
  }
  if (out.empty()) throw invalid_argument(field + ": unknown sampler id " + std::to_string(id));
  return out;
}

Order StageOrder::reorder(const Order& base, const std::vector<int32_t>& listed_in) const {
  std::vector<int32_t> listed;
  for (int32_t s : listed_in) {
    if (std::find(listed.begin(), listed.end(), s) == listed.end()) listed.push_back(s);
  }
  std::vector<size_t> slots;
  for (size_t pos = 0; pos < base.size(); ++pos) {
    if (std::find(listed.begin(), listed.end(), base[pos]) != listed.end()) slots.push_back(pos);
  }
  Order out = base;
  for (size_t k = 0; k < slots.size(); ++k) out[slots[k]] = listed[k];
  return out;
}

Order StageOrder::move_last(const Order& base, const std::string& name) const {
  std::vector<int32_t> movables;
  int32_t target = -1;
  for (int32_t s : base) {
    if (!movable(s)) continue;
    if (name == stages_[s]->name) target = s;
    else movables.push_back(s);
  }
  if (target < 0) return base;
  movables.push_back(target);
  return reorder(base, movables);
}

}  // namespace aph::sampling
