// Hugging Face models converted by tokenmill convert, run by tokenmill, against
// transformers: every position's logits, greedy continuations and the tokenizer's ids.
// The models are small random-weight ones of each architecture, written with their
// reference outputs by tools/make_hf_models.py (tests/fixtures/hf_models/<name>/).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convert/convert_model.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::convert {
namespace {

using nlohmann::json;

// Largest |ours - transformers| over a position's logits, relative to that position's
// largest |logit|. F32 weights; the differences come from the F16 KV cache and the
// order of float sums (measured 0.8e-3 to 3.5e-3). Leaving out Llama 3's rope scaling
// or Qwen 3's q/k norms moves these models' logits by 5 to 17, several times their top.
constexpr double kMaxRelativeError = 5e-3;
// Gemma's post-norms (scales near 5 in these fixtures) amplify the F16 cache's rounding:
// llama.cpp with its default F16 cache lands at 1.9e-2 (gemma2) and 2.2e-2 (gemma3) on
// the same files, and at 5e-3 with an F32 cache (tools/check_convert_llamacpp.py).
// LongRoPE's attention factor (scores doubled in phi3_longrope) does too: llama.cpp is at
// 8.1e-3 with an F16 cache and 7.7e-6 with an F32 one; dropping the factor or the long
// factors moves the logits by 12 and 19. So do the granite fixture's multipliers (residual
// 1.5, logits doubled): llama.cpp is at 5.6e-3 with an F16 cache and 1.8e-5 with an F32
// one; dropping any multiplier moves the logits by 12 to 21. So do gpt-oss's sinks and
// YaRN factor (scores times 1.81): transformers itself moves by 8.4e-3 when its keys and
// values are rounded to F16 as the cache stores them.
constexpr double kMaxRelativeErrorAmplified = 3e-2;
// Two tokens whose logits are closer than this (relative to the largest |logit|) are a
// near-tie that summation order may decide either way.
constexpr double kNearTie = 5e-3;
// Mixture of experts: where a token's k-th and (k+1)-th router probabilities in some
// layer are closer than this, rounding may route it to the other expert, which changes
// its logits by tenths; such positions are excused from the logit tolerance.
constexpr double kRouterNearTie = 2e-3;

std::string model_dir(const std::string& name) { return std::string(TOKENMILL_FIXTURES_DIR) + "/hf_models/" + name; }

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path << " (tools/make_hf_models.py writes it)";
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// The corpus's escapes: \n, \r, \t and \\ (any other backslash is itself).
std::vector<std::string> read_corpus() {
  std::ifstream in(std::string(TOKENMILL_FIXTURES_DIR) + "/tokenizer/corpus.txt");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      const char next = i + 1 < line.size() ? line[i + 1] : '\0';
      if (line[i] == '\\' && (next == 'n' || next == 'r' || next == 't' || next == '\\')) {
        text += next == 'n' ? '\n' : next == 'r' ? '\r' : next == 't' ? '\t' : '\\';
        ++i;
      } else {
        text += line[i];
      }
    }
    lines.push_back(text);
  }
  return lines;
}

std::vector<int32_t> top_k(const float* logits, int32_t n, int k) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  ids.resize(static_cast<size_t>(k));
  return ids;
}

// Feeds tokens one position at a time and returns each position's logits.
class Runner {
 public:
  explicit Runner(model::Model& model) : model_(model), kv_(model.kv_shape(32)), table_(32) {
    std::iota(table_.begin(), table_.end(), 0);
  }
  std::vector<float> step(int32_t token) {
    model::Batch batch;
    batch.add_sequence({token}, pos_++, table_, true);
    std::vector<float> logits;
    const Status s = model_.forward(batch, kv_, logits);
    EXPECT_TRUE(s.ok()) << s.message();
    return logits;
  }

 private:
  model::Model& model_;
  ops::KvStorage kv_;
  std::vector<int32_t> table_;
  int32_t pos_ = 0;
};

class HfReference : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    name_ = GetParam();
    dir_ = model_dir(name_);
    reference_ = read_json(dir_ + "/reference.json");
    gguf_path_ = (std::filesystem::temp_directory_path() /
                  ("tm_hf_" + name_ + "_" + std::to_string(getpid()) + ".gguf"))
                     .string();
    ConvertOptions options;
    options.outtype = *quant::find_mix("F32");
    auto converted = convert_hf_model(dir_, gguf_path_, options);
    ASSERT_TRUE(converted.ok()) << converted.status().message();
  }
  void TearDown() override { std::filesystem::remove(gguf_path_); }

  std::string name_, dir_, gguf_path_;
  json reference_;
};

TEST_P(HfReference, LogitsAtEveryPositionMatchTransformers) {
  auto model = model::load_model(gguf_path_, model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const int32_t n_vocab = reference_["n_vocab"].get<int32_t>();
  ASSERT_EQ((*model)->config().n_vocab, n_vocab);
  const std::vector<float> expected = read_floats(dir_ + "/" + reference_["logits_file"].get<std::string>());
  size_t offset = 0;
  double worst = 0;
  int n_positions = 0, n_excused = 0;
  const std::vector<double> router_gaps = reference_.value("router_gap_per_position", std::vector<double>());
  for (const json& p : reference_["prompts"]) {
    Runner runner(**model);
    for (int32_t token : p.get<std::vector<int32_t>>()) {
      ASSERT_LE(offset + static_cast<size_t>(n_vocab), expected.size());
      const float* theirs = &expected[offset];
      offset += static_cast<size_t>(n_vocab);
      const std::vector<float> ours = runner.step(token);
      float scale = 0;
      for (int32_t i = 0; i < n_vocab; ++i) scale = std::max(scale, std::abs(theirs[i]));
      double error = 0;
      for (int32_t i = 0; i < n_vocab; ++i) error = std::max(error, static_cast<double>(std::abs(ours[i] - theirs[i])));
      const bool router_tie = static_cast<size_t>(n_positions) < router_gaps.size() &&
                              router_gaps[static_cast<size_t>(n_positions)] < kRouterNearTie;
      if (router_tie && error / scale >= kMaxRelativeError) {
        ++n_excused;
        ++n_positions;
        continue;
      }
      worst = std::max(worst, error / scale);
      // The same top-10, except where the 10th and 11th are a near-tie.
      const std::vector<int32_t> their_top = top_k(theirs, n_vocab, 11);
      std::vector<int32_t> our_top = top_k(ours.data(), n_vocab, 10);
      if (theirs[their_top[9]] - theirs[their_top[10]] > kNearTie * scale) {
        std::vector<int32_t> a(their_top.begin(), their_top.begin() + 10);
        std::sort(a.begin(), a.end());
        std::sort(our_top.begin(), our_top.end());
        EXPECT_EQ(a, our_top) << name_ << ": top-10 differs at position " << n_positions;
      }
      ++n_positions;
    }
  }
  EXPECT_EQ(offset, expected.size());
  std::printf("%s: %d positions, max |logit error| / max |logit| = %.2e (%d positions at a router near-tie excused)\n",
              name_.c_str(), n_positions, worst, n_excused);
  EXPECT_LE(n_excused, 2) << name_;
  const bool amplified = name_.starts_with("gemma") || name_ == "phi3_longrope" || name_ == "granite" ||
                         name_ == "gpt_oss";
  EXPECT_LT(worst, amplified ? kMaxRelativeErrorAmplified : kMaxRelativeError) << name_;
}

TEST_P(HfReference, GreedyContinuationsMatchTransformersUpToNearTies) {
  auto model = model::load_model(gguf_path_, model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const int32_t n_vocab = reference_["n_vocab"].get<int32_t>();
  int n_same = 0, n_total = 0;
  for (size_t i = 0; i < reference_["prompts"].size(); ++i) {
    const auto prompt = reference_["prompts"][i].get<std::vector<int32_t>>();
    const auto greedy = reference_["greedy"][i].get<std::vector<int32_t>>();
    const auto margin = reference_["greedy_margin"][i].get<std::vector<double>>();
    Runner runner(**model);
    std::vector<float> logits;
    for (int32_t token : prompt) logits = runner.step(token);
    for (size_t t = 0; t < greedy.size(); ++t) {
      const int32_t ours = top_k(logits.data(), n_vocab, 1)[0];
      ++n_total;
      if (ours != greedy[t]) {
        // Only a near-tie in transformers' own logits may go the other way; after it the
        // two continuations are different texts and are not compared further.
        float scale = 0;
        for (float v : logits) scale = std::max(scale, std::abs(v));
        EXPECT_LT(margin[t], kNearTie * scale * 4) << name_ << " prompt " << i << " step " << t << ": ours " << ours
                                                   << ", transformers " << greedy[t];
        break;
      }
      ++n_same;
      logits = runner.step(ours);
    }
  }
  std::printf("%s: %d of %d greedy tokens identical\n", name_.c_str(), n_same, n_total);
  EXPECT_GT(n_same, n_total / 2) << name_;
}

// Prompts batched into one forward pass get, bit for bit, the logits each gets alone: for
// mixture-of-experts models too, where an expert multiplies the rows of every token routed
// to it together.
TEST_P(HfReference, BatchedPromptsGetTheLogitsEachGetsAlone) {
  auto model = model::load_model(gguf_path_, model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const auto prompts = reference_["prompts"].get<std::vector<std::vector<int32_t>>>();
  constexpr int32_t kBlocksPerPrompt = 4;  // 64 positions
  ops::KvStorage kv((*model)->kv_shape(kBlocksPerPrompt * static_cast<int32_t>(prompts.size())));
  auto table = [&](size_t i) {
    std::vector<int32_t> t(kBlocksPerPrompt);
    std::iota(t.begin(), t.end(), static_cast<int32_t>(i) * kBlocksPerPrompt);
    return t;
  };
  model::Batch together;
  for (size_t i = 0; i < prompts.size(); ++i) together.add_sequence(prompts[i], 0, table(i), true);
  std::vector<float> batched;
  ASSERT_TRUE((*model)->forward(together, kv, batched).ok());
  const size_t n_vocab = batched.size() / prompts.size();
  for (size_t i = 0; i < prompts.size(); ++i) {
    model::Batch alone;
    alone.add_sequence(prompts[i], 0, table(i), true);
    std::vector<float> logits;
    ASSERT_TRUE((*model)->forward(alone, kv, logits).ok());
    ASSERT_EQ(logits.size(), n_vocab);
    EXPECT_TRUE(std::equal(logits.begin(), logits.end(), batched.begin() + static_cast<std::ptrdiff_t>(i * n_vocab)))
        << name_ << ": prompt " << i;
  }
}

TEST_P(HfReference, TokenizerGivesTheIdsOfHuggingFaceTokenizers) {
  auto file = gguf::File::open(gguf_path_);
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tokenizer = tokenizer::Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const json ids = read_json(dir_ + "/tokenizer_ids.json");
  const std::vector<std::string> corpus = read_corpus();
  ASSERT_EQ(corpus.size(), ids["ids"].size());
  // Hugging Face matches special-token text inside any text; "ids_specials_as_text"
  // holds the lines that differ when it is read as plain text instead. SentencePiece
  // models differ there: user-defined pieces (<start_of_turn>) are always matched, as
  // SentencePiece and llama.cpp do, and "ids_sentencepiece" holds SentencePiece's own ids
  // for the lines where it and Hugging Face differ.
  int n_match = 0, n_checked = 0, n_reported = 0;
  auto check = [&](size_t i, const json& expected_json, bool parse_special) {
    const auto expected = expected_json.get<std::vector<int32_t>>();
    const auto actual = (*tokenizer)->encode(corpus[i], /*add_special=*/false, parse_special);
    ++n_checked;
    if (actual == expected) {
      ++n_match;
    } else if (n_reported++ < 3) {
      ADD_FAILURE() << name_ << ": line " << i + 1 << (parse_special ? "" : " (specials as text) ")
                    << json(corpus[i]).dump() << "\n  expected " << json(expected).dump() << "\n  actual   "
                    << json(actual).dump();
    }
  };
  for (size_t i = 0; i < corpus.size(); ++i) check(i, ids["ids"][i], /*parse_special=*/true);
  // One exception, as llama.cpp makes it: an end-of-turn marker is a control token
  // (tokenizer/vocab.h finish_vocab), matched only with parse_special, although Gemma's
  // SentencePiece model lists <end_of_turn> as user-defined.
  const bool sentencepiece = ids.contains("ids_sentencepiece");
  const char* as_text = sentencepiece ? "ids_sentencepiece" : "ids_specials_as_text";
  int n_end_of_turn = 0;
  for (const auto& [line, expected] : ids[as_text].items()) {
    if (sentencepiece && corpus[std::stoul(line)].find("<end_of_turn>") != std::string::npos) {
      ++n_end_of_turn;
      continue;
    }
    check(std::stoul(line), expected, /*parse_special=*/false);
  }
  if (sentencepiece) std::printf("%s: %d lines with <end_of_turn> not compared as plain text\n", name_.c_str(), n_end_of_turn);
  EXPECT_GT(ids[as_text].size(), 0u);
  EXPECT_EQ(n_match, n_checked) << name_;
  for (const json& c : ids["special_texts"]) {
    const auto actual = (*tokenizer)->encode(c["text"].get<std::string>(), false, /*parse_special=*/true);
    EXPECT_EQ(actual, c["ids"].get<std::vector<int32_t>>()) << name_ << ": " << c["text"];
  }
}

// LongRoPE's factor set is chosen at load by the longest sequence the model will run:
// the short factors up to the original context (16 in the fixture), the long ones past it.
TEST(LongRope, LongFactorsOnlyWhenSequencesMayPassTheOriginalContext) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tm_hf_longrope_" + std::to_string(getpid()) + ".gguf")).string();
  ConvertOptions options;
  options.outtype = *quant::find_mix("F32");
  ASSERT_TRUE(convert_hf_model(model_dir("phi3_longrope"), path, options).ok());
  auto file = gguf::File::open(path);
  ASSERT_TRUE(file.ok());
  const auto* long_factors = file->find_tensor("rope_factors_long.weight");
  ASSERT_NE(long_factors, nullptr);
  for (const auto& [max_context, want_long] : std::vector<std::pair<int32_t, bool>>{{16, false}, {17, true}, {0, true}}) {
    model::LoadOptions load;
    load.max_context = max_context;
    auto model = model::load_model(path, load);
    ASSERT_TRUE(model.ok()) << model.status().message();
    EXPECT_EQ((*model)->config().rope_long_factors, want_long) << "max_context " << max_context;
    EXPECT_EQ((*model)->config().rope_original_context, 16);
    ASSERT_NE((*model)->weights().rope_freqs, nullptr);
    const float first_long = 1.0f, last_long = 23.5f, last_short = 1.3f;  // LONGROPE_LONG / _SHORT
    EXPECT_FLOAT_EQ((*model)->weights().rope_freqs[0], first_long);
    EXPECT_FLOAT_EQ((*model)->weights().rope_freqs[15], want_long ? last_long : last_short);
  }
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Architectures, HfReference, ::testing::Values("llama3", "mistral", "mistral_swa", "qwen2", "qwen3", "qwen3moe", "mixtral", "gemma2", "gemma3", "phi3", "phi3_longrope", "phi3_partial", "smollm3", "olmo2", "granite", "qwen3_yarn", "gpt_oss"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tokenmill::convert
