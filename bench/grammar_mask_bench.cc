// Per-token whole-vocabulary mask time of tokenmill's grammars, measured the way
// bench/grammar_engines.py measures XGrammar and llguidance: over the schema corpus, on
// a model's vocabulary, along seeded random walks of allowed tokens, the time to fill the
// bitmask of every token allowed next (engine/grammar_token_masks.h).
//
//   bench/grammar_mask_bench --model models/gemma-3-270m-q4_k_m.gguf
//       --corpus tests/fixtures/schema_corpus.jsonl [--walks 60] [--walk-tokens 48] [--seed 3]
//
// Prints one JSON object: the schemas compiled, each walk's compile time, and the mask
// times in microseconds (the first mask of each walk apart, as the other engines' first
// mask is left out of their figures too).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar_token_masks.h"
#include "engine/json_schema.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace {

using tokenmill::engine::GrammarMatcher;
using tokenmill::engine::GrammarTokenMasks;
using tokenmill::engine::JsonSchema;
using tokenmill::engine::TokenTrie;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

int run(int argc, char** argv) {
  std::string model, corpus_path;
  int walks = 60, walk_tokens = 48;
  unsigned seed = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model") model = value;
    else if (flag == "--corpus") corpus_path = value;
    else if (flag == "--walks") walks = std::atoi(value.c_str());
    else if (flag == "--walk-tokens") walk_tokens = std::atoi(value.c_str());
    else if (flag == "--seed") seed = static_cast<unsigned>(std::atoi(value.c_str()));
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (model.empty() || corpus_path.empty()) {
    std::fprintf(stderr, "usage: grammar_mask_bench --model GGUF --corpus JSONL [--walks N] [--walk-tokens N] [--seed S]\n");
    return 2;
  }
  auto file = tokenmill::gguf::File::open(model);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().to_string().c_str());
    return 1;
  }
  auto tokenizer = tokenmill::tokenizer::Tokenizer::from_gguf(*file);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().to_string().c_str());
    return 1;
  }
  std::vector<std::string> pieces;
  for (int32_t id = 0; id < (*tokenizer)->n_vocab(); ++id) pieces.push_back((*tokenizer)->token_piece(id, false));
  const Clock::time_point trie_start = Clock::now();
  auto trie = std::make_shared<const TokenTrie>(pieces);
  const double trie_us = micros_since(trie_start);

  std::ifstream in(corpus_path);
  std::vector<json> corpus;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) corpus.push_back(json::parse(line));
  }
  std::mt19937 rng(seed);
  json out = {{"vocabulary", pieces.size()}, {"trie_nodes", trie->nodes().size()}, {"trie_us", trie_us}};
  std::vector<double> masks_us, first_us, compile_us;
  int compiled_count = 0;
  std::vector<uint32_t> bits(GrammarTokenMasks::words(trie->n_vocab()));
  for (size_t k = 0; k < corpus.size(); ++k) {
    const Clock::time_point compile_start = Clock::now();
    auto compiled = JsonSchema::compile(corpus[k]["schema"]);
    if (!compiled.ok()) continue;
    ++compiled_count;
    if (static_cast<int>(k) >= walks) continue;
    compile_us.push_back(micros_since(compile_start));
    GrammarTokenMasks masks((*compiled)->grammar(), trie);
    GrammarMatcher matcher((*compiled)->grammar());
    for (int t = 0; t < walk_tokens; ++t) {
      const Clock::time_point start = Clock::now();
      masks.fill(matcher, bits);
      (t == 0 ? first_us : masks_us).push_back(micros_since(start));
      std::vector<int32_t> allowed;
      for (size_t w = 0; w < bits.size(); ++w) {
        for (uint32_t word = bits[w]; word != 0; word &= word - 1) {
          allowed.push_back(static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(word))));
        }
      }
      if (allowed.empty() || matcher.complete()) break;
      matcher.advance(pieces[static_cast<size_t>(allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)])]);
    }
  }
  out["compiled"] = compiled_count;
  out["schemas"] = corpus.size();
  out["compile_us"] = compile_us;
  out["first_mask_us"] = first_us;
  out["mask_us"] = masks_us;
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
