// Launchers of the sampler kernels: plain C++ so host .cpp files include them
// without CUDA headers. Every launcher works on `n` active rows, whose
// parameters come in a Rows table (row_params.hpp) naming each one's batch
// row; other pointers are device memory; all launches go to `stream`. Errors
// come back as a message (empty = launched).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "plugins/samplers/cuda/row_params.hpp"

namespace aph::samplers::cuda {

// A row with at most this many live tokens is done by one block, on those
// tokens alone (row_view.cuh).
constexpr int kSparseCap = 1024;

// The live tokens of a logits row as a stage of run run_id found them (in id
// order), kept for the stages after it in the same run: the live set only
// shrinks during a run (sampler.h), so the list stays a superset of it and a
// later stage reads the listed tokens instead of the whole row. Written only
// for rows found sparse; a list whose run_id is not the batch's is stale.
struct LiveList {
  unsigned long long run_id;
  int32_t n;
  int32_t ids[kSparseCap];
};

struct LogitsView {
  float* data;
  int64_t stride;  // elements between rows
  int64_t vocab;
  LiveList* live;  // one per logits row (index = the row), or null: no lists
  unsigned long long run_id;  // the batch's run; 0: lists off
};

// For each active row r, entries [offsets[r], offsets[r+1]) of ids: adds
// values[k] to the logit, or sets it to -inf when values is null.
std::string launch_scatter(LogitsView logits, int32_t n, const int32_t* row_index, const int32_t* offsets,
                           const int32_t* ids, const float* values, void* stream);

// allowed_token_ids: everything outside the row's sorted id list goes.
std::string launch_keep_only(LogitsView logits, int32_t n, const int32_t* row_index, const int32_t* offsets,
                             const int32_t* ids, void* stream);

struct PenaltyRow {
  int32_t row;
  const int32_t* history;  // device: prompt then output
  int32_t n_prompt, n_tokens;
  float repetition, frequency, presence, slope;
  int32_t range;           // 0 = whole history
};

// Repetition / frequency / presence penalties. table: n * vocab int32, all 0;
// newest: n * vocab int32, all -1. Both are left that way again.
std::string launch_penalties(LogitsView logits, int32_t n, const Rows<PenaltyRow>& rows, int32_t* table,
                             int32_t* newest, void* stream);

struct DryRow {
  int32_t row;
  const int32_t* history;  // device
  int32_t n_tokens;
  int32_t allowed_length, max_ngram, max_occurrences, range;
  float multiplier, base;
  int32_t breaker_offset, n_breakers;  // sorted ids in `breakers`
};

// Breaker ids: each row's sorted list at its breaker_offset.
using DryBreakers = Rows<int32_t, 1024>;
std::string launch_dry(LogitsView logits, int32_t n, const Rows<DryRow>& rows, const DryBreakers& breakers,
                       void* stream);

struct TemperatureRow {
  int32_t row;
  int32_t dynamic;
  float temperature, min, max, exponent;
};

std::string launch_temperature(LogitsView logits, int32_t n, const Rows<TemperatureRow>& rows, void* stream);

// min_p: removes logits below max + the row's log min_p.
std::string launch_min_p(LogitsView logits, int32_t n, const Rows<Indexed<float>>& log_min_p, void* stream);

// XTC for the rows whose coin came up this step.
std::string launch_xtc(LogitsView logits, int32_t n, const Rows<Indexed<float>>& threshold, void* stream);

// top_k (k > 0) and top_p (p < 1) kept sets by radix select on the logit value.
std::string launch_top_k(LogitsView logits, int32_t n, const Rows<Indexed<int32_t>>& k, void* stream);
std::string launch_top_p(LogitsView logits, int32_t n, const Rows<Indexed<float>>& p, void* stream);

// Stages that cut (or reshape) by a per-row statistic of the distribution.
enum ThresholdKind : int32_t {
  kTopA = 0,       // p >= param * p_max^2
  kEpsilon = 1,    // p >= param
  kEta = 2,        // p >= min(param, sqrt(param) * exp(-H))
  kNsigma = 3,     // logit >= max - param * std
  kQuadratic = 4,  // logit' = m - k d^2 + s d^3 with k = param, s = param2
};

struct ThresholdRow {
  int32_t row;
  int32_t kind;
  double param;
  double param2;
};

std::string launch_threshold(LogitsView logits, int32_t n, const Rows<ThresholdRow>& rows, void* stream);

// typical_p: keeps tokens whose strictly-more-typical mass (by |-log p - H|)
// is < p, by radix select over the bits of the (non-negative) deviation.
std::string launch_typical(LogitsView logits, int32_t n, const Rows<Indexed<float>>& p, void* stream);

struct SampleRow {
  int32_t row;
  int32_t greedy;
  uint64_t seed, step;
};

// Writes chosen[row] for rows whose chosen is still -1.
std::string launch_sample(LogitsView logits, int32_t n, const Rows<SampleRow>& rows, int32_t* chosen, void* stream);

// ---- stages over sorted rows (tail-free, skew, mirostat) --------------------
//
// One kernel per stage, a row per cluster (sorted_row.cuh): a row with at
// most kCompactCap live tokens is sorted in shared memory, a longer one
// whole, in device scratch, by the row's cluster. Both orders are the CPU's
// std::stable_sort: descending value, ties by ascending id, -0.0 equal to
// +0.0.

constexpr int32_t kCompactCap = 4096;

// Whether a row of `vocab` tokens can need the full sort at all.
inline bool full_sort_possible(int64_t vocab) { return vocab > kCompactCap; }

// The full sort's device scratch for a chunk of rows: slot r of each array
// at r * vocab, two of each for the radix passes. All null when no row of
// that vocabulary can need it.
struct FullSortScratch {
  uint32_t* keys[2];
  int32_t* ids[2];
};
size_t full_sort_scratch_bytes(int32_t n, int64_t vocab);
FullSortScratch carve_full_sort(void* base, int32_t n, int64_t vocab);

// Tail-free sampling with z < 1; slot r of a chunk is row z[r].row.
std::string launch_tail_free(LogitsView logits, int32_t n, const Rows<Indexed<float>>& z, FullSortScratch full,
                             void* stream);

// Skew: rewrites every live logit as the log of the difference of the
// powered sorted running sum, exponent = exp(skew).
std::string launch_skew(LogitsView logits, int32_t n, const Rows<Indexed<double>>& exponent, FullSortScratch full,
                        void* stream);

struct MirostatRow {
  int32_t row;
  int32_t mode;  // 1 or 2
  float tau, eta;
  float* mu;      // device: this row's state, read and updated in place
  int32_t fresh;  // mu was never written: start from 2 tau
  uint64_t seed, step;
};

// Mirostat v1 / v2: truncates, draws, writes chosen[row] and the updated mu,
// for rows whose chosen is still -1 (others keep their mu).
std::string launch_mirostat(LogitsView logits, int32_t n, const Rows<MirostatRow>& rows, FullSortScratch full,
                            int32_t* chosen, void* stream);

}  // namespace aph::samplers::cuda
