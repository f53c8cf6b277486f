#include "tokenizer/bpe_tokenizer.h"

#include <queue>

#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

namespace {

struct Symbol {
  int prev = -1;
  int next = -1;
  size_t begin = 0;   // offset in the byte-level word
  size_t length = 0;  // 0 once merged into the symbol on its left
};

struct Candidate {
  int left = 0;
  int right = 0;
  int32_t rank = 0;
  size_t length = 0;  // bytes of the merged text; stale if the symbols changed since

  // Priority: lowest rank first, then the leftmost pair.
  bool operator<(const Candidate& other) const {
    if (rank != other.rank) return rank > other.rank;
    return left > other.left;
  }
};

}  // namespace

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

  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < word.size();) {
    const size_t length =
        std::min(utf8_sequence_length(static_cast<uint8_t>(word[pos])), word.size() - pos);
    Symbol symbol;
    symbol.begin = pos;
    symbol.length = length;
    symbol.prev = static_cast<int>(symbols.size()) - 1;
    pos += length;
    symbol.next = pos == word.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(symbol);
  }

  std::string scratch;
  std::priority_queue<Candidate> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    const int32_t rank = merge_rank(std::string_view(word).substr(l.begin, l.length),
                                    std::string_view(word).substr(r.begin, r.length), scratch);
    if (rank < 0) return;
    queue.push(Candidate{left, right, rank, l.length + r.length});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    Symbol& left = symbols[best.left];
    Symbol& right = symbols[best.right];
    // Symbols only grow, so an unchanged total length means neither side has changed.
    if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = best.left;
    consider(left.prev, best.left);
    consider(best.left, left.next);
  }

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
