// tokenmill bench: prompt-processing (pp) and generation (tg) speed, like llama-bench.
// pp N: one forward pass over N prompt tokens. tg N: N single-token decode steps after
// a one-token prompt. With --parallel N, tg runs N sequences side by side, one forward
// pass per step over all their next tokens (the serving engine's batched decode), and
// reports their aggregate tok/s. Token ids are random (speed does not depend on them).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cpu_features.h"
#include "base/large_buffer.h"
#include "base/timer.h"
#include "cli/bench_spec.h"
#include "cli/load_options.h"
#include "cli/commands.h"
#include "cli/kv_memory_check.h"
#include "cli/kv_type_option.h"
#include "cli/model_path.h"
#include "cli/spec_options.h"
#include "model/model.h"
#include "model/weights.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/kernel_tuner.h"
#include "quant/kernels/dispatch.h"
#include "ops/kv_storage.h"

namespace tokenmill::cli {

namespace {

struct BenchOptions {
  std::string model = "default";
  int32_t n_prompt = 512;
  int32_t n_gen = 128;
  int32_t n_parallel = 1;  // sequences decoded together in tg
  int32_t n_depth = 0;     // tokens already in each sequence's cache before tg
  int n_threads = 0;
  int repetitions = 3;
  bool json = false;
  bool roofline = false;
  bool profile = false;  // time every back-end operation of the timed runs
  bool tune = false;     // time the kernel variants now and print the choice (--tune)
  bool no_tune = false;  // the default kernel variants, no tuning (--no-tune)
  ops::KvType kv_type = ops::KvType::kF16;
  // --spec ngram: the speculative comparison (bench_spec.h) instead of pp / tg; off here
  // unless asked for (register_bench).
  engine::SpeculativeConfig speculative;
  std::string draft_model;
};

struct Series {
  double mean = 0, stddev = 0;
  std::vector<double> samples;
};

Series summarize(std::vector<double> samples) {
  Series s;
  s.samples = samples;
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
  double var = 0;
  for (double v : samples) var += (v - s.mean) * (v - s.mean);
  s.stddev = samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;
  return s;
}

// Read bandwidth: sums a 1 GiB buffer with every thread, best of 3. The buffer sits on
// huge pages where the kernel gives them, as the repacked weights do (base/large_buffer.h).
double measure_read_bandwidth_gbs(ThreadPool& pool) {
  const size_t n = (1ull << 30) / sizeof(uint64_t);
  const std::shared_ptr<uint8_t[]> memory = allocate_large_buffer(n * sizeof(uint64_t));
  uint64_t* buffer = reinterpret_cast<uint64_t*>(memory.get());
  std::fill(buffer, buffer + n, uint64_t{1});
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<uint64_t> partial(pool.n_threads(), 0);
    Timer timer;
    pool.parallel_for(n, [&](int t, size_t begin, size_t end) {
      // 16-byte vector loads, 64 bytes a step in four chains: word-sized loads left about
      // half the bandwidth unused (the loop was bound by instructions, not by memory).
      using Pair = uint64_t __attribute__((vector_size(16)));
      Pair acc[4] = {};
      size_t i = begin;
      for (; i + 8 <= end; i += 8) {
        for (int k = 0; k < 4; ++k) {
          Pair v;
          std::memcpy(&v, buffer + i + 2 * k, sizeof v);
          acc[k] += v;
        }
      }
      uint64_t sum = 0;
      for (; i < end; ++i) sum += buffer[i];
      for (const Pair& a : acc) sum += a[0] + a[1];
      partial[t] = sum;
    });
    const double seconds = timer.seconds();
    if (std::accumulate(partial.begin(), partial.end(), uint64_t{0}) != n) std::fprintf(stderr, "bandwidth check failed\n");
    best = std::max(best, (n * sizeof(uint64_t)) / seconds / 1e9);
  }
  return best;
}

// Round trip of a cache line between the pool's first two threads (one ping-pong on an
// atomic), median of 5 runs of 20,000. Every parallel operation of a forward pass pays a
// few of these: on a virtual machine whose two CPUs land far apart (measured here: ~80 ns
// near, ~370 ns far), batched decode slows down while single-stream decode (bound by the
// memory, which the far placement reaches faster) speeds up. 0 with one thread.
double measure_round_trip_ns(ThreadPool& pool) {
  if (pool.n_threads() < 2) return 0;
  constexpr int kRounds = 20000;
  std::vector<double> runs;
  for (int rep = 0; rep < 5; ++rep) {
    alignas(64) std::atomic<int> ball{0};
    double seconds = 0;
    pool.run_on_all([&](int part) {
      if (part > 1) return;
      if (part == 1) {
        for (int i = 0; i < kRounds; ++i) {
          while (ball.load(std::memory_order_acquire) != 2 * i + 1) {}
          ball.store(2 * i + 2, std::memory_order_release);
        }
        return;
      }
      Timer timer;
      for (int i = 0; i < kRounds; ++i) {
        ball.store(2 * i + 1, std::memory_order_release);
        while (ball.load(std::memory_order_acquire) != 2 * i + 2) {}
      }
      seconds = timer.seconds();
    });
    runs.push_back(seconds / kRounds * 1e9);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// Operations by time per forward pass, largest first.
std::vector<std::pair<std::string, ops::OpTime>> by_time(const ops::OpTimes& times) {
  std::vector<std::pair<std::string, ops::OpTime>> rows(times.times().begin(), times.times().end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  return rows;
}

// Matmuls also say how fast they read their weights (GB/s) and, with a measured read
// bandwidth (--roofline), what share of it that is.
void print_profile(const char* test, const ops::OpTimes& times, int64_t n_passes, double bandwidth_gbs) {
  const double total = times.total_seconds();
  std::printf("  profile of %s, per forward pass (%.3f ms in back-end operations):\n", test, 1e3 * total / n_passes);
  for (const auto& [label, t] : by_time(times)) {
    std::printf("    %-34s %6.1f calls  %8.3f ms  %5.1f%%", label.c_str(), static_cast<double>(t.calls) / n_passes,
                1e3 * t.seconds / n_passes, 100.0 * t.seconds / total);
    if (t.weight_bytes > 0 && t.seconds > 0) {
      const double gbs = static_cast<double>(t.weight_bytes) / t.seconds / 1e9;
      std::printf("  %5.1f GB/s", gbs);
      if (bandwidth_gbs > 0) std::printf(" (%3.0f%% of roofline)", 100.0 * gbs / bandwidth_gbs);
    }
    std::printf("\n");
  }
}

nlohmann::json profile_json(const ops::OpTimes& times, int64_t n_passes) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [label, t] : by_time(times)) {
    nlohmann::json op = {{"op", label},
                         {"calls_per_pass", static_cast<double>(t.calls) / n_passes},
                         {"ms_per_pass", 1e3 * t.seconds / n_passes}};
    if (t.weight_bytes > 0 && t.seconds > 0) op["weight_gbs"] = static_cast<double>(t.weight_bytes) / t.seconds / 1e9;
    ops.push_back(op);
  }
  return ops;
}

int run_bench(const BenchOptions& o) {
  if (o.speculative.mode != engine::SpecMode::kOff || !o.draft_model.empty()) {
    engine::SpeculativeConfig speculative = o.speculative;
    if (!o.draft_model.empty()) speculative.mode = engine::SpecMode::kDraft;  // off is only bench's default
    return run_spec_bench({.model = o.model, .n_threads = o.n_threads, .repetitions = o.repetitions,
                           .n_gen = o.n_gen > 0 ? o.n_gen : 128, .json = o.json, .speculative = speculative,
                           .draft_model = o.draft_model});
  }
  auto path = resolve_model_path(o.model);
  if (!path.ok()) {
    std::fprintf(stderr, "error: %s\n", path.status().message().c_str());
    return 1;
  }
  model::LoadOptions load = load_options(o.n_threads);
  if (o.tune || o.no_tune) load.tune = false;  // --tune times below, after loading
  auto loaded = model::load_model(*path, load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "error: %s\n", loaded.status().to_string().c_str());
    return 1;
  }
  model::Model& m = **loaded;
  std::string tuning_summary;
  if (o.tune) {
    const ops::TuningReport report =
        ops::tune_kernels(m.backend(), model::decode_matrices(m.weights()), /*force_timing=*/true);
    tuning_summary = report.summary();
    if (!o.json) std::printf("%s\n  cached as %s in %s\n", tuning_summary.c_str(), report.cache_key.c_str(), report.cache_path.c_str());
  }
  const ops::KvType kv_type = o.kv_type;
  if (Status s = m.check_kv_type(kv_type); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  const int32_t n_ctx = std::max(o.n_prompt, o.n_depth + o.n_gen + 1);
  const int32_t n_blocks = (n_ctx + 15) / 16;
  const ops::KvShape kv_shape = m.kv_shape(n_blocks * o.n_parallel, 16, kv_type);
  if (Status s = check_kv_memory(kv_shape.total_bytes(), "-p, -d, -n or --parallel"); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  ops::KvStorage kv(kv_shape);
  // Sequence s owns blocks s * n_blocks .. (s + 1) * n_blocks - 1.
  std::vector<std::vector<int32_t>> tables(o.n_parallel, std::vector<int32_t>(n_blocks));
  for (int32_t s = 0; s < o.n_parallel; ++s) std::iota(tables[s].begin(), tables[s].end(), s * n_blocks);
  const std::vector<int32_t>& table = tables[0];
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(0, m.config().n_vocab - 1);
  std::vector<float> logits;

  // Each timed run; with `times`, the back end's operations in its timed part are added.
  auto time_pp = [&](ops::OpTimes* times) {
    std::vector<int32_t> prompt(o.n_prompt);
    for (int32_t& t : prompt) t = token(rng);
    model::Batch batch;
    batch.add_sequence(prompt, 0, table, true);
    m.set_op_times(times);
    Timer timer;
    Status s = m.forward(batch, kv, logits);
    const double seconds = timer.seconds();
    m.set_op_times(nullptr);
    if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
    return o.n_prompt / seconds;
  };
  // Mixture of experts: expert bytes the timed tg steps read, for the report.
  double tg_expert_bytes = 0;
  int64_t tg_steps = 0;
  auto time_tg = [&](ops::OpTimes* times) {
    // Each sequence's first n_depth + 1 tokens, in one untimed pass.
    model::Batch first;
    for (const auto& t : tables) {
      std::vector<int32_t> prefix(o.n_depth + 1);
      for (int32_t& id : prefix) id = token(rng);
      first.add_sequence(prefix, 0, t, true);
    }
    (void)m.forward(first, kv, logits);
    m.set_op_times(times);
    Timer timer;
    for (int32_t i = 0; i < o.n_gen; ++i) {
      model::Batch step;
      for (const auto& t : tables) step.add_sequence({token(rng)}, o.n_depth + i + 1, t, true);
      (void)m.forward(step, kv, logits);
      tg_expert_bytes += m.expert_bytes_last_forward();
      ++tg_steps;
    }
    const double seconds = timer.seconds();
    m.set_op_times(nullptr);
    return static_cast<double>(o.n_gen) * o.n_parallel / seconds;
  };

  // One untimed warm-up of each, then the repetitions (profiled with --profile).
  std::vector<double> pp, tg;
  ops::OpTimes pp_times, tg_times;
  if (o.n_prompt > 0) time_pp(nullptr);
  if (o.n_gen > 0) time_tg(nullptr);
  for (int r = 0; r < o.repetitions; ++r) {
    if (o.n_prompt > 0) pp.push_back(time_pp(o.profile ? &pp_times : nullptr));
    if (o.n_gen > 0) tg.push_back(time_tg(o.profile ? &tg_times : nullptr));
  }

  const double weight_bytes = static_cast<double>(model::weight_bytes_per_token(m.weights()));
  double bandwidth = 0, round_trip_ns = 0;
  if (o.roofline) {
    auto* cpu = dynamic_cast<ops::CpuBackend*>(&m.backend());
    if (cpu) {
      bandwidth = measure_read_bandwidth_gbs(cpu->pool());
      round_trip_ns = measure_round_trip_ns(cpu->pool());
      if (!o.json) {
        std::printf("cpu %s, kernels %s (cpu features: %s)\n", cpu_brand().c_str(), cpu_features().kernel_set(),
                    cpu_features().to_string().c_str());
      }
      if (!o.json && round_trip_ns > 0) std::printf("thread round trip %.0f ns\n", round_trip_ns);
    }
  }
  const int n_threads = m.backend().n_threads();
  nlohmann::json results = nlohmann::json::array();
  auto emit = [&](const char* test, int32_t n_prompt, int32_t n_gen, const std::vector<double>& samples,
                  const ops::OpTimes& times) {
    if (samples.empty()) return;
    Series s = summarize(samples);
    nlohmann::json r = {{"model_filename", *path},
                        {"model_type", m.config().name},
                        {"model_size", m.file().file_size()},
                        {"n_threads", n_threads},
                        {"n_prompt", n_prompt},
                        {"n_gen", n_gen},
                        {"n_parallel", n_gen > 0 ? o.n_parallel : 1},
                        {"n_depth", n_gen > 0 ? o.n_depth : 0},
                        {"avg_ts", s.mean},
                        {"stddev_ts", s.stddev},
                        {"samples_ts", s.samples},
                        {"cpu_features", cpu_features().to_string()},
                        {"kernel_tuning", quant::to_string(quant::kernel_tuning())},
                        {"cpu_brand", cpu_brand()},
                        {"kernel_set", cpu_features().kernel_set()},
                        {"test", test},
                        {"kv_type", ops::kv_type_name(kv_type)},
                        {"weight_bytes_per_token", weight_bytes}};
    if (round_trip_ns > 0) r["thread_round_trip_ns"] = round_trip_ns;
    const bool single_stream_decode = n_gen > 0 && o.n_parallel == 1;
    if (single_stream_decode) {
      r["weights_gbs"] = s.mean * weight_bytes / 1e9;
      if (bandwidth > 0) {
        r["read_bandwidth_gbs"] = bandwidth;
        r["roofline_ts"] = bandwidth * 1e9 / weight_bytes;
        r["roofline_fraction"] = s.mean / (bandwidth * 1e9 / weight_bytes);
      }
    }
    // Forward passes timed: one per pp repetition, n_gen per tg repetition.
    const int64_t n_passes = static_cast<int64_t>(samples.size()) * (n_gen > 0 ? n_gen : 1);
    if (o.profile) r["profile"] = profile_json(times, n_passes);
    results.push_back(r);
    if (!o.json) {
      std::printf("%-28s %-8s %3d threads  %8.2f ± %6.2f tok/s", m.config().name.c_str(), test, n_threads, s.mean,
                  s.stddev);
      if (single_stream_decode) {
        std::printf("  %6.1f GB/s of weights", s.mean * weight_bytes / 1e9);
        if (bandwidth > 0) {
          std::printf("  (roofline %.1f tok/s at %.1f GB/s measured: %.0f%%)", bandwidth * 1e9 / weight_bytes, bandwidth,
                      100.0 * s.mean / (bandwidth * 1e9 / weight_bytes));
        }
      }
      std::printf("\n");
      if (o.profile) print_profile(test, times, n_passes, bandwidth);
    }
  };
  emit(("pp" + std::to_string(o.n_prompt)).c_str(), o.n_prompt, 0, pp, pp_times);
  std::string tg_name = "tg" + std::to_string(o.n_gen);
  if (o.n_depth > 0) tg_name += " @ d" + std::to_string(o.n_depth);
  if (o.n_parallel > 1) tg_name += " x" + std::to_string(o.n_parallel);
  if (kv_type != ops::KvType::kF16) tg_name += std::string(" kv ") + ops::kv_type_name(kv_type);
  emit(tg_name.c_str(), 0, o.n_gen, tg, tg_times);
  if (m.config().n_expert > 0 && tg_steps > 0) {
    // Each chosen expert is read once per step: compare with n_parallel tokens each
    // reading its own n_expert_used experts, and with every expert (routers included).
    double per_expert = 0, routers = 0;  // one expert of every layer (types differ between layers)
    for (const model::LayerWeights& l : m.weights().layers) {
      per_expert += static_cast<double>(l.ffn_gate_exps[0].n_bytes() + l.ffn_up_exps[0].n_bytes() +
                                        l.ffn_down_exps[0].n_bytes());
      routers += static_cast<double>(l.ffn_gate_inp.n_bytes());
    }
    const double per_step = tg_expert_bytes / static_cast<double>(tg_steps);
    const double bound = routers + per_expert * m.config().n_expert_used * o.n_parallel;
    const double all = routers + per_expert * m.config().n_expert;
    if (o.json) {
      results.back()["expert_bytes_per_step"] = per_step;
      results.back()["expert_bytes_per_step_unshared"] = bound;
      results.back()["expert_bytes_all"] = all;
    } else {
      std::printf("experts read per tg step: %.1f MiB (%.2f of the %.1f MiB %d tokens x %d experts would read alone; "
                  "all %d experts %.1f MiB)\n",
                  per_step / 1048576.0, per_step / bound, bound / 1048576.0, o.n_parallel, m.config().n_expert_used,
                  m.config().n_expert, all / 1048576.0);
    }
  }
  if (o.json) std::printf("%s\n", results.dump(2).c_str());
  return 0;
}

}  // namespace

void register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prompt processing (pp) and generation (tg) speed");
  cmd->add_option("-m,--model", o->model, "GGUF file, or 'default'")->capture_default_str();
  cmd->add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens per pp test (0 skips)")->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("-n,--n-gen", o->n_gen, "Generated tokens per tg test (0 skips)")->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--parallel", o->n_parallel, "Sequences decoded together in tg (aggregate tok/s)")
      ->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("-d,--depth", o->n_depth, "Tokens already in each sequence's cache before tg")
      ->capture_default_str()->check(CLI::Range(0, 65536));
  add_kv_type_option(cmd, o->kv_type, "KV cache type for tg: f16 or q8_0");
  cmd->add_option("-t,--threads", o->n_threads, "Threads (default: all CPUs)")->check(CLI::Range(0, 1024));
  cmd->add_option("-r,--repetitions", o->repetitions, "Repetitions of each test")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", o->json, "Print results as JSON (llama-bench field names)");
  cmd->add_flag("--roofline", o->roofline,
                "Measure memory read bandwidth and the threads' round trip; report the decode roofline");
  cmd->add_flag("--tune", o->tune,
                "Time the kernel variants on this model now, print each one's time and the choice, and cache it");
  cmd->add_flag("--no-tune", o->no_tune, "Use the default kernel variants (no load-time tuning)");
  cmd->add_flag("--profile", o->profile, "Time each back-end operation of the timed runs and print where a pass goes");
  o->speculative.mode = engine::SpecMode::kOff;
  add_spec_options(cmd, o->speculative, o->draft_model);
  cmd->callback([o] { exit_code() = run_bench(*o); });
}

}  // namespace tokenmill::cli
