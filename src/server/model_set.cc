#include "server/model_set.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace tokenmill::server {

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr auto kReapInterval = std::chrono::milliseconds(200);
constexpr auto kWaitForRoom = std::chrono::seconds(60);

bool is_default_alias(const std::string& name) { return name.empty() || name == "default" || name == "tokenmill"; }

// Loads and unloads are part of the server's story on stderr, as its start-up lines are.
void announce(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void log_unload(const std::string& name, const char* why) { announce("unloaded " + name + " (" + why + ")"); }

}  // namespace

LoadedModel::~LoadedModel() {
  // The engine reads the model and tokenizer until its thread stops; the served model
  // points at all three.
  served.reset();
  engine.reset();
  tokenizer.reset();
  model.reset();
  embeddings.reset();
}

ModelSet::ModelSet(std::unique_ptr<LoadedModel> pinned, std::unique_ptr<store::ModelStore> store, ModelLoader loader,
                   ModelSetConfig config)
    : config_(config), pinned_(std::move(pinned)), store_(std::move(store)), loader_(std::move(loader)) {
  if (pinned_) pinned_lease_ = ModelLease(pinned_->served.get(), [](const ServedModel*) {});
  reaper_ = std::thread([this] { reap(); });
}

ModelSet::~ModelSet() {
  std::vector<std::unique_ptr<LoadedModel>> gone;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [name, slot] : slots_) {
      if (slot->loaded) gone.push_back(std::move(slot->loaded));
    }
  }
  changed_.notify_all();
  reaper_.join();
  gone.clear();
  pinned_lease_.reset();
  pinned_.reset();
}

ModelLease ModelSet::pinned() const { return pinned_lease_; }

Result<std::string> ModelSet::resolve(const std::string& name, std::string* path) const {
  if (pinned_ && (is_default_alias(name) || pinned_->served->answers_to(name))) return std::string();
  if (!store_) return not_found("The model '" + name + "' does not exist");
  if (is_default_alias(name)) {
    const std::vector<store::StoreEntry> entries = store_->list();
    if (entries.size() != 1) {
      return not_found("The model '" + name + "' does not exist: name one of the " +
                       std::to_string(entries.size()) + " models of the store (GET /v1/models lists them)");
    }
    *path = entries[0].path;
    return entries[0].name.full();
  }
  auto parsed = store::parse_model_name(name);
  if (!parsed.ok()) return parsed.status();
  auto entry = store_->find(*parsed);
  if (!entry.ok()) {
    if (entry.status().code() == ErrorCode::kNotFound && entry.status().message().find("cannot be loaded") == std::string::npos) {
      return not_found("The model '" + name + "' does not exist");
    }
    return entry.status();
  }
  *path = entry->path;
  return entry->name.full();
}

bool ModelSet::knows(const std::string& name) const {
  std::string path;
  return resolve(name, &path).ok();
}

void ModelSet::count_lease(Slot& slot, std::optional<Ms> keep_alive) {
  ++slot.n_leases;
  slot.keep_alive = keep_alive.value_or(config_.default_keep_alive);
  slot.expires.reset();
}

void ModelSet::release(const std::shared_ptr<Slot>& slot) {
  std::unique_ptr<LoadedModel> gone;
  {
    std::lock_guard lock(mu_);
    --slot->n_leases;
    slot->last_used = Clock::now();
    if (slot->n_leases == 0) {
      if (slot->keep_alive >= Ms(0)) slot->expires = slot->last_used + slot->keep_alive;
      if (slot->unload_when_idle) slot->expires = slot->last_used;
    }
  }
  changed_.notify_all();  // the reaper unloads expired models, waiting loads may find room
}

int64_t ModelSet::estimate_bytes(const std::string& path) const {
  std::error_code ec;
  const auto file = std::filesystem::file_size(path, ec);
  int64_t kv = pinned_ ? pinned_->kv_bytes : 0;
  for (const auto& [name, slot] : slots_) {
    if (slot->loaded) kv = std::max(kv, slot->loaded->kv_bytes);
  }
  return (ec ? 0 : static_cast<int64_t>(file)) + kv;
}

std::vector<std::unique_ptr<LoadedModel>> ModelSet::make_room(int64_t bytes, bool* fits) {
  std::vector<std::unique_ptr<LoadedModel>> gone;
  while (true) {
    int n_loaded = 0;
    int64_t used = 0;
    for (const auto& [name, slot] : slots_) {
      if (slot->loaded || slot->loading) ++n_loaded;
      if (slot->loaded) used += slot->loaded->memory_bytes;
    }
    const bool count_ok = n_loaded < config_.max_loaded;
    const bool memory_ok = config_.memory_budget <= 0 || n_loaded == 0 || used + bytes <= config_.memory_budget;
    if (count_ok && memory_ok) {
      *fits = true;
      return gone;
    }
    // The least recently used model that no request holds.
    std::shared_ptr<Slot> victim;
    for (const auto& [name, slot] : slots_) {
      if (!slot->loaded || slot->n_leases > 0) continue;
      if (!victim || slot->last_used < victim->last_used) victim = slot;
    }
    if (!victim) {
      *fits = false;
      return gone;
    }
    log_unload(victim->loaded->name(), "the least recently used, to make room");
    gone.push_back(std::move(victim->loaded));
    victim->expires.reset();
  }
}

Result<ModelLease> ModelSet::acquire(const std::string& name, std::optional<Ms> keep_alive) {
  std::string path;
  auto key = resolve(name, &path);
  if (!key.ok()) return key.status();
  if (key->empty()) return pinned_lease_;
  auto slot = hold(*key, path, keep_alive);
  if (!slot.ok()) return slot.status();
  if ((*slot)->loaded->served == nullptr) {
    release(*slot);
    return invalid_argument("'" + *key +
                            "' is an embedding model: it answers /v1/embeddings and /api/embed, not chat or text "
                            "generation");
  }
  return ModelLease((*slot)->loaded->served.get(), [this, held = *slot](const ServedModel*) { release(held); });
}

Result<EmbeddingsLease> ModelSet::acquire_embeddings(const std::string& name, std::optional<Ms> keep_alive) {
  std::string path;
  auto key = resolve(name, &path);
  if (!key.ok()) return key.status();
  const std::string not_embedding = "' is a chat model, not an embedding model: /v1/embeddings and /api/embed take "
                                    "a BERT-family model (e.g. all-MiniLM-L6-v2)";
  if (key->empty()) return invalid_argument("'" + pinned_->served->name() + not_embedding);
  auto slot = hold(*key, path, keep_alive);
  if (!slot.ok()) return slot.status();
  if ((*slot)->loaded->embeddings == nullptr) {
    release(*slot);
    return invalid_argument("'" + *key + not_embedding);
  }
  return EmbeddingsLease(&(*slot)->loaded->embeddings->served(),
                         [this, held = *slot](const ServedEmbeddings*) { release(held); });
}

Result<std::shared_ptr<ModelSet::Slot>> ModelSet::hold(const std::string& key, const std::string& path,
                                                       std::optional<Ms> keep_alive) {
  std::vector<std::unique_ptr<LoadedModel>> gone;
  std::shared_ptr<Slot> slot;
  {
    std::unique_lock lock(mu_);
    auto& entry = slots_[key];
    if (!entry) entry = std::make_shared<Slot>();
    slot = entry;
    // Another request may be loading it: wait for that one load.
    changed_.wait(lock, [&] { return !slot->loading || stopping_; });
    if (stopping_) return resource_exhausted("the server is shutting down");
    if (slot->loaded) {
      count_lease(*slot, keep_alive);
      return slot;
    }
    const int64_t bytes = estimate_bytes(path);
    bool fits = false;
    const auto deadline = Clock::now() + kWaitForRoom;
    while (true) {
      auto freed = make_room(bytes, &fits);
      for (auto& f : freed) gone.push_back(std::move(f));
      if (fits || stopping_) break;
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
        freed = make_room(bytes, &fits);
        for (auto& f : freed) gone.push_back(std::move(f));
        break;
      }
    }
    if (!fits) {
      return resource_exhausted("cannot load '" + key + "': " + std::to_string(config_.max_loaded) +
                                " models are loaded and every one is answering requests (raise --max-loaded or "
                                "--max-memory)");
    }
    slot->loading = true;
    slot->error.clear();
  }
  gone.clear();  // unload outside the lock: engines join their threads

  const auto load_start = Clock::now();
  auto loaded = loader_(path, key);
  if (loaded.ok()) {
    char line[160];
    std::snprintf(line, sizeof line, "loaded %s (%.0f MiB) in %.2f s", key.c_str(),
                  static_cast<double>((*loaded)->memory_bytes) / (1 << 20),
                  std::chrono::duration<double>(Clock::now() - load_start).count());
    announce(line);
  } else {
    announce("loading " + key + " failed: " + loaded.status().message());
  }
  std::unique_lock lock(mu_);
  slot->loading = false;
  if (!loaded.ok()) {
    slot->error = loaded.status().message();
    lock.unlock();
    changed_.notify_all();
    return loaded.status();
  }
  slot->loaded = std::move(loaded).value();
  slot->last_used = Clock::now();
  count_lease(*slot, keep_alive);
  lock.unlock();
  changed_.notify_all();
  return slot;
}

bool ModelSet::unload(const std::string& name) {
  std::string path;
  auto key = resolve(name, &path);
  if (!key.ok() || key->empty()) return false;
  std::unique_ptr<LoadedModel> gone;
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(*key);
    if (it == slots_.end() || !it->second->loaded) return false;
    Slot& slot = *it->second;
    if (slot.n_leases > 0) {
      slot.unload_when_idle = true;
      return true;
    }
    log_unload(*key, "asked to");
    gone = std::move(slot.loaded);
    slot.expires.reset();
  }
  changed_.notify_all();
  return true;
}

std::optional<std::chrono::system_clock::time_point> ModelSet::expiry(const Slot& slot) const {
  const auto now_wall = std::chrono::system_clock::now();
  if (slot.n_leases > 0) {
    if (slot.keep_alive >= Ms(0)) return now_wall + slot.keep_alive;
  } else if (slot.expires) {
    return now_wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(*slot.expires - Clock::now());
  }
  return std::nullopt;
}

std::vector<LoadedInfo> ModelSet::loaded() const {
  std::vector<LoadedInfo> out;
  if (pinned_) out.push_back({pinned_lease_, pinned_->memory_bytes, std::nullopt, 0});
  std::lock_guard lock(mu_);
  for (const auto& [name, slot] : slots_) {
    if (!slot->loaded || slot->loaded->served == nullptr) continue;
    // A lease that does not count: /api/ps must not keep a model loaded.
    out.push_back({ModelLease(slot->loaded->served.get(), [](const ServedModel*) {}), slot->loaded->memory_bytes,
                   expiry(*slot), slot->n_leases});
  }
  return out;
}

std::vector<LoadedEmbeddingsInfo> ModelSet::loaded_embeddings() const {
  std::vector<LoadedEmbeddingsInfo> out;
  std::lock_guard lock(mu_);
  for (const auto& [name, slot] : slots_) {
    if (!slot->loaded || slot->loaded->embeddings == nullptr) continue;
    out.push_back({EmbeddingsLease(&slot->loaded->embeddings->served(), [](const ServedEmbeddings*) {}),
                   slot->loaded->memory_bytes, expiry(*slot), slot->n_leases});
  }
  return out;
}

Result<gguf::FileSummary> ModelSet::summary(const store::StoreEntry& entry) const {
  {
    std::lock_guard lock(mu_);
    if (auto it = summaries_.find(entry.digest); it != summaries_.end()) return it->second;
  }
  auto file = gguf::File::open(entry.path);
  if (!file.ok()) return file.status();
  gguf::FileSummary s = gguf::summarize(*file);
  std::lock_guard lock(mu_);
  summaries_[entry.digest] = s;
  return s;
}

int32_t ModelSet::max_seqs() const {
  int32_t out = pinned_ ? pinned_->engine->config().max_seqs : 0;
  std::lock_guard lock(mu_);
  for (const auto& [name, slot] : slots_) {
    if (slot->loaded && slot->loaded->engine) out = std::max(out, slot->loaded->engine->config().max_seqs);
  }
  return out > 0 ? out : 256;
}

void ModelSet::shutdown_engines(std::chrono::milliseconds grace) {
  std::vector<engine::Engine*> engines;
  if (pinned_) engines.push_back(pinned_->engine.get());
  {
    std::lock_guard lock(mu_);
    stopping_ = true;  // no new loads
    for (const auto& [name, slot] : slots_) {
      if (slot->loaded && slot->loaded->engine) engines.push_back(slot->loaded->engine.get());
    }
  }
  changed_.notify_all();
  // One grace for all: each engine gets what is left of it.
  const auto deadline = Clock::now() + grace;
  for (engine::Engine* e : engines) {
    const auto left = std::max(Ms(0), std::chrono::duration_cast<Ms>(deadline - Clock::now()));
    e->shutdown(left);
  }
}

void ModelSet::reap() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    changed_.wait_for(lock, kReapInterval);
    std::vector<std::unique_ptr<LoadedModel>> gone;
    const auto now = Clock::now();
    for (auto& [name, slot] : slots_) {
      if (slot->loaded && slot->n_leases == 0 && slot->expires && *slot->expires <= now) {
        log_unload(name, slot->unload_when_idle ? "asked to" : "idle past its keep_alive");
        gone.push_back(std::move(slot->loaded));
        slot->expires.reset();
        slot->unload_when_idle = false;
      }
    }
    if (gone.empty()) continue;
    lock.unlock();
    gone.clear();  // engines stop outside the lock
    lock.lock();
  }
}

Result<Ms> parse_keep_alive_seconds(double seconds) {
  if (!std::isfinite(seconds)) return invalid_argument("keep_alive must be a finite number of seconds");
  if (seconds < 0) return Ms(-1);
  if (seconds > 1e9) return invalid_argument("keep_alive is too long");
  return Ms(static_cast<int64_t>(seconds * 1000));
}

Result<Ms> parse_keep_alive(const std::string& text) {
  if (text.empty()) return invalid_argument("keep_alive is empty");
  // A plain number is seconds.
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size()) return parse_keep_alive_seconds(number);
  // A Go duration: [-]N(h|m|s|ms)... ("1h30m", "5m", "10s", "-1m").
  size_t i = 0;
  bool negative = false;
  if (text[0] == '-') {
    negative = true;
    i = 1;
  }
  double total_ms = 0;
  bool any = false;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
    if (j == i) return invalid_argument("keep_alive '" + text + "' is not a duration (e.g. \"5m\", \"1h\", \"30s\")");
    const double value = std::strtod(text.substr(i, j - i).c_str(), nullptr);
    size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
    const std::string unit = text.substr(j, k - j);
    double scale = 0;
    if (unit == "h") scale = 3600e3;
    else if (unit == "m") scale = 60e3;
    else if (unit == "s") scale = 1e3;
    else if (unit == "ms") scale = 1;
    else return invalid_argument("keep_alive '" + text + "' has an unknown unit '" + unit + "' (h, m, s, ms)");
    total_ms += value * scale;
    any = true;
    i = k;
  }
  if (!any) return invalid_argument("keep_alive '" + text + "' is not a duration");
  if (negative) return Ms(-1);
  return parse_keep_alive_seconds(total_ms / 1000);
}

}  // namespace tokenmill::server
