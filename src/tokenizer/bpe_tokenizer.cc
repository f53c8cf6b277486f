#include "tokenizer/bpe_tokenizer.h"

#include "tokenizer/symbol_merge.h"
#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(const Vocab& vocab) {
  Result<PreTokenizerConfig> config = tokenizer::pretokenizer_config(vocab.pre);
  if (!config.ok()) return config.status();
  Result<std::unique_ptr<PreTokenizer>> pre = PreTokenizer::create(*config);
  if (!pre.ok()) return pre.status();
  return std::unique_ptr<BpeTokenizer>(
      new BpeTokenizer(vocab, std::move(config).value(), std::move(pre).value()));
}

BpeTokenizer::BpeTokenizer(const Vocab& vocab, PreTokenizerConfig config,
                           std::unique_ptr<PreTokenizer> pre)
    : vocab_(&vocab), config_(std::move(config)), pre_(std::move(pre)) {
  ranks_.reserve(vocab.merges.size());
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& merge = vocab.merges[i];
    // The separator is the first space after the first byte (a merge's left side may
    // itself be a lone space in vocabularies that are not byte-level).
    if (merge.find(' ', 1) == std::string::npos) continue;
    ranks_.emplace(merge, static_cast<int32_t>(i));  // an earlier duplicate keeps its rank
  }
}

int32_t BpeTokenizer::merge_rank(std::string_view left, std::string_view right,
                                 std::string& scratch) const {
  scratch.assign(left);
  scratch.push_back(' ');
  scratch.append(right);
  const auto it = ranks_.find(scratch);
  return it == ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  for (std::string_view word : pre_->split(text)) encode_word(word, out);
}

void BpeTokenizer::encode_word(std::string_view raw_word, std::vector<int32_t>& out) const {
  const std::string word = encode_byte_level(raw_word);
  if (config_.ignore_merges) {
    if (const std::optional<int32_t> id = vocab_->find(word)) {
      out.push_back(*id);
      return;
    }
  }

  std::vector<MergeSymbol> symbols = character_symbols(word);
  std::string scratch;
  // Lower ranks merge first: the priority is the negated rank.
  merge_symbols<int32_t>(symbols, [&](int left, int right) -> std::optional<int32_t> {
    const MergeSymbol& l = symbols[left];
    const MergeSymbol& r = symbols[right];
    const int32_t rank = merge_rank(std::string_view(word).substr(l.begin, l.length),
                                    std::string_view(word).substr(r.begin, r.length), scratch);
    if (rank < 0) return std::nullopt;
    return -rank;
  });

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = std::string_view(word).substr(symbols[i].begin, symbols[i].length);
    if (const std::optional<int32_t> id = vocab_->find(piece)) {
      out.push_back(*id);
      continue;
    }
    // A merge result missing from the vocabulary (a malformed file): spell the piece
    // one byte character at a time; characters the vocabulary lacks are dropped.
    for (size_t pos = 0; pos < piece.size();) {
      const size_t length =
          std::min(utf8_sequence_length(static_cast<uint8_t>(piece[pos])), piece.size() - pos);
      if (const std::optional<int32_t> id = vocab_->find(piece.substr(pos, length))) {
        out.push_back(*id);
      }
      pos += length;
    }
  }
}

}  // namespace tokenmill::tokenizer
