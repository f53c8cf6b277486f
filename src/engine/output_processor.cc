#include "engine/output_processor.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "engine/json_constraint.h"

namespace tokenmill::engine {

const std::shared_ptr<const TokenTrie>& OutputProcessor::token_trie() const {
  std::call_once(trie_once_, [&] { trie_ = token_trie_of(tokenizer_); });
  return trie_;
}

bool OutputProcessor::takes_pick(const Sequence& s) { return !s.json && s.state->request.sampling.picks_first_max(); }

bool OutputProcessor::reads_logits(const Sequence& s) {
  return !takes_pick(s) || s.state->request.sampling.logprobs || s.forks_on_next_draw();
}

Draw OutputProcessor::draw(Sequence& s, std::span<float> logits, int32_t first_max,
                           std::span<const int32_t> previous, const OutputGrammar* grammar) const {
  Draw d;
  const SamplingParams& sampling = s.state->request.sampling;
  if (previous.empty()) previous = s.tokens;
  if (s.json) {
    // JSON mode: the draw is among the tokens that keep the output valid JSON.
    thread_local std::vector<float> masked;
    if (!mask_to_json(grammar ? *grammar : *s.json, logits, tokenizer_, sampling.picks_first_max(), masked,
                      [this] { return token_trie(); })) {
      return d;
    }
    d.token = s.sampler->sample(masked, previous);
  } else if (first_max >= 0 && takes_pick(s)) {
    d.token = first_max;
  } else {
    d.token = s.sampler->sample(logits, previous);
  }
  if (sampling.logprobs) d.logprobs = compute_logprobs(logits, d.token, sampling.top_logprobs);
  return d;
}

bool OutputProcessor::emit(Sequence& s, Draw drawn) {
  RequestState& state = *s.state;
  const Request& request = state.request;
  const int32_t token = drawn.token;
  if (token < 0) {
    finish(&s, FinishReason::kError, "no token can continue the JSON output");
    return false;
  }
  const double now = state.since_submit.seconds();
  if (!state.first_token_seen) {
    state.first_token_seen = true;
    state.time_to_first_token_s = now;
    metrics_.time_to_first_token.observe(now);
  } else if (s.n_generated > 0) {
    metrics_.inter_token_latency.observe(now - s.last_token_time);
  }
  s.last_token_time = now;
  ++s.n_generated;
  ++state.n_completion_tokens;
  metrics_.add_generation_tokens(1);

  StreamEvent event;
  event.choice = s.choice;
  event.token_ids.push_back(token);
  if (drawn.logprobs) event.logprobs.push_back(std::move(*drawn.logprobs));
  event.prompt_logprobs = std::move(s.pending_prompt_logprobs);
  s.pending_prompt_logprobs.clear();

  const bool is_stop_token =
      (!request.ignore_eos && tokenizer_.is_end_of_generation(token)) ||
      std::find(request.stop_token_ids.begin(), request.stop_token_ids.end(), token) != request.stop_token_ids.end();
  if (is_stop_token) {
    event.text = flush_text(s);
    emit_final(s, std::move(event), FinishReason::kStop);
    return false;
  }
  s.tokens.push_back(token);
  auto filtered = s.stop_filter->push(s.decoder->push(token));
  event.text = std::move(filtered.text);
  if (filtered.stopped) {
    emit_final(s, std::move(event), FinishReason::kStop);
    return false;
  }
  if (s.json) {
    s.json->advance(tokenizer_.token_piece(token, /*render_special=*/false));
    if (s.json->complete()) {  // the object is closed: nothing may follow
      event.text += flush_text(s);
      emit_final(s, std::move(event), FinishReason::kStop);
      return false;
    }
  }
  const bool out_of_tokens = s.n_generated >= request.max_tokens || static_cast<int32_t>(s.tokens.size()) >= max_context_;
  if (out_of_tokens) {
    auto rest = s.stop_filter->push(s.decoder->flush());
    event.text += rest.text;
    if (!rest.stopped) event.text += s.stop_filter->flush();
    emit_final(s, std::move(event), rest.stopped ? FinishReason::kStop : FinishReason::kLength);
    return false;
  }
  state.stream->push(std::move(event));
  return true;
}

// Text still held by the decoder and the stop filter when a choice ends on a token.
std::string OutputProcessor::flush_text(Sequence& s) {
  auto out = s.stop_filter->push(s.decoder->flush());
  return out.stopped ? out.text : out.text + s.stop_filter->flush();
}

void OutputProcessor::emit_final(Sequence& s, StreamEvent event, FinishReason reason) {
  event.finish = reason;
  complete_choice(s, std::move(event));
}

void OutputProcessor::finish(Sequence* s, FinishReason reason, const std::string& error) {
  StreamEvent event;
  event.choice = s->choice;
  event.finish = reason;
  event.error = error;
  if (reason != FinishReason::kCancelled && reason != FinishReason::kError) event.text = flush_text(*s);
  // A request that ends before its prompt finished never forked its other choices.
  RequestState& state = *s->state;
  if (s->forks_on_next_draw()) {
    state.forked = true;
    for (int32_t c = 1; c < state.request.n; ++c) {
      StreamEvent extra;
      extra.choice = c;
      extra.finish = reason;
      extra.error = error;
      ++state.n_choices_finished;
      state.stream->push(std::move(extra));
    }
  }
  complete_choice(*s, std::move(event));
}

void OutputProcessor::complete_choice(Sequence& s, StreamEvent event) {
  RequestState& state = *s.state;
  const FinishReason reason = *event.finish;
  ++state.n_choices_finished;
  if (state.n_choices_finished >= state.request.n) {
    Usage usage;
    usage.prompt_tokens = static_cast<int32_t>(state.request.prompt.size());
    usage.completion_tokens = state.n_completion_tokens;
    usage.cached_tokens = state.n_cached_tokens;
    if (!state.request.prediction.empty()) {
      usage.accepted_prediction_tokens = state.n_accepted_prediction;
      usage.rejected_prediction_tokens = std::max<int32_t>(
          0, state.request.n * static_cast<int32_t>(state.request.prediction.size()) - state.n_accepted_prediction);
    }
    usage.total_s = state.since_submit.seconds();
    usage.time_to_first_token_s = state.time_to_first_token_s;
    state.stream->set_usage(usage);
    metrics_.e2e_request_latency.observe(usage.total_s);
    metrics_.add_finished_request(finish_reason_name(reason));
  }
  state.stream->push(std::move(event));
  scheduler_.remove(&s);  // frees its blocks; s is gone after this
}

}  // namespace tokenmill::engine
