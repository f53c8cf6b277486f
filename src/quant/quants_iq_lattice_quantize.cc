// Quantizers for the lattice i-quants (blocks.h): IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M. Our own search, in three steps per super-block of 256:
//
//  1. Signs: IQ2/IQ3 store each weight's sign apart, so the search fits magnitudes. Where
//     a format keeps 7 sign bits per 8 weights (the 8th makes the count of minus signs
//     even), a group with an odd count gives up the sign of its least important weight:
//     that weight's target becomes -|x|, which the grid's smallest value serves best.
//     IQ1's grid holds -1/0/1 values itself, moved by ±1/8 (the shift's sign chosen per
//     unit for IQ1_S, per group of 8 for IQ1_M): the search fits the values.
//  2. Per scale unit (16 or 32 weights): candidate scales spanning one grid step around
//     "largest magnitude on the top level"; for each, every group of 4 or 8 targets
//     takes the grid point of least weighted error among the nearest points to its
//     rounded position (a table built once per format), then the scale is refitted by
//     weighted least squares. The best fit is refined until it stops improving.
//  3. The super-block scale d (f16) and the unit scales s (4 bits; IQ1: 3): a few d
//     around "largest unit scale on the top s", each with s rounded and its two
//     neighbours tried, every group re-searched on the quantized scale. The d of least
//     total error is kept.
//
// Error weights: x^2 without an importance matrix, importance * sqrt(sigma2 + x^2) with
// one (sigma2: the row's mean square), as for the other weighted formats (IQ2_XXS takes
// the importance to the power 1.5: LatticeSpec).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/gptq_block_coder.h"
#include "quant/iq_grids.h"
#include "quant/kernels_ref.h"
#include "quant/scale_search.h"

namespace tokenmill::quant::ref {

namespace {

constexpr int kMaxLevels = 8;
constexpr int kMaxUnits = kSuperBlockSize / 16;
constexpr int kMaxGroups = kSuperBlockSize / 4;

// What the search needs to know about one format: x = d * unit * (2s + 1) * value * sign,
// value = grid + shift.
struct LatticeSpec {
  int dims;                    // weights per grid point: 8 or 4
  int n_points;
  const uint8_t* grid;         // [n_points][dims] magnitudes (null for the IQ1 grid)
  const int8_t* signed_grid;   // [n_points][dims]: IQ1's -1/0/1 values, no signs apart
  int n_levels;
  float levels[kMaxLevels];    // the distinct grid values, ascending
  int unit_size;               // weights under one small scale s: 16 or 32
  int max_scale;               // s in [0, max_scale]
  float unit;
  bool even_signs;             // 7 stored sign bits per 8 weights
  float shift;                 // IQ1: every value moves by +shift or -shift ...
  bool shift_per_group;        // ... chosen per group of 8 (IQ1_M) or per unit (IQ1_S)
  int n_neighbours;            // grid points tried per group
  // The error weights take importance to this power. IQ2_XXS, the coarsest grid per
  // scale, fits the most important channels harder: on the default model with the same
  // imatrix, 1.5 lowers its mean KLD by 9% (English) against 1.
  float importance_power = 1.0f;
};

constexpr LatticeSpec kIq2Xxs{8, 256, &kIq2XxsGrid[0][0], nullptr, 3, {8, 25, 43}, 32, 15, 0.125f, true, 0.0f, false, 16,
                              1.5f};
constexpr LatticeSpec kIq2Xs{8, 512, &kIq2XsGrid[0][0], nullptr, 3, {8, 25, 43}, 16, 15, 0.125f, true, 0.0f, false, 16};
constexpr LatticeSpec kIq2S{8, 1024, &kIq2SGrid[0][0], nullptr, 3, {8, 25, 43}, 16, 15, 0.125f, false, 0.0f, false, 16};
constexpr LatticeSpec kIq3Xxs{4, 256, &kIq3XxsGrid[0][0], nullptr, 8, {4, 12, 20, 28, 36, 44, 52, 62},
                              32, 15, 0.25f, true, 0.0f, false, 8};
constexpr LatticeSpec kIq3S{4, 512, &kIq3SGrid[0][0], nullptr, 8, {1, 3, 5, 7, 9, 11, 13, 15},
                            32, 15, 1.0f, false, 0.0f, false, 8};
constexpr LatticeSpec kIq1S{8, 2048, nullptr, &kIq1SGrid[0][0], 3, {-1, 0, 1}, 32, 7, 1.0f, false, 0.125f, false, 16};
constexpr LatticeSpec kIq1M{8, 2048, nullptr, &kIq1SGrid[0][0], 3, {-1, 0, 1}, 16, 7, 1.0f, false, 0.125f, true, 16};

bool has_separate_signs(const LatticeSpec& spec) { return spec.signed_grid == nullptr; }
int n_variants(const LatticeSpec& spec) { return spec.shift != 0.0f ? 2 : 1; }

int nearest_level(const LatticeSpec& spec, float v) {
  int k = 0;
  while (k + 1 < spec.n_levels && v > 0.5f * (spec.levels[k] + spec.levels[k + 1])) ++k;
  return k;
}

// For every point of the full level lattice (n_levels^dims of them), the format's grid
// points nearest to it, nearest first; and the grid's values as floats, once per shift
// (variant 0: +shift, variant 1: -shift).
class NeighbourTable {
 public:
  explicit NeighbourTable(const LatticeSpec& spec) : k_(spec.n_neighbours) {
    const size_t n_values = static_cast<size_t>(spec.n_points) * spec.dims;
    std::vector<float> unshifted(n_values);
    for (size_t i = 0; i < n_values; ++i) {
      unshifted[i] = spec.grid ? static_cast<float>(spec.grid[i]) : static_cast<float>(spec.signed_grid[i]);
    }
    for (int v = 0; v < n_variants(spec); ++v) {
      const float shift = v == 0 ? spec.shift : -spec.shift;
      values_[v].resize(n_values);
      for (size_t i = 0; i < n_values; ++i) values_[v][i] = unshifted[i] + shift;
    }
    int n_keys = 1;
    for (int d = 0; d < spec.dims; ++d) n_keys *= spec.n_levels;
    list_.resize(static_cast<size_t>(n_keys) * k_);
    std::vector<std::pair<float, uint16_t>> by_distance(spec.n_points);
    for (int key = 0; key < n_keys; ++key) {
      float value[8];
      for (int d = 0, rest = key; d < spec.dims; ++d, rest /= spec.n_levels) value[d] = spec.levels[rest % spec.n_levels];
      for (int p = 0; p < spec.n_points; ++p) {
        float dist = 0.0f;
        for (int d = 0; d < spec.dims; ++d) {
          const float diff = value[d] - unshifted[static_cast<size_t>(p) * spec.dims + d];
          dist += diff * diff;
        }
        by_distance[p] = {dist, static_cast<uint16_t>(p)};
      }
      std::partial_sort(by_distance.begin(), by_distance.begin() + k_, by_distance.end());
      for (int i = 0; i < k_; ++i) list_[static_cast<size_t>(key) * k_ + i] = by_distance[i].second;
    }
  }
  const uint16_t* candidates(int key) const { return &list_[static_cast<size_t>(key) * k_]; }
  int size() const { return k_; }
  const float* values(int variant) const { return values_[variant].data(); }

 private:
  int k_;
  std::vector<uint16_t> list_;
  std::vector<float> values_[2];
};

// Sums a fit is judged by: the weighted error at scale A is Σ w a² - 2 A wag + A² wgg.
struct FitSums {
  double wag = 0.0;
  double wgg = 0.0;
};

// A grid point chosen for one group.
struct PointChoice {
  uint16_t index = 0;
  uint8_t variant = 0;  // the shift's sign (IQ1)
};

class LatticeSearch {
 public:
  LatticeSearch(const LatticeSpec& spec, const NeighbourTable& table) : spec_(spec), table_(table) {}

  // The grid point for targets a[0, dims) with error weights w at scale A > 0, among the
  // given variants; its sums are added to *sums.
  PointChoice best_point(const float* a, const float* w, float scale, int first_variant, int last_variant,
                         FitSums* sums) const {
    const float inverse = 1.0f / scale;
    float best_cost = std::numeric_limits<float>::infinity();
    PointChoice best;
    float best_wag = 0.0f, best_wgg = 0.0f;
    for (int v = first_variant; v <= last_variant; ++v) {
      const float shift = v == 0 ? spec_.shift : -spec_.shift;
      int key = 0;
      for (int d = 0, mult = 1; d < spec_.dims; ++d, mult *= spec_.n_levels) {
        key += nearest_level(spec_, a[d] * inverse - shift) * mult;
      }
      const uint16_t* list = table_.candidates(key);
      const float* values = table_.values(v);
      for (int c = 0; c < table_.size(); ++c) {
        const float* g = values + list[c] * spec_.dims;
        float wag = 0.0f, wgg = 0.0f;
        for (int d = 0; d < spec_.dims; ++d) {
          wag += w[d] * a[d] * g[d];
          wgg += w[d] * g[d] * g[d];
        }
        const float cost = scale * (scale * wgg - 2.0f * wag);
        if (cost < best_cost) {
          best_cost = cost;
          best = {list[c], static_cast<uint8_t>(v)};
          best_wag = wag;
          best_wgg = wgg;
        }
      }
    }
    sums->wag += best_wag;
    sums->wgg += best_wgg;
    return best;
  }

  // Every group of n weights at scale A, with the unit's shift variant (or each group's
  // best, where the format chooses it per group); choices written.
  FitSums assign(const float* a, const float* w, int n, float scale, int variant, PointChoice* choice) const {
    const int first = spec_.shift_per_group ? 0 : variant;
    const int last = spec_.shift_per_group ? n_variants(spec_) - 1 : variant;
    FitSums sums;
    for (int g = 0; g < n / spec_.dims; ++g) {
      choice[g] = best_point(a + g * spec_.dims, w + g * spec_.dims, scale, first, last, &sums);
    }
    return sums;
  }

  // The weighted error at scale A, less the constant Σ w a².
  static double cost(const FitSums& s, double scale) { return scale * (scale * s.wgg - 2.0 * s.wag); }

  // The best free scale for n weights with the unit's shift variant (0 when nothing is to
  // be represented); *score: the error's reduction at that scale.
  float fit_unit(const float* a, const float* w, int n, int variant, double* score_out) const {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(a[i]));
    *score_out = 0.0;
    if (amax < 1e-30f) return 0.0f;
    const float top = spec_.levels[spec_.n_levels - 1] + spec_.shift;
    const float step = (spec_.levels[spec_.n_levels - 1] - spec_.levels[0]) / static_cast<float>(spec_.n_levels - 1);
    PointChoice choice[kMaxGroups];
    double best_score = 0.0;
    float best_scale = 0.0f;
    for (int t = -10; t <= 10; ++t) {
      const float scale = amax / (top + 0.1f * step * static_cast<float>(t));
      const FitSums s = assign(a, w, n, scale, variant, choice);
      if (s.wag <= 0.0 || s.wgg <= 0.0) continue;
      const double score = s.wag * s.wag / s.wgg;
      if (score > best_score) {
        best_score = score;
        best_scale = static_cast<float>(s.wag / s.wgg);
      }
    }
    for (int round = 0; round < 3 && best_scale > 0.0f; ++round) {
      const FitSums s = assign(a, w, n, best_scale, variant, choice);
      if (s.wag <= 0.0 || s.wgg <= 0.0) break;
      const double score = s.wag * s.wag / s.wgg;
      if (score <= best_score) break;
      best_score = score;
      best_scale = static_cast<float>(s.wag / s.wgg);
    }
    *score_out = best_score;
    return best_scale;
  }

 private:
  const LatticeSpec& spec_;
  const NeighbourTable& table_;
};

// One super-block's choices, before packing.
struct LatticeBlock {
  uint16_t d = 0;                  // f16
  uint8_t scale[kMaxUnits] = {};   // s per unit
  PointChoice point[kMaxGroups] = {};
  uint8_t signs[kSuperBlockSize / 8] = {};  // bit j of byte k: weight 8k + j is negative
  uint8_t unit_variant[kMaxUnits] = {};     // IQ1_S: the unit's shift sign
};

void error_weights(const LatticeSpec& spec, const float* x, const float* importance, float sigma2, float* w,
                   int n = kSuperBlockSize) {
  for (int i = 0; i < n; ++i) {
    if (importance == nullptr) {
      w[i] = x[i] * x[i];
      continue;
    }
    const float weight = spec.importance_power == 1.0f ? importance[i] : std::pow(importance[i], spec.importance_power);
    w[i] = weight * std::sqrt(sigma2 + x[i] * x[i]);
  }
}

// Step 1 for 8 weights: their sign byte, and the targets to fit in a[0, 8) (magnitudes;
// the values themselves for IQ1, whose grid holds the signs).
uint8_t sign_byte(const LatticeSpec& spec, const float* x, const float* w, float* a) {
  if (!has_separate_signs(spec)) {
    std::copy(x, x + 8, a);
    return 0;
  }
  uint8_t bits = 0;
  for (int j = 0; j < 8; ++j) {
    a[j] = std::fabs(x[j]);
    if (x[j] < 0.0f) bits |= static_cast<uint8_t>(1u << j);
  }
  if (spec.even_signs && (__builtin_popcount(bits) & 1)) {
    int least = 0;
    for (int j = 1; j < 8; ++j) {
      if (w[j] * a[j] * a[j] < w[least] * a[least] * a[least]) least = j;
    }
    bits ^= static_cast<uint8_t>(1u << least);
    a[least] = -a[least];
  }
  return bits;
}

// The variants a unit's shift may take: both for IQ1_S (chosen per unit), the one
// variant 0 otherwise (IQ1_M chooses per group inside assign).
int unit_variant_count(const LatticeSpec& spec) { return spec.shift_per_group ? 1 : n_variants(spec); }

void quantize_super_block(const LatticeSpec& spec, const LatticeSearch& search, const float* x, const float* w,
                          LatticeBlock* out) {
  *out = LatticeBlock();
  float a[kSuperBlockSize];
  for (int k = 0; k < kSuperBlockSize / 8; ++k) out->signs[k] = sign_byte(spec, x + 8 * k, w + 8 * k, a + 8 * k);
  const int n_units = kSuperBlockSize / spec.unit_size;
  const int groups_per_unit = spec.unit_size / spec.dims;
  float fitted[kMaxUnits];
  float max_fitted = 0.0f;
  for (int u = 0; u < n_units; ++u) {
    double best_score = -1.0;
    for (int v = 0; v < unit_variant_count(spec); ++v) {
      double score = 0.0;
      const float scale = search.fit_unit(a + u * spec.unit_size, w + u * spec.unit_size, spec.unit_size, v, &score);
      if (score > best_score) {
        best_score = score;
        fitted[u] = scale;
      }
    }
    max_fitted = std::max(max_fitted, fitted[u]);
  }
  if (max_fitted <= 0.0f) return;  // all zero: d = 0 reproduces it

  double best_total = std::numeric_limits<double>::infinity();
  LatticeBlock trial = *out;
  for (const float shrink : {1.0f, 0.97f, 0.94f, 0.91f, 0.88f, 0.85f}) {
    trial.d = f32_to_f16(max_fitted * shrink / (spec.unit * static_cast<float>(2 * spec.max_scale + 1)));
    const float d = f16_to_f32(trial.d);
    if (!(d > 0.0f) || !std::isfinite(d)) continue;
    double total = 0.0;
    for (int u = 0; u < n_units; ++u) {
      const float* au = a + u * spec.unit_size;
      const float* wu = w + u * spec.unit_size;
      const int nearest = static_cast<int>(std::lround(0.5f * (fitted[u] / (d * spec.unit) - 1.0f)));
      double best_cost = std::numeric_limits<double>::infinity();
      PointChoice candidate[kMaxGroups];
      for (int s = std::max(0, nearest - 1); s <= std::min(spec.max_scale, std::max(0, nearest + 1)); ++s) {
        const float scale = d * spec.unit * static_cast<float>(2 * s + 1);
        for (int v = 0; v < unit_variant_count(spec); ++v) {
          const double c = LatticeSearch::cost(search.assign(au, wu, spec.unit_size, scale, v, candidate), scale);
          if (c < best_cost) {
            best_cost = c;
            trial.scale[u] = static_cast<uint8_t>(s);
            trial.unit_variant[u] = static_cast<uint8_t>(v);
            std::copy(candidate, candidate + groups_per_unit, trial.point + u * groups_per_unit);
          }
        }
      }
      total += best_cost;
    }
    if (total < best_total) {
      best_total = total;
      *out = trial;
    }
  }
}

void store_u32(void* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

// The stored 7 sign bits of 8 weights, with a unit's scale, as IQ2_XXS / IQ3_XXS hold them.
uint32_t signs_and_scale_word(const LatticeBlock& q, int first_byte, int scale) {
  uint32_t word = static_cast<uint32_t>(scale) << 28;
  for (int l = 0; l < 4; ++l) word |= static_cast<uint32_t>(q.signs[first_byte + l] & 0x7f) << (7 * l);
  return word;
}

void pack(const LatticeBlock& q, BlockIQ2_XXS* b) {
  b->d = q.d;
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t a0 = 0;
    for (int l = 0; l < 4; ++l) a0 |= static_cast<uint32_t>(q.point[4 * ib + l].index) << (8 * l);
    store_u32(&b->qs[4 * ib], a0);
    store_u32(&b->qs[4 * ib + 2], signs_and_scale_word(q, 4 * ib, q.scale[ib]));
  }
}

void pack_nibble_scales(const LatticeBlock& q, int n_units, uint8_t* scales) {
  for (int u = 0; u < n_units; ++u) scales[u / 2] |= static_cast<uint8_t>(q.scale[u] << (4 * (u % 2)));
}

void pack(const LatticeBlock& q, BlockIQ2_XS* b) {
  b->d = q.d;
  for (int g = 0; g < 32; ++g) b->qs[g] = static_cast<uint16_t>(q.point[g].index | (q.signs[g] & 0x7f) << 9);
  std::memset(b->scales, 0, sizeof b->scales);
  pack_nibble_scales(q, 16, b->scales);
}

void pack(const LatticeBlock& q, BlockIQ2_S* b) {
  b->d = q.d;
  std::memset(b->qh, 0, sizeof b->qh);
  std::memset(b->scales, 0, sizeof b->scales);
  for (int g = 0; g < 32; ++g) {
    b->qs[g] = static_cast<uint8_t>(q.point[g].index & 0xff);
    b->qh[g / 4] |= static_cast<uint8_t>((q.point[g].index >> 8) << (2 * (g % 4)));
    b->signs[g] = q.signs[g];
  }
  pack_nibble_scales(q, 16, b->scales);
}

void pack(const LatticeBlock& q, BlockIQ3_XXS* b) {
  b->d = q.d;
  for (int i = 0; i < 64; ++i) b->qs[i] = static_cast<uint8_t>(q.point[i].index);
  for (int ib = 0; ib < 8; ++ib) store_u32(&b->scales_and_signs[4 * ib], signs_and_scale_word(q, 4 * ib, q.scale[ib]));
}

void pack(const LatticeBlock& q, BlockIQ3_S* b) {
  b->d = q.d;
  std::memset(b->qh, 0, sizeof b->qh);
  std::memset(b->scales, 0, sizeof b->scales);
  for (int i = 0; i < 64; ++i) {
    b->qs[i] = static_cast<uint8_t>(q.point[i].index & 0xff);
    b->qh[i / 8] |= static_cast<uint8_t>((q.point[i].index >> 8) << (i % 8));
  }
  std::memcpy(b->signs, q.signs, sizeof b->signs);
  pack_nibble_scales(q, 8, b->scales);
}

void pack(const LatticeBlock& q, BlockIQ1_S* b) {
  b->d = q.d;
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t qh = static_cast<uint32_t>(q.scale[ib]) << 12 | (q.unit_variant[ib] ? 0x8000u : 0u);
    for (int l = 0; l < 4; ++l) {
      const uint16_t index = q.point[4 * ib + l].index;
      b->qs[4 * ib + l] = static_cast<uint8_t>(index & 0xff);
      qh |= static_cast<uint32_t>(index >> 8) << (3 * l);
    }
    b->qh[ib] = static_cast<uint16_t>(qh);
  }
}

void pack(const LatticeBlock& q, BlockIQ1_M* b) {
  std::memset(b->qh, 0, sizeof b->qh);
  std::memset(b->scales, 0, sizeof b->scales);
  for (int g = 0; g < 32; ++g) {
    const PointChoice& c = q.point[g];
    b->qs[g] = static_cast<uint8_t>(c.index & 0xff);
    b->qh[g / 2] |= static_cast<uint8_t>(((c.index >> 8) | (c.variant ? 8u : 0u)) << (4 * (g % 2)));
  }
  for (int h = 0; h < 16; ++h) b->scales[h / 4] |= static_cast<uint16_t>(q.scale[h] << (3 * (h % 4)));
  // d's f16 bits, a nibble in the top of each word (iq1_m_scale_bits reads them back).
  for (int w = 0; w < 4; ++w) b->scales[w] |= static_cast<uint16_t>(((q.d >> (4 * w)) & 0xf) << 12);
}

template <typename Block>
void quantize_lattice(const LatticeSpec& spec, const NeighbourTable& table, const float* x, void* dst, int64_t n,
                      const float* importance) {
  const LatticeSearch search(spec, table);
  const float sigma2 = importance != nullptr ? mean_square(x, n) : 0.0f;
  auto* blocks = static_cast<Block*>(dst);
  float w[kSuperBlockSize];
  LatticeBlock q;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float* xb = x + b * kSuperBlockSize;
    error_weights(spec, xb, importance != nullptr ? importance + b * kSuperBlockSize : nullptr, sigma2, w);
    quantize_super_block(spec, search, xb, w, &q);
    pack(q, &blocks[b]);
  }
}

template <const LatticeSpec& kSpec>
const NeighbourTable& neighbours() {
  static const NeighbourTable table(kSpec);
  return table;
}

template <typename Block>
void pack_into(const LatticeBlock& q, void* dst) {
  pack(q, static_cast<Block*>(dst));
}

// GPTQ's steps (gptq_block_coder.h): the super-block's scales from step 3 on the values
// at the block's start, then each sign byte's 8 weights re-decided (signs, then grid
// points at their unit's stored scale) from their values when GPTQ reaches them.
class LatticeBlockCoder final : public GptqBlockCoder {
 public:
  LatticeBlockCoder(const LatticeSpec& spec, const NeighbourTable& table, void (*packer)(const LatticeBlock&, void*))
      : spec_(spec), table_(table), search_(spec, table), packer_(packer) {}
  int block_size() const override { return kSuperBlockSize; }
  int group_size() const override { return 8; }

  void fit(const float* x, const float* importance, float sigma2) override {
    float w[kSuperBlockSize];
    error_weights(spec_, x, importance, sigma2, w);
    quantize_super_block(spec_, search_, x, w, &block_);
  }

  void decide_group(int k, const float* x, const float* importance, float sigma2, float* q) override {
    float w[8], a[8];
    error_weights(spec_, x, importance, sigma2, w, 8);
    const uint8_t bits = sign_byte(spec_, x, w, a);
    block_.signs[k] = bits;
    const int unit = 8 * k / spec_.unit_size;
    const float scale = f16_to_f32(block_.d) * spec_.unit * static_cast<float>(2 * block_.scale[unit] + 1);
    const int first = spec_.shift_per_group ? 0 : block_.unit_variant[unit];
    const int last = spec_.shift_per_group ? n_variants(spec_) - 1 : first;
    const int points = 8 / spec_.dims;
    for (int p = 0; p < points; ++p) {
      FitSums unused;
      PointChoice& choice = block_.point[k * points + p];
      choice = scale > 0.0f ? search_.best_point(a + p * spec_.dims, w + p * spec_.dims, scale, first, last, &unused)
                            : PointChoice{0, static_cast<uint8_t>(first)};
      const float* values = table_.values(choice.variant) + choice.index * spec_.dims;
      for (int d = 0; d < spec_.dims; ++d) {
        const int j = p * spec_.dims + d;
        const float value = scale * values[d];
        q[j] = (bits >> j) & 1 ? -value : value;
      }
    }
  }

  void pack(void* dst) override { packer_(block_, dst); }

 private:
  const LatticeSpec& spec_;
  const NeighbourTable& table_;
  LatticeSearch search_;
  void (*packer_)(const LatticeBlock&, void*);
  LatticeBlock block_;
};

}  // namespace

void quantize_row_iq2_xxs_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ2_XXS>(kIq2Xxs, neighbours<kIq2Xxs>(), src, dst, n, importance);
}
void quantize_row_iq2_xs_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ2_XS>(kIq2Xs, neighbours<kIq2Xs>(), src, dst, n, importance);
}
void quantize_row_iq2_s_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ2_S>(kIq2S, neighbours<kIq2S>(), src, dst, n, importance);
}
void quantize_row_iq3_xxs_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ3_XXS>(kIq3Xxs, neighbours<kIq3Xxs>(), src, dst, n, importance);
}
void quantize_row_iq3_s_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ3_S>(kIq3S, neighbours<kIq3S>(), src, dst, n, importance);
}
void quantize_row_iq1_s_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ1_S>(kIq1S, neighbours<kIq1S>(), src, dst, n, importance);
}
void quantize_row_iq1_m_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_lattice<BlockIQ1_M>(kIq1M, neighbours<kIq1M>(), src, dst, n, importance);
}

void quantize_row_iq2_xxs(const float* src, void* dst, int64_t n) { quantize_row_iq2_xxs_weighted(src, dst, n, nullptr); }
void quantize_row_iq2_xs(const float* src, void* dst, int64_t n) { quantize_row_iq2_xs_weighted(src, dst, n, nullptr); }
void quantize_row_iq2_s(const float* src, void* dst, int64_t n) { quantize_row_iq2_s_weighted(src, dst, n, nullptr); }
void quantize_row_iq3_xxs(const float* src, void* dst, int64_t n) { quantize_row_iq3_xxs_weighted(src, dst, n, nullptr); }
void quantize_row_iq3_s(const float* src, void* dst, int64_t n) { quantize_row_iq3_s_weighted(src, dst, n, nullptr); }
void quantize_row_iq1_s(const float* src, void* dst, int64_t n) { quantize_row_iq1_s_weighted(src, dst, n, nullptr); }
void quantize_row_iq1_m(const float* src, void* dst, int64_t n) { quantize_row_iq1_m_weighted(src, dst, n, nullptr); }

}  // namespace tokenmill::quant::ref

namespace tokenmill::quant {

std::unique_ptr<GptqBlockCoder> make_lattice_gptq_coder(gguf::TensorType type) {
  using ref::LatticeBlockCoder;
  using ref::neighbours;
  using ref::pack_into;
  switch (type) {
    case gguf::TensorType::kIQ2_XXS:
      return std::make_unique<LatticeBlockCoder>(ref::kIq2Xxs, neighbours<ref::kIq2Xxs>(), pack_into<BlockIQ2_XXS>);
    case gguf::TensorType::kIQ2_XS:
      return std::make_unique<LatticeBlockCoder>(ref::kIq2Xs, neighbours<ref::kIq2Xs>(), pack_into<BlockIQ2_XS>);
    case gguf::TensorType::kIQ2_S:
      return std::make_unique<LatticeBlockCoder>(ref::kIq2S, neighbours<ref::kIq2S>(), pack_into<BlockIQ2_S>);
    case gguf::TensorType::kIQ3_XXS:
      return std::make_unique<LatticeBlockCoder>(ref::kIq3Xxs, neighbours<ref::kIq3Xxs>(), pack_into<BlockIQ3_XXS>);
    case gguf::TensorType::kIQ3_S:
      return std::make_unique<LatticeBlockCoder>(ref::kIq3S, neighbours<ref::kIq3S>(), pack_into<BlockIQ3_S>);
    case gguf::TensorType::kIQ1_S:
      return std::make_unique<LatticeBlockCoder>(ref::kIq1S, neighbours<ref::kIq1S>(), pack_into<BlockIQ1_S>);
    case gguf::TensorType::kIQ1_M:
      return std::make_unique<LatticeBlockCoder>(ref::kIq1M, neighbours<ref::kIq1M>(), pack_into<BlockIQ1_M>);
    default: return nullptr;
  }
}

}  // namespace tokenmill::quant
