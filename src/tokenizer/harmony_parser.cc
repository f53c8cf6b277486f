// harmony::StreamParser and parse_completion (harmony_format.h).
#include <algorithm>
#include <array>
#include <span>

#include "tokenizer/harmony_format.h"

namespace tokenmill::tokenizer::harmony {

namespace {

constexpr std::array<std::string_view, 3> kTerminators = {kEnd, kCall, kReturn};
constexpr std::array<std::string_view, 3> kChannels = {"analysis", "commentary", "final"};
// A header longer than this is not harmony (real ones are a few dozen bytes).
constexpr size_t kMaxHeader = 1024;

// The length of the longest suffix of text that is a proper prefix of one of tokens.
size_t held_suffix(std::string_view text, std::span<const std::string_view> tokens) {
  size_t longest = 0;
  for (std::string_view token : tokens) {
    for (size_t n = std::min(text.size(), token.size() - 1); n > longest; --n) {
      if (text.substr(text.size() - n) == token.substr(0, n)) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

// A message's header fields without its text.
ParsedMessage header_of(const ParsedMessage& m) { return {m.channel, m.recipient, m.content_type, "", {}}; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Status StreamParser::fail(std::string message) {
  error_ = invalid_argument("harmony output: " + std::move(message));
  return error_;
}

Status StreamParser::parse_header(std::string_view header) {
  if (!first_) {
    // Every message after the first names its author: the assistant.
    if (!header.starts_with("assistant")) {
      return fail("a message from '" + std::string(header.substr(0, header.find_first_of(" <"))) +
                  "' where only the assistant writes");
    }
    header.remove_prefix(std::string_view("assistant").size());
  }
  ParsedMessage m;
  const size_t channel_at = header.find(kChannel);
  if (channel_at == std::string_view::npos) return fail("a message without a channel");
  const std::string_view before = trim(header.substr(0, channel_at));
  if (before.starts_with("to=")) {
    m.recipient = std::string(before.substr(3));
  } else if (!before.empty()) {
    return fail("unexpected '" + std::string(before) + "' before the channel");
  }
  std::string_view rest = header.substr(channel_at + kChannel.size());
  const size_t space = rest.find(' ');
  m.channel = std::string(rest.substr(0, space));
  if (std::find(kChannels.begin(), kChannels.end(), m.channel) == kChannels.end()) {
    return fail("unknown channel '" + m.channel + "' (analysis, commentary and final are the channels)");
  }
  rest = space == std::string_view::npos ? std::string_view() : rest.substr(space);
  // Then " to=RECIPIENT" and a content type, in either order, separated by spaces.
  while (!(rest = trim(rest)).empty()) {
    const size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view word = rest.substr(0, end);
    if (word.starts_with("to=")) {
      m.recipient = std::string(word.substr(3));
    } else {
      if (!m.content_type.empty()) return fail("two content types in one header");
      m.content_type = std::string(word);
    }
    rest.remove_prefix(end);
  }
  open_ = std::move(m);
  return {};
}

Result<StreamParser::Update> StreamParser::feed(std::string_view piece) {
  if (!error_.ok()) return error_;
  pending_ += piece;
  Update update;
  for (;;) {
    if (phase_ == Phase::kHeader) {
      const size_t at = pending_.find(kMessage);
      if (at == std::string::npos) {
        if (pending_.size() > kMaxHeader) return fail("a message header that never ends");
        break;
      }
      TM_RETURN_IF_ERROR(parse_header(std::string_view(pending_).substr(0, at)));
      pending_.erase(0, at + kMessage.size());
      phase_ = Phase::kBody;
      continue;
    }
    if (phase_ == Phase::kBody) {
      size_t at = std::string::npos;
      std::string_view terminator;
      for (std::string_view t : kTerminators) {
        const size_t found = pending_.find(t);
        if (found < at) {
          at = found;
          terminator = t;
        }
      }
      if (at == std::string::npos) {
        const size_t keep = held_suffix(pending_, kTerminators);
        const std::string text = pending_.substr(0, pending_.size() - keep);
        if (!text.empty()) {
          open_->text += text;
          update.pieces.push_back({header_of(*open_), text});
        }
        pending_.erase(0, text.size());
        break;
      }
      const std::string text = pending_.substr(0, at);
      open_->text += text;
      if (!text.empty()) update.pieces.push_back({header_of(*open_), text});
      open_->terminator = terminator;
      update.ended.push_back(std::move(*open_));
      open_.reset();
      pending_.erase(0, at + terminator.size());
      phase_ = Phase::kBetween;
      continue;
    }
    // Between messages: only <|start|> may come.
    if (pending_.starts_with(kStart)) {
      pending_.erase(0, kStart.size());
      phase_ = Phase::kHeader;
      first_ = false;
      continue;
    }
    if (!kStart.starts_with(pending_)) {
      return fail("text after the end of a message: '" + pending_.substr(0, 40) + "'");
    }
    break;
  }
  return update;
}

Result<StreamParser::Update> StreamParser::finish() {
  if (!error_.ok()) return error_;
  Update update;
  if (phase_ == Phase::kBody) {
    if (!pending_.empty()) {  // what was held back as a possible terminator
      open_->text += pending_;
      update.pieces.push_back({header_of(*open_), pending_});
    }
    update.ended.push_back(std::move(*open_));
    open_.reset();
  } else if (phase_ == Phase::kHeader && !(first_ && pending_.empty())) {
    return fail("the output ended inside a message header");
  }
  pending_.clear();
  return update;
}

Result<std::vector<ParsedMessage>> parse_completion(std::string_view completion) {
  StreamParser parser;
  auto update = parser.feed(completion);
  if (!update.ok()) return update.status();
  auto rest = parser.finish();
  if (!rest.ok()) return rest.status();
  std::vector<ParsedMessage> messages = std::move(update->ended);
  for (ParsedMessage& m : rest->ended) messages.push_back(std::move(m));
  return messages;
}

}  // namespace tokenmill::tokenizer::harmony
