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
  auto pass = [&](const quant::KernelTuning& variant) {
    quant::set_kernel_tuning(variant);
    Timer t;
    for (const WeightMatrix* m : timed) backend.matmul(*m, x.data(), 1, y.data());
    return t.seconds();
  };
  const std::span<const quant::KernelTuning> variants = quant::kernel_tunings();
  const size_t n_variants = variants.size();
  std::vector<std::vector<double>> samples(n_variants);
  for (const quant::KernelTuning& v : variants) pass(v);  // warm-up: page tables, caches
  // Rounds alternate the variants, so that drift on a shared machine hits them alike.
  for (int round = 0; round < kMaxRounds; ++round) {
    if (round >= kMinRounds && total.seconds() > kBudgetSeconds) break;
    for (size_t i = 0; i < n_variants; ++i) samples[i].push_back(pass(variants[i]));
  }
  size_t best = 0;
  for (size_t i = 0; i < n_variants; ++i) {
    report.timings.push_back({quant::to_string(variants[i]), median(samples[i])});
    if (report.timings[i].seconds < report.timings[best].seconds) best = i;
  }
  report.chosen = variants[best];
  quant::set_kernel_tuning(report.chosen);
  report.source = "timed";
  write_cache(report.cache_path, report.cache_key, quant::to_string(report.chosen));
  report.seconds = total.seconds();
  return report;
}

}  // namespace tokenmill::ops
