// tokenmill serve -m MODEL: the OpenAI- and Ollama-compatible HTTP server over the
// batching engine. Prints "listening on http://HOST:PORT" to stderr once it accepts
// connections; SIGTERM or SIGINT stops it gracefully (exit code 0).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/cpu_affinity.h"
#include "base/cpu_features.h"
#include "cli/chat_engine_options.h"
#include "cli/commands.h"
#include "cli/embedding_model.h"
#include "cli/http_limit_options.h"
#include "cli/model_path.h"
#include "engine/engine.h"
#include "ops/kv_storage.h"
#include "model/model.h"
#include "ops/cpu/cpu_backend.h"
#include "server/model_set.h"
#include "server/server.h"
#include "state/batch_state.h"
#include "store/model_store.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

namespace {

struct ServeOptions {
  std::string model = "default";
  std::string host = "127.0.0.1";
  int port = 8080;
  ChatEngineOptions engine;  // the chat models' engines (chat_engine_options.h)
  int n_io_threads = 2;
  std::string api_key;
  std::string api_key_file;
  server::ServerConfig server;  // the HTTP limits (http_limit_options.h); the rest is set in serve()
  double grace_seconds = 30;
  double drain_seconds = 0;
  std::string replica_id;  // "": the host name
  std::string metrics_compat = "vllm";
  std::string embedding_model;  // a BERT-family GGUF served on /v1/embeddings and /api/embed
  bool model_given = false;     // -m was on the command line
  bool no_webui = false;
  std::string data_dir;  // "": state::BatchState::default_dir()
  bool no_batch_api = false;
  double response_cache_mib = 0;  // off: benchmarks and evaluations repeat requests to run the model
  double response_cache_ttl = 3600;
  std::string models_dir;       // "": the default store, served only when it has models
  std::string keep_alive = "5m";
  int max_loaded = 3;
  int64_t max_memory_mib = 0;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

// The key is the file's first line without surrounding whitespace, so that it never
// appears in a command line (ps) or the environment of child processes.
Result<std::string> read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read the API key file '" + path + "'");
  std::string key;
  std::getline(in, key);
  const size_t begin = key.find_first_not_of(" \t\r");
  const size_t end = key.find_last_not_of(" \t\r");
  key = begin == std::string::npos ? "" : key.substr(begin, end - begin + 1);
  if (key.empty()) return invalid_argument("the API key file '" + path + "' has no key on its first line");
  return key;
}

// The host name, as Kubernetes sets it to the pod's name; "" when it has none.
std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

// A replica id goes into a response header and metric labels: letters, digits and . _ : -
bool valid_replica_id(const std::string& id) {
  if (id.empty() || id.size() > 253) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-';
  });
}

// Blocks until one of signals arrives or seconds pass; true when a signal came.
bool wait_for_signal(const sigset_t& signals, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec timeout{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    if (sigtimedwait(&signals, nullptr, &timeout) > 0) return true;
    if (errno == EAGAIN) return false;  // EINTR: wait on
  }
}

int serve(ServeOptions options) {
  // Signals are taken by sigwait below; block them before any thread starts so that
  // every thread inherits the mask and none is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not a signal

  if (!options.api_key_file.empty()) {
    auto key = read_api_key_file(options.api_key_file);
    if (!key.ok()) return fail(key.status().message());
    options.api_key = std::move(key).value();
  }
  if (options.api_key.empty()) {
    if (const char* key = std::getenv("TOKENMILL_API_KEY")) options.api_key = key;
  }

  if (options.replica_id.empty()) options.replica_id = host_name();
  if (!options.replica_id.empty() && !valid_replica_id(options.replica_id)) {
    return fail("--replica-id '" + options.replica_id + "' must be 1-253 letters, digits, '.', '_', ':' or '-'");
  }

  // The store is served when named, or when the default one has models; a model is
  // pinned when -m names one, or when there is no store to serve.
  options.engine.kv_disk_default =
      (std::filesystem::path(options.data_dir.empty() ? state::BatchState::default_dir() : options.data_dir) / "kv-cache")
          .string();
  const std::string store_dir = options.models_dir.empty() ? store::ModelStore::default_dir() : options.models_dir;
  auto store = std::make_unique<store::ModelStore>(store_dir);
  if (options.models_dir.empty() && store->list().empty()) store.reset();
  const std::vector<int> cpus = allowed_cpus();
  std::unique_ptr<server::LoadedModel> pinned;
  int n_compute = options.engine.n_threads > 0 ? options.engine.n_threads : static_cast<int>(cpus.size());
  // An embedding model given to -m is served as what it is: /v1/embeddings and /api/embed
  // under its name, and no chat model.
  std::string embedding_name;
  bool embedding_as_model = false;
  if (options.model_given) {
    auto resolved = resolve_model(options.model, store_dir);
    if (resolved.ok() && EmbeddingModel::is_embedding_file(resolved->path)) {
      if (!options.embedding_model.empty()) {
        return fail("-m names an embedding model and --embedding-model another; a server serves one embedding model");
      }
      options.embedding_model = resolved->path;
      embedding_name = resolved->name;
      embedding_as_model = true;
    }
  }
  if ((options.model_given || !store) && !embedding_as_model) {
    auto resolved = resolve_model(options.model, store_dir);
    if (!resolved.ok()) return fail(resolved.status().message());
    auto loaded = load_chat_model(options.engine, resolved->path, resolved->name, /*verbose=*/true);
    if (!loaded.ok()) return fail(loaded.status().to_string());
    pinned = std::move(loaded).value();
    n_compute = pinned->model->backend().n_threads();
  }
  server::ModelSetConfig set_config;
  if (auto keep_alive = server::parse_keep_alive(options.keep_alive); keep_alive.ok()) {
    set_config.default_keep_alive = *keep_alive;
  } else {
    return fail("--keep-alive: " + keep_alive.status().message());
  }
  set_config.max_loaded = options.max_loaded;
  set_config.memory_budget = options.max_memory_mib << 20;
  // Store models: chat models, or embedding models for the embedding routes.
  server::ModelLoader loader = [options, n_compute](const std::string& path,
                                                    const std::string& name) -> Result<std::unique_ptr<server::LoadedModel>> {
    if (!EmbeddingModel::is_embedding_file(path)) return load_chat_model(options.engine, path, name, /*verbose=*/false);
    auto embedding = EmbeddingModel::load(path, n_compute, /*verbose=*/false, name);
    if (!embedding.ok()) return embedding.status();
    auto loaded = std::make_unique<server::LoadedModel>();
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    loaded->memory_bytes = ec ? 0 : static_cast<int64_t>(bytes);
    loaded->embeddings = std::move(embedding).value();
    return loaded;
  };
  server::ModelSet models(std::move(pinned), std::move(store), loader, set_config);
  const bool pin = pin_threads(options.engine, n_compute);
  if (pin) {
    std::fprintf(stderr, "threads: %d compute, one pinned to each CPU (the engine's on CPU %d); %d HTTP I/O on the others\n",
                 n_compute, cpus[0], options.n_io_threads);
  } else {
    std::fprintf(stderr, "threads: %d compute, %d HTTP I/O\n", n_compute, options.n_io_threads);
  }

  // The embedding model, beside the chat model: its own encoder, tokenizer and batching thread.
  std::unique_ptr<EmbeddingModel> embeddings;
  if (!options.embedding_model.empty()) {
    auto loaded = EmbeddingModel::load(options.embedding_model, n_compute, /*verbose=*/true, embedding_name);
    if (!loaded.ok()) return fail((embedding_as_model ? "-m: " : "--embedding-model: ") + loaded.status().to_string());
    embeddings = std::move(loaded).value();
  }
  server::ServerConfig server_config = options.server;
  server_config.http.host = options.host;
  server_config.http.port = static_cast<uint16_t>(options.port);
  server_config.http.n_io_threads = options.n_io_threads;
  if (pin) server_config.http.io_cpus.assign(cpus.begin() + 1, cpus.end());
  server_config.api_key = options.api_key;
  server_config.replica_id = options.replica_id;
  server_config.vllm_metrics = options.metrics_compat == "vllm";
  server_config.webui = !options.no_webui;
  server_config.response_cache_bytes = static_cast<int64_t>(options.response_cache_mib * (1 << 20));
  server_config.response_cache_ttl = std::chrono::milliseconds(static_cast<int64_t>(options.response_cache_ttl * 1000));
  // The Files and Batches APIs keep their state in the data directory; a second server on
  // the same directory serves without them rather than run the same batches twice.
  std::unique_ptr<state::BatchState> batch_state;
  if (!options.no_batch_api) {
    const std::string dir = options.data_dir.empty() ? state::BatchState::default_dir() : options.data_dir;
    auto opened = state::BatchState::open(dir);
    if (opened.ok()) {
      batch_state = std::move(opened).value();
      server_config.batch_state = batch_state.get();
      std::fprintf(stderr, "files and batches: %s\n", dir.c_str());
    } else if (opened.status().code() == ErrorCode::kResourceExhausted && options.data_dir.empty()) {
      std::fprintf(stderr, "files and batches: off (%s)\n", opened.status().message().c_str());
    } else {
      return fail("--data-dir: " + opened.status().message());
    }
  }
  server::Server server(server_config, models, embeddings ? &embeddings->served() : nullptr);
  if (Status s = server.start(); !s.ok()) return fail(s.to_string());

  std::fprintf(stderr, "kernels: %s on %s\n", cpu_features().kernel_set(), cpu_brand().c_str());
  if (const server::ModelLease served = models.pinned()) {
    const engine::EngineConfig& config = served->engine().config();
    std::fprintf(stderr, "model %s: context %d tokens per sequence, prefix caching %s, speculation %s%s\n",
                 served->name().c_str(), served->max_context(), config.prefix_caching ? "on" : "off",
                 spec_mode_name(config.speculative.mode),
                 options.api_key.empty() ? "" : ", API key required");
  }
  if (const store::ModelStore* served_store = models.store()) {
    std::fprintf(stderr, "model store %s: %zu models, loaded on request (keep_alive %s, at most %d at once)\n",
                 served_store->dir().c_str(), served_store->list().size(), options.keep_alive.c_str(),
                 options.max_loaded);
  }
  const std::string shown_host = options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  std::fprintf(stderr, "listening on http://%s:%u\n", shown_host.c_str(), static_cast<unsigned>(server.port()));
  std::fflush(stderr);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  const char* signal_name = signal_number == SIGTERM ? "SIGTERM" : "SIGINT";
  // Not ready first, still serving, so that balancers move new work elsewhere before the
  // listener closes; a second signal cuts the wait short.
  server.stop_being_ready();
  if (options.drain_seconds > 0) {
    std::fprintf(stderr, "%s: not ready; serving %.0f s more while balancers notice\n", signal_name,
                 options.drain_seconds);
    std::fflush(stderr);
    wait_for_signal(signals, options.drain_seconds);
  }
  std::fprintf(stderr, "%s: finishing requests in flight (up to %.0f s), then exiting\n", signal_name,
               options.grace_seconds);
  server.shutdown(std::chrono::milliseconds(static_cast<int64_t>(options.grace_seconds * 1000)));
  if (embeddings) embeddings->shutdown();  // its last answers reach the server before it goes
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the OpenAI and Ollama HTTP APIs");
  cmd->add_option("-m,--model", o->model,
                  "GGUF file, a model of the store (NAME[:TAG]), or 'default'; an embedding model (BERT family) is "
                  "served on /v1/embeddings and /api/embed")
      ->capture_default_str();
  cmd->add_option("--models-dir", o->models_dir,
                  "Serve every model of this store by name, loading each on request (default: " +
                      store::ModelStore::default_dir() + ", when it has models)");
  cmd->add_flag("--no-webui", o->no_webui, "Do not serve the chat page at / (browsers get plain text)");
  cmd->add_option("--data-dir", o->data_dir,
                  "Where the Files and Batches APIs keep their state (default: " + state::BatchState::default_dir() +
                      ")");
  cmd->add_flag("--no-batch-api", o->no_batch_api, "Do not serve /v1/files and /v1/batches");
  cmd->add_option("--response-cache-mib", o->response_cache_mib,
                  "MiB of whole answers to deterministic requests (temperature 0 or a seed) kept to answer the same "
                  "request again (e.g. 64); 0: off")
      ->capture_default_str()->check(CLI::Range(0.0, 1048576.0));
  cmd->add_option("--response-cache-ttl", o->response_cache_ttl, "Seconds a cached answer may be served")
      ->capture_default_str()->check(CLI::Range(0.001, 365.0 * 86400));
  cmd->add_option("--keep-alive", o->keep_alive,
                  "How long a store model stays loaded after its last request: a duration (5m, 1h, 30s), "
                  "seconds, 0 (unload at once) or -1 (forever); a request's keep_alive overrides it")
      ->capture_default_str();
  cmd->add_option("--max-loaded", o->max_loaded, "Store models loaded at once; the least recently used idle one goes")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--max-memory", o->max_memory_mib,
                  "MiB that loaded store models (weights and KV caches) may take; 0: only --max-loaded limits them")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o->port, "Port to listen on (0: any free port)")->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--io-threads", o->n_io_threads, "Threads serving HTTP connections")->capture_default_str()
      ->check(CLI::Range(1, 64));
  add_chat_engine_options(cmd, o->engine);
  auto key = cmd->add_option("--api-key", o->api_key,
                             "Require 'Authorization: Bearer KEY' (default: $TOKENMILL_API_KEY)");
  cmd->add_option("--api-key-file", o->api_key_file,
                  "Read the API key from the first line of this file (keeps it out of ps and the environment)")
      ->excludes(key);
  cmd->add_option("--cors-origin", o->server.cors_origin,
                  "Let browser pages from this origin (e.g. http://localhost:3000, or *) call the API; off by default");
  add_http_limit_options(cmd, o->server);
  cmd->add_option("--embedding-model", o->embedding_model,
                  "Also serve this BERT-family GGUF (e.g. all-MiniLM-L6-v2) on /v1/embeddings and /api/embed");
  cmd->add_option("--drain-seconds", o->drain_seconds,
                  "On SIGTERM, how long to go on serving while /ready answers 503, before the listener closes")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--replica-id", o->replica_id,
                  "This replica's name in /v1/models, /metrics, /ready and the X-Tokenmill-Replica header "
                  "(default: the host name)");
  cmd->add_option("--metrics-compat", o->metrics_compat,
                  "Also publish the vllm:* metrics that LLM-aware routers read (vllm), or only tokenmill_* (none)")
      ->capture_default_str()->check(CLI::IsMember({"vllm", "none"}));
  cmd->add_option("--grace-seconds", o->grace_seconds, "On SIGTERM, how long requests in flight may take to finish")
      ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  cmd->callback([o, cmd] {
    o->model_given = cmd->count("--model") > 0;
    exit_code() = serve(*o);
  });
}

}  // namespace tokenmill::cli
