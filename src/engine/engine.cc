#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "base/cpu_affinity.h"
#include "base/log.h"
#include "base/timer.h"
#include "engine/batch_step_limit.h"
#include "engine/draft_proposer.h"
#include "engine/kv_disk_tier.h"
#include "engine/kv_sizing.h"
#include "engine/output_processor.h"
#include "engine/scheduler.h"
#include "engine/step_batch.h"
#include "kv/kv_cache_manager.h"
#include "ops/kv_storage.h"

namespace tokenmill::engine {

namespace {

// The draft model's cache holds as many positions as the target's.
int32_t draft_blocks(const EngineConfig& config, const KvSizing& sizing) {
  return sizing.n_blocks * config.block_size / DraftModel::kBlockSize;
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
        scheduler_({config.max_batch_tokens, config.max_seqs}, kv_),
        output_(tokenizer, config.max_context, metrics_, scheduler_),
        proposer_(config.speculative, config.max_context, draft_blocks(config, sizing_)) {
    if (kv_.has_window()) kv_storage_.bind_window_slots(&kv_.windows().slot_of_block());
    if (!config_.kv_disk_dir.empty() && config_.prefix_caching) open_disk_tier();
    if (!config_.pinned_cpus.empty()) model_.backend().pin_threads(config_.pinned_cpus);
    publish_gauges();  // the pool's size is known from the start, before any step
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
    metrics_.set_disk_store(nullptr);
  }

  std::optional<KvDiskState> kv_disk_state() const {
    if (!disk_store_) return std::nullopt;
    return KvDiskState{disk_store_->folder(), disk_store_->counters()};
  }

  void flush_kv_disk() {
    if (disk_store_) disk_store_->flush();
  }

  Result<std::shared_ptr<RequestStream>> submit(Request request) {
    TM_RETURN_IF_ERROR(check_request(request, model_.config().n_vocab, config_.max_context,
                                     sizing_.n_blocks * config_.block_size));
    auto state = std::make_shared<RequestState>();
    state->stream = std::make_shared<RequestStream>(request.n);
    state->request = std::move(request);
    auto stream = state->stream;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_ || draining_) return unsupported("the server is shutting down");
      if (state->request.priority != Priority::kBatch) interactive_arrived_.store(true, std::memory_order_relaxed);
      incoming_.push_back(std::move(state));
      ++n_incoming_;
    }
    cv_.notify_all();
    return stream;
  }

  PoolCounters pool_counters() {
    std::lock_guard<std::mutex> lock(state_mutex_);
    PoolCounters counters{kv_.pool().n_blocks(), kv_.pool().n_free(),  kv_.pool().n_cached_free(),
                          kv_.windows().n_slots(), kv_.windows().n_held(),  sizing_.window,
                          kv_storage_.shape().total_bytes()};
    if (const DraftModel* draft = proposer_.draft_model()) {
      counters.n_draft_blocks = draft->n_blocks();
      counters.n_draft_free = draft->n_free_blocks();
      counters.kv_bytes += draft->kv_bytes();
    }
    return counters;
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
        interactive_arrived_.store(false, std::memory_order_relaxed);
        cancel_all = cancel_all_;
        idle_ = false;
      }
      std::lock_guard<std::mutex> state_lock(state_mutex_);
      for (auto& state : arrived) admit(std::move(state));
      drop_cancelled(cancel_all);
      step();
      if (disk_tier_) disk_tier_->spill_registered();
      proposer_.forget_departed(scheduler_.running());
      publish_gauges();
    }
    // Stopping: every unfinished choice ends as cancelled (once no disk read still
    // writes into its blocks).
    if (disk_store_) disk_store_->flush();
    std::lock_guard<std::mutex> state_lock(state_mutex_);
    drop_cancelled(true);
  }

  // The disk tier under the prefix cache, its folder named by the model file's contents
  // and the cache layout (hashed on the tier's own thread, so the start does not wait).
  void open_disk_tier() {
    const std::span<const uint8_t> file = model_.file().bytes();
    const ops::KvShape shape = kv_storage_.shape();
    std::error_code error;
    std::string key = std::filesystem::weakly_canonical(model_.file().path(), error).string();
    if (error || key.empty()) key = model_.file().path();
    auto store = kv::DiskBlockStore::open(
        {config_.kv_disk_dir, config_.kv_disk_bytes, key, [file, shape] { return kv_disk_fingerprint(file, shape); }});
    if (!store.ok()) {
      log_error("KV disk tier off: " + store.status().message());
      return;
    }
    disk_store_ = std::move(store).value();
    disk_tier_ = std::make_unique<KvDiskTier>(*disk_store_, kv_storage_, kv_);
    kv_.set_disk(disk_store_.get());
    scheduler_.set_disk_tier(disk_tier_.get());
    metrics_.set_disk_store(disk_store_.get());
  }

  void admit(std::shared_ptr<RequestState> state) {
    auto seq = first_choice(std::move(state), next_arrival_++, tokenizer_);
    metrics_.add_prompt_tokens(seq->n_prompt);
    scheduler_.add_waiting(std::move(seq));
  }

  // Cancelled requests (all of them when stopping) end as cancelled; those past their
  // deadline (EngineConfig::request_timeout_seconds) as if cut by max_tokens.
  void drop_cancelled(bool all) {
    std::vector<Sequence*> doomed;
    std::vector<Sequence*> timed_out;
    const double timeout = config_.request_timeout_seconds;
    auto sort = [&](const std::unique_ptr<Sequence>& s) {
      // A disk read still writes into its blocks: the sequence ends once it is done.
      if (s->loading_from_disk() && !s->disk_load->done()) return;
      if (all || s->state->stream->cancelled()) {
        doomed.push_back(s.get());
      } else if (timeout > 0 && s->state->since_submit.seconds() > timeout) {
        timed_out.push_back(s.get());
      }
    };
    for (const auto& s : scheduler_.running()) sort(s);
    for (const auto& s : scheduler_.waiting()) sort(s);
    for (Sequence* s : doomed) output_.finish(s, FinishReason::kCancelled, "");
    for (Sequence* s : timed_out) output_.finish(s, FinishReason::kLength, "");
  }

  // One step of the loop, as its phases: plan (the scheduler picks the sequences and
  // reserves their blocks), prepare (copy-on-write, the flattened batch, the rows whose
  // logits are needed), run (one forward pass), then the outputs: prompt log-probabilities,
  // the choices of n > 1 requests, the draws (in parallel) and their events.
  //
  // With speculation, a propose phase comes first (the drafts running sequences carry
  // into the step) and the draws of those sequences verify their drafts.
  void step() {
    Timer timer;
    proposer_.propose(scheduler_.running());
    SchedulerOutput plan = plan_step();
    // Blocks registered by a preemption may be reused by this very step: written first.
    if (disk_tier_) disk_tier_->spill_registered();
    if (plan.scheduled.empty()) {
      // Only prefixes being read from disk: wait for one rather than spin.
      if (disk_store_ && scheduler_.n_loading() > 0) disk_store_->wait_for_read(std::chrono::milliseconds(2));
      return;
    }
    int32_t n_tokens = 0;
    bool carries_batch = false;
    for (const ScheduledSequence& item : plan.scheduled) {
      n_tokens += item.n_new;
      carries_batch = carries_batch || item.sequence->is_batch();
    }
    StepBatch prepared = prepare(plan);
    // Batch work alone while interactive users are about: an interactive arrival stops
    // the pass part-way, so that its prompt waits for a slice of a step, not a whole one.
    if (batch_abandonable_ && std::all_of(plan.scheduled.begin(), plan.scheduled.end(),
                                      [](const ScheduledSequence& s) { return s.sequence->is_batch(); })) {
      prepared.batch.abandon = &interactive_arrived_;
    }
    if (!run(plan, prepared)) return;
    score_prompt_tokens(prepared);
    fork_new_choices(prepared);
    std::vector<std::vector<Draw>> draws = sample(prepared);
    for (size_t i = 0; i < draws.size(); ++i) emit_draws(prepared, i, std::move(draws[i]));
    batch_limit_.observe(n_tokens, timer.seconds(), carries_batch && batch_limited_,
                         !carries_batch && plan.scheduled.size() == 1);
  }

  SchedulerOutput plan_step() {
    scheduler_.set_batch_token_limit(batch_token_limit());
    SchedulerOutput plan = scheduler_.schedule();
    for (size_t i = 0; i < plan.preempted.size(); ++i) metrics_.add_preemption();
    for (Sequence* s : plan.newly_admitted) {
      s->admitted_before = true;
      const int32_t queried = s->n_prompt - 1;
      metrics_.add_prefix_cache(queried, s->n_computed);
      s->state->n_cached_tokens = s->n_computed;
    }
    for (Sequence* s : plan.cannot_fit) output_.finish(s, FinishReason::kLength, "");
    return plan;
  }

  // The positions a step that carries batch work may hold (EngineConfig::
  // batch_latency_factor): factor times a one-token step's time (engine/batch_step_limit.h).
  //
  // Between interactive requests (none running or waiting, but one recent) batch work
  // runs unlimited and abandonable: an arrival stops its pass part-way, so the new
  // request's wait does not depend on the step's length.
  int32_t batch_token_limit() {
    batch_limited_ = false;
    batch_abandonable_ = false;
    if (config_.batch_latency_factor <= 0) return INT32_MAX;
    const auto now = std::chrono::steady_clock::now();
    auto interactive = [](const std::unique_ptr<Sequence>& s) { return !s->is_batch(); };
    const bool interactive_present =
        std::any_of(scheduler_.running().begin(), scheduler_.running().end(), interactive) ||
        std::any_of(scheduler_.waiting().begin(), scheduler_.waiting().end(), interactive);
    if (interactive_present) last_interactive_ = now;
    if (!last_interactive_ || now - *last_interactive_ > std::chrono::duration<double>(kInteractiveRecentSeconds)) {
      return INT32_MAX;
    }
    batch_abandonable_ = true;
    if (!interactive_present) return INT32_MAX;
    batch_limited_ = true;
    return batch_limit_.positions(proposer_.step_cost(), config_.max_batch_tokens);
  }

  StepBatch prepare(const SchedulerOutput& plan) {
    // Copy-on-write for blocks shared between the choices of one prompt (the scheduler
    // reserved the private blocks with the step's growth).
    for (const ScheduledSequence& item : plan.scheduled) {
      for (const kv::BlockCopy& copy : item.copies) kv_storage_.copy_block(copy.from, copy.to);
    }
    return build_step_batch(plan);
  }

  // The forward pass. The greedy picks come with the logits (found while they were in
  // cache): a draw that is just that pick takes it instead of reading its logits row back
  // from memory. Asked for only then: a back end without a fold would scan every row for
  // nothing. When every draw is such a pick, and nothing else reads a logit, none is
  // stored. False when the pass failed (every scheduled choice ended) or was abandoned
  // (nothing of it counts).
  bool run(const SchedulerOutput& plan, const StepBatch& p) {
    Timer timer;
    Status status = model_.forward(p.batch, kv_storage_, logits_, p.takes_first_max ? &first_max_ : nullptr,
                                   p.takes_first_max && !p.needs_logits);
    if (status.code() == ErrorCode::kAbandoned) {
      abandon(plan);
      return false;
    }
    proposer_.observe_step(p.batch.n_tokens(), p.batch.output_tokens.size(), timer.seconds());
    if (!status.ok()) {
      log_error("forward pass failed: " + status.to_string());
      for (const ScheduledSequence& item : plan.scheduled) output_.finish(item.sequence, FinishReason::kError, status.message());
      return false;
    }
    // Drafts count as computed only once accepted (emit_draw).
    for (const ScheduledSequence& item : plan.scheduled) {
      Sequence* s = item.sequence;
      s->n_computed += item.n_new - item.n_drafts;
      kv_.commit(s->blocks, s->tokens, s->n_computed);
    }
    return true;
  }

  // A pass stopped part-way: no position of it counts as computed (the next step writes
  // them again first), and the blocks reserved for drafts go back to the pool.
  void abandon(const SchedulerOutput& plan) {
    metrics_.add_abandoned_batch_step();
    for (const ScheduledSequence& item : plan.scheduled) {
      Sequence* s = item.sequence;
      s->drafts.clear();
      kv_.truncate(s->blocks, static_cast<int32_t>(s->tokens.size()));
    }
  }

  std::span<float> logits_row(int32_t row) {
    const int32_t n_vocab = model_.config().n_vocab;
    return std::span<float>(logits_.data() + static_cast<size_t>(row) * n_vocab, n_vocab);
  }

  void score_prompt_tokens(const StepBatch& p) {
    if (p.prompt_rows.empty()) return;
    std::vector<TokenLogprobs> scored(p.prompt_rows.size());
    model_.backend().for_each_parallel(p.prompt_rows.size(), [&](size_t i) {
      const PromptRow& r = p.prompt_rows[i];
      scored[i] = compute_logprobs(logits_row(r.row), r.sequence->tokens[r.position + 1],
                                   r.sequence->state->request.sampling.top_logprobs);
    });
    for (size_t i = 0; i < p.prompt_rows.size(); ++i) {
      Sequence* s = p.prompt_rows[i].sequence;
      s->pending_prompt_logprobs.push_back(std::move(scored[i]));
      s->next_prompt_logprob = p.prompt_rows[i].position + 2;
    }
  }

  void fork_new_choices(const StepBatch& p) {
    for (size_t i = 0; i < p.samples.size(); ++i) {
      if (p.samples[i]->forks_on_next_draw()) fork_choices(*p.samples[i], logits_row(p.sample_rows[i]));
    }
  }

  // Each sequence draws from its own logits row with its own sampler: the draws (a few
  // passes over the vocabulary each) run in parallel; the events go out in order after.
  //
  // A sequence with drafts verifies them by drawing: at each of its positions it draws
  // the token plain decoding would draw there (the same sampler, the same tokens before
  // it, so the same random number), and the draft is accepted when the draw equals it;
  // the first draw that differs is its next token, and after k accepted drafts the draw
  // at the last position is. So every token has exactly plain decoding's distribution -
  // for a drafter that proposes one token per position this is speculative sampling
  // (accept x with chance p(x), else draw from p without x) - and a seeded request
  // gives the same tokens with speculation or without.
  std::vector<std::vector<Draw>> sample(const StepBatch& p) {
    std::vector<std::vector<Draw>> draws(p.samples.size());
    model_.backend().for_each_parallel(p.samples.size(), [&](size_t i) {
      Sequence& s = *p.samples[i];
      const int32_t row = p.sample_rows[i], k = p.sample_drafts[i];
      auto first_max = [&](int32_t r) { return p.takes_first_max ? first_max_[static_cast<size_t>(r)] : -1; };
      if (k == 0) {
        draws[i].push_back(output_.draw(s, logits_row(row), first_max(row)));
        return;
      }
      const std::span<const int32_t> drafts(s.drafts.data(), static_cast<size_t>(k));
      // The penalties see the drafts accepted before each position: only they read the
      // tokens, so only with them is the sequence copied with its drafts.
      std::vector<int32_t> with_drafts;
      if (s.state->request.sampling.has_penalties()) {
        with_drafts = s.tokens;
        with_drafts.insert(with_drafts.end(), drafts.begin(), drafts.end());
      }
      // A constrained output masks each position with its grammar after the drafts
      // before it (a draft the grammar refuses is never drawn, so it ends the check).
      std::unique_ptr<OutputGrammar> grammar_after_drafts;
      if (s.json) grammar_after_drafts = s.json->clone();
      draws[i] = verify_by_drawing<Draw>(drafts, [&](size_t j) {
        const auto r = row + static_cast<int32_t>(j);
        const std::span<const int32_t> previous =
            with_drafts.empty() ? std::span<const int32_t>(s.tokens) : std::span<const int32_t>(with_drafts).first(s.tokens.size() + j);
        if (grammar_after_drafts && j > 0) {
          grammar_after_drafts->advance(tokenizer_.token_piece(drafts[j - 1], /*render_special=*/false));
        }
        return output_.draw(s, logits_row(r), first_max(r), previous, grammar_after_drafts.get());
      });
    });
    return draws;
  }

  // Emits the draws of sample i in order. With drafts, the accepted positions then count
  // as computed, and the blocks of rejected ones go back to the pool (their entries are
  // never read: a later step writes those positions again first).
  void emit_draws(const StepBatch& p, size_t i, std::vector<Draw> draws) {
    Sequence* s = p.samples[i];
    const int32_t k = p.sample_drafts[i];
    const auto accepted = static_cast<int32_t>(draws.size()) - 1;
    if (k > 0) proposer_.verified(*s, k, accepted, metrics_);
    for (Draw& draw : draws) {
      if (!output_.emit(*s, std::move(draw))) return;  // s ended
    }
    if (k == 0) return;
    s->n_computed += accepted;
    kv_.commit(s->blocks, s->tokens, s->n_computed);
    kv_.truncate(s->blocks, static_cast<int32_t>(s->tokens.size()));
  }

  // The prompt is done: choices 1..n-1 share its blocks and sample from the same logits.
  void fork_choices(Sequence& parent, std::span<float> logits) {
    parent.state->forked = true;
    const std::vector<float> copy(logits.begin(), logits.end());
    for (int32_t c = 1; c < parent.state->request.n; ++c) {
      auto seq = next_choice(parent, c, next_arrival_++, kv_.fork(parent.blocks), tokenizer_);
      Sequence* raw = seq.get();
      scheduler_.add_running(std::move(seq));
      std::vector<float> row(copy);
      output_.emit(*raw, output_.draw(*raw, row));
    }
  }

  void publish_gauges() {
    int64_t running = static_cast<int64_t>(scheduler_.running().size());
    int64_t waiting = static_cast<int64_t>(scheduler_.waiting().size());
    metrics_.set_gauges(running, waiting, kv_.usage(),
                        {kv_.pool().n_blocks(), kv_.pool().n_free(), kv_.windows().n_slots(), kv_.windows().n_held()});
  }

  model::Model& model_;
  const tokenizer::Tokenizer& tokenizer_;
  EngineConfig config_;
  KvSizing sizing_;
  ops::KvStorage kv_storage_;
  kv::KvCacheManager kv_;
  Scheduler scheduler_;
  // The prefix cache's disk tier (EngineConfig::kv_disk_dir), or null. Destroyed before
  // the cache it reads into.
  std::unique_ptr<kv::DiskBlockStore> disk_store_;
  std::unique_ptr<KvDiskTier> disk_tier_;
  OutputProcessor output_;
  DraftProposer proposer_;
  std::optional<std::chrono::steady_clock::time_point> last_interactive_;  // engine thread only
  BatchStepLimit batch_limit_{config_.batch_latency_factor};                // engine thread only
  bool batch_limited_ = false;  // the step being planned has a batch_limit_ (engine thread only)
  bool batch_abandonable_ = false;  // the step being planned may be abandoned if it is batch work alone
  std::vector<float> logits_;  // [n_outputs, n_vocab] of the last step
  std::vector<int32_t> first_max_;  // [n_outputs]: first_max_index of each logits row
  uint64_t next_arrival_ = 0;

  std::mutex mutex_;  // guards the fields below
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::shared_ptr<RequestState>> incoming_;
  uint64_t n_incoming_ = 0;
  // An interactive request is in incoming_ (set by submit, cleared when the engine takes
  // incoming_): stops a forward pass of batch work alone (model::Batch::abandon).
  std::atomic<bool> interactive_arrived_{false};
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
  const int64_t draft_bytes = config.speculative.mode == SpecMode::kDraft && config.speculative.draft_model != nullptr
                                  ? DraftModel::kv_cache_bytes(*config.speculative.draft_model, draft_blocks(config, sizing))
                                  : 0;
  return kv_shape(model, config, sizing.window > 0, sizing.n_blocks, sizing.n_window_slots).total_bytes() + draft_bytes;
}

Result<std::shared_ptr<RequestStream>> Engine::submit(Request request) { return impl_->submit(std::move(request)); }

const EngineMetrics& Engine::metrics() const { return impl_->metrics_; }

const EngineConfig& Engine::config() const { return impl_->config(); }

Engine::PoolCounters Engine::pool_counters() const { return impl_->pool_counters(); }

void Engine::shutdown(std::chrono::milliseconds grace) { impl_->shutdown(grace); }

std::optional<Engine::KvDiskState> Engine::kv_disk_state() const { return impl_->kv_disk_state(); }

void Engine::flush_kv_disk() { impl_->flush_kv_disk(); }

}  // namespace tokenmill::engine
