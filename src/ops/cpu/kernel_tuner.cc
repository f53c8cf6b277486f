#include "ops/cpu/kernel_tuner.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>
#include <string_view>

#include "base/build_id.h"
#include "base/cpu_features.h"
#include "base/data_dir.h"
#include "base/durable_file.h"
#include "base/timer.h"

namespace tokenmill::ops {

namespace {

// Timing stops starting new rounds after this long; every variant gets at least
// kMinRounds rounds, and one pass reads at most kMaxPassBytes of weights (the first
// matrices in decode order), so a huge model costs no more than a small one.
constexpr double kBudgetSeconds = 2.0;
constexpr int kMinRounds = 3;
constexpr int kMaxRounds = 7;
constexpr int64_t kMaxPassBytes = int64_t{1} << 30;
constexpr size_t kMaxCacheEntries = 32;

std::string cache_key(const Backend& backend) {
  std::string brand = cpu_brand();
  std::replace(brand.begin(), brand.end(), '\t', ' ');
  const std::string build = executable_build_id();
  return brand + "|kernels=" + cpu_features().kernel_set() + "|threads=" + std::to_string(backend.n_threads()) +
         "|build=" + (build.empty() ? "unknown" : build);
}

// The cache file's lines: "KEY\tVARIANT".
std::vector<std::pair<std::string, std::string>> read_cache(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    entries.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return entries;
}

void write_cache(const std::string& path, const std::string& key, const std::string& variant) {
  std::vector<std::pair<std::string, std::string>> entries = read_cache(path);
  std::erase_if(entries, [&](const auto& e) { return e.first == key; });
  entries.emplace_back(key, variant);
  // The newest entries only: every build is a new key, and a developer's rebuilds would
  // otherwise grow the file without end.
  if (entries.size() > kMaxCacheEntries) entries.erase(entries.begin(), entries.end() - kMaxCacheEntries);
  std::string text;
  for (const auto& [k, v] : entries) text += k + "\t" + v + "\n";
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // A cache: when it cannot be written the choice is simply timed again next start.
  (void)write_file_durably(path, text);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

bool tuning_disabled_by_environment() {
  const char* env = std::getenv("TOKENMILL_TUNE");
  return env != nullptr && (std::string_view(env) == "off" || std::string_view(env) == "0");
}

std::string TuningReport::summary() const {
  std::ostringstream s;
  s << "kernel tuning: " << quant::to_string(chosen) << " (" << source;
  if (!timings.empty()) {
    s << " in " << static_cast<int>(seconds * 1000 + 0.5) << " ms over " << timed_bytes / (1 << 20) << " MiB:";
    s << std::fixed << std::setprecision(2);
    for (const TuningTiming& t : timings) s << " " << t.variant << " " << t.seconds * 1000 << " ms";
    if (!type_timings.empty()) s << "; by type:";
    for (const TuningTiming& t : type_timings) s << " " << t.variant << " " << t.seconds * 1000 << " ms";
  }
  s << ")";
  return s.str();
}

TuningReport tune_kernels(Backend& backend, std::span<const WeightMatrix* const> matrices, bool force_timing) {
  Timer total;
  TuningReport report;
  report.cache_key = cache_key(backend);
  report.cache_path = (std::filesystem::path(user_cache_dir()) / "kernel-tuning.tsv").string();
  if (tuning_disabled_by_environment()) {
    quant::set_kernel_tuning(report.chosen);
    report.source = "off";
    return report;
  }
  // The matrices whose kernels the variants change, in decode order, up to the byte cap.
  std::vector<const WeightMatrix*> timed;
  for (const WeightMatrix* m : matrices) {
    if (m == nullptr || m->data == nullptr || !quant::tuning_changes_kernels(m->type)) continue;
    if (report.timed_bytes + m->n_bytes() > kMaxPassBytes && !timed.empty()) break;
    timed.push_back(m);
    report.timed_bytes += m->n_bytes();
  }
  if (timed.empty()) {
    quant::set_kernel_tuning(report.chosen);
    report.source = "nothing to tune";
    return report;
  }
  // The timed matrices by weight type, in order of first appearance: each type is timed
  // apart, so that its decode_variant bit can be settled on its own matrices.
  std::vector<gguf::TensorType> types;
  std::vector<std::vector<const WeightMatrix*>> by_type;
  for (const WeightMatrix* m : timed) {
    const auto at = std::find(types.begin(), types.end(), m->type);
    if (at == types.end()) {
      types.push_back(m->type);
      by_type.push_back({m});
    } else {
      by_type[static_cast<size_t>(at - types.begin())].push_back(m);
    }
  }
  // A choice holds for the types it was timed on: a model with other weight types is
  // timed (and cached) under its own key.
  std::vector<std::string> type_names;
  for (const gguf::TensorType type : types) type_names.emplace_back(quant::type_traits(type).name);
  std::sort(type_names.begin(), type_names.end());
  report.cache_key += "|types=";
  for (size_t k = 0; k < type_names.size(); ++k) report.cache_key += (k ? "," : "") + type_names[k];
  if (!force_timing) {
    for (const auto& [key, value] : read_cache(report.cache_path)) {
      quant::KernelTuning cached;
      if (key == report.cache_key && quant::parse_kernel_tuning(value, cached)) {
        quant::set_kernel_tuning(cached);
        report.chosen = cached;
        report.source = "cache";
        report.seconds = total.seconds();
        return report;
      }
    }
  }
  int64_t max_cols = 0, max_rows = 0;
  for (const WeightMatrix* m : timed) {
    max_cols = std::max(max_cols, m->n_cols);
    max_rows = std::max(max_rows, m->n_rows);
  }
  std::vector<float> x(static_cast<size_t>(max_cols)), y(static_cast<size_t>(max_rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  auto pass = [&](const std::vector<const WeightMatrix*>& group) {
    Timer t;
    for (const WeightMatrix* m : group) backend.matmul(*m, x.data(), 1, y.data());
    return t.seconds();
  };
  const std::span<const quant::KernelTuning> variants = quant::kernel_tunings();
  const size_t n_variants = variants.size(), n_types = types.size();
  // samples[variant][type]: one pass over that type's matrices per round.
  std::vector<std::vector<std::vector<double>>> samples(n_variants, std::vector<std::vector<double>>(n_types));
  for (const quant::KernelTuning& v : variants) {  // warm-up: page tables, caches
    quant::set_kernel_tuning(v);
    for (const auto& group : by_type) pass(group);
  }
  // Rounds alternate the variants, so that drift on a shared machine hits them alike.
  for (int round = 0; round < kMaxRounds; ++round) {
    if (round >= kMinRounds && total.seconds() > kBudgetSeconds) break;
    for (size_t i = 0; i < n_variants; ++i) {
      quant::set_kernel_tuning(variants[i]);
      for (size_t k = 0; k < n_types; ++k) samples[i][k].push_back(pass(by_type[k]));
    }
  }
  std::vector<std::vector<double>> medians(n_variants, std::vector<double>(n_types));
  for (size_t i = 0; i < n_variants; ++i) {
    double sum = 0;
    for (size_t k = 0; k < n_types; ++k) sum += medians[i][k] = median(samples[i][k]);
    report.timings.push_back({quant::to_string(variants[i]), sum});
  }
  // Each prefetch setting with every type on its faster kernels (its own or its variant);
  // the faster of the two settings wins.
  auto settle = [&](bool prefetch_weights, double* seconds) {
    quant::KernelTuning tuning{.prefetch_weights = prefetch_weights};
    *seconds = 0;
    size_t own = n_variants, variant = n_variants;
    for (size_t i = 0; i < n_variants; ++i) {
      if (variants[i].prefetch_weights != prefetch_weights) continue;
      (variants[i].decode_variant == 0 ? own : variant) = i;
    }
    for (size_t k = 0; k < n_types; ++k) {
      const bool faster = variant < n_variants &&
                          (variants[variant].decode_variant & quant::decode_variant_bit(types[k])) &&
                          medians[variant][k] < medians[own][k];
      if (faster) tuning.decode_variant |= quant::decode_variant_bit(types[k]);
      *seconds += medians[faster ? variant : own][k];
    }
    return tuning;
  };
  double with_prefetch = 0, without_prefetch = 0;
  const quant::KernelTuning prefetching = settle(true, &with_prefetch);
  const quant::KernelTuning streaming = settle(false, &without_prefetch);
  report.chosen = without_prefetch < with_prefetch ? streaming : prefetching;
  for (size_t i = 0; i < n_variants; ++i) {
    if (variants[i].prefetch_weights != report.chosen.prefetch_weights) continue;
    // Each type under the kernels this variant gives it, named by their instruction set.
    for (size_t k = 0; k < n_types; ++k) {
      if (variants[i].decode_variant == 0 || (variants[i].decode_variant & quant::decode_variant_bit(types[k]))) {
        report.type_timings.push_back({std::string(quant::type_traits(types[k]).name) + " " +
                                           quant::decode_kernel_isa(variants[i], types[k]),
                                       medians[i][k]});
      }
    }
  }
  quant::set_kernel_tuning(report.chosen);
  report.source = "timed";
  write_cache(report.cache_path, report.cache_key, quant::to_string(report.chosen));
  report.seconds = total.seconds();
  return report;
}

}  // namespace tokenmill::ops
