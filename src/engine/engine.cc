#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "base/cpu_affinity.h"
#include "base/log.h"
#include "engine/json_constraint.h"
#include "engine/json_grammar.h"
#include "engine/json_schema.h"
#include "engine/scheduler.h"
#include "kv/kv_cache_manager.h"
#include "ops/kv_storage.h"

namespace tokenmill::engine {

namespace {

constexpr int32_t kMaxChoices = 8;

// How many blocks (all layers but the windowed ones) and window slots the cache has.
struct KvSizing {
  int32_t n_blocks = 0;
  int32_t n_window_slots = 0;
  int32_t window = 0;  // positions a windowed layer sees; 0: no windowed layers
};

// The cache's shape: with the windowed layers in n_window_slots slots when `windowed`.
ops::KvShape kv_shape(const model::Model& model, const EngineConfig& config, bool windowed, int32_t n_blocks,
                      int32_t n_window_slots) {
  return windowed ? model.kv_shape_windowed(n_blocks, n_window_slots, config.block_size, config.kv_type)
                  : model.kv_shape(n_blocks, config.block_size, config.kv_type);
}

KvSizing size_kv(const EngineConfig& config, const model::Model& model) {
  KvSizing sizing;
  const model::ModelConfig& c = model.config();
  const bool windowed = config.window_kv && c.sliding_window > 0 &&
                        std::find(c.layer_is_sliding.begin(), c.layer_is_sliding.end(), true) != c.layer_is_sliding.end();
  if (windowed) sizing.window = c.sliding_window;
  // Window slots every running sequence may hold at once (the blocks its window spans,
  // plus one it is filling), and a prefill chunk's worth more: beyond that, more slots
  // would never be used.
  const int32_t slots_per_sequence = (sizing.window + config.block_size - 1) / config.block_size + 1;
  const int64_t useful_slots =
      static_cast<int64_t>(config.max_seqs) * slots_per_sequence + (config.max_batch_tokens + config.block_size - 1) / config.block_size;
  if (config.kv_memory_bytes > 0) {
    const int64_t per_block_and_slot = kv_shape(model, config, windowed, 1, 1).total_bytes();
    if (!windowed) {
      sizing.n_blocks = static_cast<int32_t>(std::max<int64_t>(1, config.kv_memory_bytes / per_block_and_slot));
      return sizing;
    }
    const int64_t per_block = kv_shape(model, config, true, 1, 0).total_bytes();
    const int64_t per_slot = per_block_and_slot - per_block;
    // A slot per block while the memory is small; past useful_slots, blocks alone.
    int64_t n_blocks = config.kv_memory_bytes / per_block_and_slot;
    if (n_blocks > useful_slots) n_blocks = (config.kv_memory_bytes - useful_slots * per_slot) / per_block;
    sizing.n_blocks = static_cast<int32_t>(std::max<int64_t>(1, n_blocks));
    sizing.n_window_slots = static_cast<int32_t>(std::min<int64_t>(sizing.n_blocks, useful_slots));
    return sizing;
  }
  sizing.n_blocks = (config.ctx_total + config.block_size - 1) / config.block_size;
  if (windowed) sizing.n_window_slots = static_cast<int32_t>(std::min<int64_t>(sizing.n_blocks, useful_slots));
  return sizing;
}

}  // namespace

class Engine::Impl {
 public:
  Impl(model::Model& model, const tokenizer::Tokenizer& tokenizer, EngineConfig config)
      : model_(model),
        tokenizer_(tokenizer),
        config_(config),
        sizing_(size_kv(config, model)),
        kv_storage_(kv_shape(model, config, sizing_.window > 0, sizing_.n_blocks, sizing_.n_window_slots)),
        kv_(sizing_.n_blocks, config.block_size, config.prefix_caching, {sizing_.window, sizing_.n_window_slots}),
        scheduler_({config.max_batch_tokens, config.max_seqs}, kv_) {
    if (kv_.has_window()) kv_storage_.bind_window_slots(&kv_.windows().slot_of_block());
    if (!config_.pinned_cpus.empty()) model_.backend().pin_threads(config_.pinned_cpus);
    thread_ = std::thread([this] {
      if (!config_.pinned_cpus.empty()) pin_current_thread(std::span<const int>(config_.pinned_cpus).first(1));
      loop();
    });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Result<std::shared_ptr<RequestStream>> submit(Request request) {
    TM_RETURN_IF_ERROR(request.sampling.validate());
    if (request.prompt.empty()) return invalid_argument("the prompt is empty");
    if (request.n < 1 || request.n > kMaxChoices) {
      return invalid_argument("n must be between 1 and " + std::to_string(kMaxChoices) + ", got " +
                              std::to_string(request.n));
    }
    if (request.max_tokens < 1) return invalid_argument("max_tokens must be at least 1");
    for (int32_t t : request.prompt) {
      if (t < 0 || t >= model_.config().n_vocab) return invalid_argument("prompt token id out of range");
    }
    const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
    if (n_prompt + request.max_tokens > config_.max_context) {
      return invalid_argument("the prompt (" + std::to_string(n_prompt) + " tokens) plus max_tokens (" +
                              std::to_string(request.max_tokens) + ") exceeds the context of " +
                              std::to_string(config_.max_context) + " tokens");
    }
    if (kv_.blocks_for(static_cast<int32_t>(n_prompt) + 1) > sizing_.n_blocks) {
      return invalid_argument("the prompt (" + std::to_string(n_prompt) + " tokens) needs more KV cache than the " +
                              std::to_string(sizing_.n_blocks * config_.block_size) + " positions the server has");
    }
    auto state = std::make_shared<RequestState>();
    state->stream = std::make_shared<RequestStream>(request.n);
    state->request = std::move(request);
    auto stream = state->stream;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_ || draining_) return unsupported("the server is shutting down");
      incoming_.push_back(std::move(state));
      ++n_incoming_;
    }
    cv_.notify_all();
    return stream;
  }

  PoolCounters pool_counters() {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return {kv_.pool().n_blocks(), kv_.pool().n_free(),  kv_.pool().n_cached_free(),       kv_.windows().n_slots(),
            kv_.windows().n_held(),  sizing_.window,       kv_storage_.shape().total_bytes()};
  }

  void shutdown(std::chrono::milliseconds grace) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      draining_ = true;
    }
    const auto deadline = std::chrono::steady_clock::now() + grace;
    std::unique_lock<std::mutex> lock(mutex_);
    idle_cv_.wait_until(lock, deadline, [&] { return idle_; });
    cancel_all_ = true;
    cv_.notify_all();
    idle_cv_.wait_for(lock, std::chrono::seconds(30), [&] { return idle_; });
  }

  EngineMetrics metrics_;
  const EngineConfig& config() const { return config_; }

 private:
  void loop() {
    for (;;) {
      std::vector<std::shared_ptr<RequestState>> arrived;
      bool cancel_all = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_ = scheduler_.idle() && incoming_.empty();
        if (idle_) idle_cv_.notify_all();
        cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !scheduler_.idle(); });
        if (stop_) break;
        arrived.assign(std::make_move_iterator(incoming_.begin()), std::make_move_iterator(incoming_.end()));
        incoming_.clear();
        cancel_all = cancel_all_;
        idle_ = false;
      }
      std::lock_guard<std::mutex> state_lock(state_mutex_);
      for (auto& state : arrived) admit(std::move(state));
      drop_cancelled(cancel_all);
      step();
      publish_gauges();
    }
    // Stopping: every unfinished choice ends as cancelled.
    std::lock_guard<std::mutex> state_lock(state_mutex_);
    drop_cancelled(true);
  }

  void admit(std::shared_ptr<RequestState> state) {
    auto seq = std::make_unique<Sequence>();
    seq->state = state;
    seq->choice = 0;
    seq->arrival = next_arrival_++;
    seq->tokens = state->request.prompt;
    seq->n_prompt = static_cast<int32_t>(seq->tokens.size());
    init_choice(*seq, 0);
    metrics_.add_prompt_tokens(seq->n_prompt);
    scheduler_.add_waiting(std::move(seq));
  }

  void init_choice(Sequence& seq, int32_t choice) {
    SamplingParams params = seq.state->request.sampling;
    // Choices of one request draw different samples from one seed.
    if (params.seed) params.seed = *params.seed + static_cast<uint64_t>(choice);
    seq.sampler = std::make_unique<Sampler>(params);
    seq.decoder = std::make_unique<tokenizer::IncrementalDecoder>(tokenizer_);
    seq.stop_filter = std::make_unique<StopStringFilter>(seq.state->request.stop);
    if (seq.state->request.json_schema) {
      seq.json = std::make_unique<JsonSchemaGrammar>(seq.state->request.json_schema);
    } else if (seq.state->request.json_object) {
      seq.json = std::make_unique<JsonGrammar>();
    }
  }

  void drop_cancelled(bool all) {
    std::vector<Sequence*> doomed;
    for (const auto& s : scheduler_.running()) {
      if (all || s->state->stream->cancelled()) doomed.push_back(s.get());
    }
    for (const auto& s : scheduler_.waiting()) {
      if (all || s->state->stream->cancelled()) doomed.push_back(s.get());
    }
    for (Sequence* s : doomed) finish(s, FinishReason::kCancelled, "");
  }

  void step() {
    SchedulerOutput plan = scheduler_.schedule();
    for (Sequence* s : plan.preempted) {
      (void)s;
      metrics_.add_preemption();
    }
    for (Sequence* s : plan.newly_admitted) {
      s->admitted_before = true;
      const int32_t queried = s->n_prompt - 1;
      metrics_.add_prefix_cache(queried, s->n_computed);
      s->state->n_cached_tokens = s->n_computed;
    }
    for (Sequence* s : plan.cannot_fit) finish(s, FinishReason::kLength, "");
    if (plan.scheduled.empty()) return;

    // Copy-on-write for blocks shared between the choices of one prompt (the scheduler
    // reserved the private blocks with the step's growth).
    for (const ScheduledSequence& item : plan.scheduled) {
      for (const kv::BlockCopy& copy : item.copies) kv_storage_.copy_block(copy.from, copy.to);
    }

    model::Batch batch;
    std::vector<Sequence*> wants_sample;
    bool takes_first_max = false;  // some draw below is just the greedy pick
    bool needs_logits = false;     // some draw below, or a prompt logprob, reads logits
    std::vector<int32_t> sample_rows;  // logits row of each wants_sample entry
    struct PromptRow {
      Sequence* sequence;
      int32_t position;  // its logits give the log-probability of the prompt token after it
      int32_t row;
    };
    std::vector<PromptRow> prompt_rows;
    int32_t n_rows = 0;
    for (const ScheduledSequence& item : plan.scheduled) {
      Sequence* s = item.sequence;
      const int32_t first = s->n_computed, end = s->n_computed + item.n_new;
      const bool caught_up = end == static_cast<int32_t>(s->tokens.size());
      batch.add_sequence(std::vector<int32_t>(s->tokens.begin() + first, s->tokens.begin() + end), first,
                         s->blocks.table, false);
      const int32_t first_token = batch.n_tokens() - item.n_new;
      if (s->wants_prompt_logprobs()) {
        // Positions p whose next token p + 1 is a prompt token not scored yet.
        for (int32_t p = std::max(first, s->next_prompt_logprob - 1); p < std::min(end, s->n_prompt - 1); ++p) {
          batch.output_tokens.push_back(first_token + (p - first));
          prompt_rows.push_back({s, p, n_rows++});
        }
      }
      if (caught_up) {
        batch.output_tokens.push_back(batch.n_tokens() - 1);
        wants_sample.push_back(s);
        takes_first_max = takes_first_max || takes_pick(*s);
        needs_logits = needs_logits || reads_logits(*s);
        sample_rows.push_back(n_rows++);
      }
    }
    // The greedy picks come with the logits (found while they were in cache): a draw that
    // is just that pick takes it instead of reading its logits row back from memory. Asked
    // for only then: a back end without a fold would scan every row for nothing. When
    // every draw is such a pick, and nothing else reads a logit, none is stored.
    needs_logits = needs_logits || !prompt_rows.empty();
    Status status = model_.forward(batch, kv_storage_, logits_, takes_first_max ? &first_max_ : nullptr,
                                   takes_first_max && !needs_logits);
    if (!status.ok()) {
      log_error("forward pass failed: " + status.to_string());
      for (const ScheduledSequence& item : plan.scheduled) finish(item.sequence, FinishReason::kError, status.message());
      return;
    }
    for (const ScheduledSequence& item : plan.scheduled) {
      Sequence* s = item.sequence;
      s->n_computed += item.n_new;
      kv_.commit(s->blocks, s->tokens, s->n_computed);
    }
    const int32_t n_vocab = model_.config().n_vocab;
    auto row_of = [&](size_t i) { return std::span<float>(logits_.data() + static_cast<size_t>(sample_rows[i]) * n_vocab, n_vocab); };
    if (!prompt_rows.empty()) {
      std::vector<TokenLogprobs> scored(prompt_rows.size());
      model_.backend().for_each_parallel(prompt_rows.size(), [&](size_t i) {
        const PromptRow& r = prompt_rows[i];
        const std::span<const float> row(logits_.data() + static_cast<size_t>(r.row) * n_vocab, n_vocab);
        scored[i] = compute_logprobs(row, r.sequence->tokens[r.position + 1], r.sequence->state->request.sampling.top_logprobs);
      });
      for (size_t i = 0; i < prompt_rows.size(); ++i) {
        Sequence* s = prompt_rows[i].sequence;
        s->pending_prompt_logprobs.push_back(std::move(scored[i]));
        s->next_prompt_logprob = prompt_rows[i].position + 2;
      }
    }
    for (size_t i = 0; i < wants_sample.size(); ++i) {
      Sequence* s = wants_sample[i];
      if (s->choice == 0 && s->state->request.n > 1 && !s->state->forked) fork_choices(*s, row_of(i));
    }
    // Each sequence draws from its own logits row with its own sampler: the draws (a few
    // passes over the vocabulary each) run in parallel, the events go out in order.
    std::vector<Draw> draws(wants_sample.size());
    model_.backend().for_each_parallel(wants_sample.size(), [&](size_t i) {
      draws[i] = draw(*wants_sample[i], row_of(i),
                      takes_first_max ? first_max_[static_cast<size_t>(sample_rows[i])] : -1);
    });
    for (size_t i = 0; i < wants_sample.size(); ++i) emit(*wants_sample[i], std::move(draws[i]));
  }

  // The prompt is done: choices 1..n-1 share its blocks and sample from the same logits.
  void fork_choices(Sequence& parent, std::span<float> logits) {
    parent.state->forked = true;
    std::vector<float> copy(logits.begin(), logits.end());
    for (int32_t c = 1; c < parent.state->request.n; ++c) {
      auto seq = std::make_unique<Sequence>();
      seq->state = parent.state;
      seq->choice = c;
      seq->arrival = next_arrival_++;
      seq->tokens = parent.tokens;
      seq->n_prompt = parent.n_prompt;
      seq->n_computed = parent.n_computed;
      seq->admitted_before = true;
      seq->next_prompt_logprob = parent.next_prompt_logprob;
      seq->pending_prompt_logprobs = parent.pending_prompt_logprobs;
      seq->blocks = kv_.fork(parent.blocks);
      init_choice(*seq, c);
      Sequence* raw = seq.get();
      scheduler_.add_running(std::move(seq));
      std::vector<float> row(copy);
      sample_and_emit(*raw, row);
    }
  }

  // A sampled token and, when the request asks for them, its log-probabilities.
  struct Draw {
    int32_t token = -1;
    std::optional<TokenLogprobs> logprobs;
  };

  // Whether s's draw is first_max_index of its logits, whatever they are.
  static bool takes_pick(const Sequence& s) { return !s.json && s.state->request.sampling.picks_first_max(); }
  // Whether s's next draw reads its logits row: a draw that is not just the pick, its
  // logprobs, or the first draw of a request with n > 1 (the other choices fork from
  // those logits).
  static bool reads_logits(const Sequence& s) {
    const Request& request = s.state->request;
    return !takes_pick(s) || request.sampling.logprobs || (s.choice == 0 && request.n > 1 && !s.state->forked);
  }

  // first_max: first_max_index(logits) when the caller has it, else -1.
  Draw draw(Sequence& s, std::span<float> logits, int32_t first_max = -1) {
    Draw d;
    const SamplingParams& sampling = s.state->request.sampling;
    if (s.json) {
      // JSON mode: the draw is among the tokens that keep the output valid JSON.
      thread_local std::vector<float> masked;
      if (!mask_to_json(*s.json, logits, tokenizer_, sampling.picks_first_max(), masked)) return d;  // token -1: no token fits
      d.token = s.sampler->sample(masked, std::span<const int32_t>(s.tokens));
    } else if (first_max >= 0 && takes_pick(s)) {
      d.token = first_max;
    } else {
      d.token = s.sampler->sample(logits, std::span<const int32_t>(s.tokens));
    }
    if (sampling.logprobs) d.logprobs = compute_logprobs(logits, d.token, sampling.top_logprobs);
    return d;
  }

  void sample_and_emit(Sequence& s, std::span<float> logits) { emit(s, draw(s, logits)); }

  void emit(Sequence& s, Draw drawn) {
    RequestState& state = *s.state;
    const Request& request = state.request;
    const int32_t token = drawn.token;
    if (token < 0) {
      finish(&s, FinishReason::kError, "no token can continue the JSON output");
      return;
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
      return;
    }
    s.tokens.push_back(token);
    auto filtered = s.stop_filter->push(s.decoder->push(token));
    event.text = std::move(filtered.text);
    if (filtered.stopped) {
      emit_final(s, std::move(event), FinishReason::kStop);
      return;
    }
    if (s.json) {
      s.json->advance(tokenizer_.token_piece(token, /*render_special=*/false));
      if (s.json->complete()) {  // the object is closed: nothing may follow
        event.text += flush_text(s);
        emit_final(s, std::move(event), FinishReason::kStop);
        return;
      }
    }
    const bool out_of_tokens = s.n_generated >= request.max_tokens ||
                               static_cast<int32_t>(s.tokens.size()) >= config_.max_context;
    if (out_of_tokens) {
      auto rest = s.stop_filter->push(s.decoder->flush());
      event.text += rest.text;
      if (!rest.stopped) event.text += s.stop_filter->flush();
      emit_final(s, std::move(event), rest.stopped ? FinishReason::kStop : FinishReason::kLength);
      return;
    }
    state.stream->push(std::move(event));
  }

  // Text still held by the decoder and the stop filter when a choice ends on a token.
  std::string flush_text(Sequence& s) {
    auto out = s.stop_filter->push(s.decoder->flush());
    return out.stopped ? out.text : out.text + s.stop_filter->flush();
  }

  void emit_final(Sequence& s, StreamEvent event, FinishReason reason) {
    event.finish = reason;
    complete_choice(s, std::move(event));
  }

  // Ends a choice for a reason other than its own sampled token.
  void finish(Sequence* s, FinishReason reason, const std::string& error) {
    StreamEvent event;
    event.choice = s->choice;
    event.finish = reason;
    event.error = error;
    if (reason != FinishReason::kCancelled && reason != FinishReason::kError) event.text = flush_text(*s);
    // A request cancelled before its prompt finished never forked its other choices.
    RequestState& state = *s->state;
    if (s->choice == 0 && !state.forked && state.request.n > 1) {
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

  void complete_choice(Sequence& s, StreamEvent event) {
    RequestState& state = *s.state;
    const FinishReason reason = *event.finish;
    ++state.n_choices_finished;
    if (state.n_choices_finished >= state.request.n) {
      Usage usage;
      usage.prompt_tokens = static_cast<int32_t>(state.request.prompt.size());
      usage.completion_tokens = state.n_completion_tokens;
      usage.cached_tokens = state.n_cached_tokens;
      usage.total_s = state.since_submit.seconds();
      usage.time_to_first_token_s = state.time_to_first_token_s;
      state.stream->set_usage(usage);
      metrics_.e2e_request_latency.observe(usage.total_s);
      metrics_.add_finished_request(finish_reason_name(reason));
    }
    state.stream->push(std::move(event));
    scheduler_.remove(&s);  // frees its blocks; s is gone after this
  }

  void publish_gauges() {
    int64_t running = static_cast<int64_t>(scheduler_.running().size());
    int64_t waiting = static_cast<int64_t>(scheduler_.waiting().size());
    metrics_.set_gauges(running, waiting, kv_.usage());
  }

  model::Model& model_;
  const tokenizer::Tokenizer& tokenizer_;
  EngineConfig config_;
  KvSizing sizing_;
  ops::KvStorage kv_storage_;
  kv::KvCacheManager kv_;
  Scheduler scheduler_;
  std::vector<float> logits_;  // [n_outputs, n_vocab] of the last step
  std::vector<int32_t> first_max_;  // [n_outputs]: first_max_index of each logits row
  uint64_t next_arrival_ = 0;

  std::mutex mutex_;  // guards the fields below
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::shared_ptr<RequestState>> incoming_;
  uint64_t n_incoming_ = 0;
  bool stop_ = false;
  bool draining_ = false;
  bool cancel_all_ = false;
  bool idle_ = true;

  std::mutex state_mutex_;  // held by the engine thread while it touches scheduler and pool
  std::thread thread_;
};

Engine::Engine(model::Model& model, const tokenizer::Tokenizer& tokenizer, EngineConfig config)
    : impl_(std::make_unique<Impl>(model, tokenizer, config)) {}

Engine::~Engine() = default;

int64_t Engine::kv_cache_bytes(const model::Model& model, const EngineConfig& config) {
  const KvSizing sizing = size_kv(config, model);
  return kv_shape(model, config, sizing.window > 0, sizing.n_blocks, sizing.n_window_slots).total_bytes();
}

Result<std::shared_ptr<RequestStream>> Engine::submit(Request request) { return impl_->submit(std::move(request)); }

const EngineMetrics& Engine::metrics() const { return impl_->metrics_; }

const EngineConfig& Engine::config() const { return impl_->config(); }

Engine::PoolCounters Engine::pool_counters() const { return impl_->pool_counters(); }

void Engine::shutdown(std::chrono::milliseconds grace) { impl_->shutdown(grace); }

}  // namespace tokenmill::engine
