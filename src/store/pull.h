// `tokenmill pull` and Ollama's /api/pull: a GGUF file fetched over HTTP(S) into the
// store, resumable, checked, and installed atomically.
//
// Sources:
//   https://host/path/file.gguf (or http://)
//   hf:ORG/REPO/FILE.gguf        Hugging Face's resolve URL for the main branch
//   hf:ORG/REPO:QUANT            the one .gguf of the repository whose name has QUANT
// Hugging Face is reached at $HF_ENDPOINT (default https://huggingface.co), with
// "Authorization: Bearer $HF_TOKEN" when that is set.
//
// A pull takes an exclusive lock per source URL (flock on partial/<key>.lock), so two
// pulls of one file, in one process or several, share one download: the second waits
// and then finds the file installed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "store/http_fetch.h"
#include "store/model_store.h"

namespace tokenmill::store {

struct PullSource {
  std::string url;
  HeaderList headers;
  ModelName default_name;  // what it is called unless the caller names it
};

// InvalidArgument for a source of no known form; for hf:ORG/REPO:QUANT, reads the
// repository listing (NotFound when no file, or more than one, matches).
Result<PullSource> resolve_pull_source(const std::string& source);

// What a pull reports as it goes, in the order of Ollama's progress lines.
struct PullProgress {
  std::string status;     // "pulling manifest", "downloading sha256:<hex>", "verifying sha256 digest",
                          // "writing manifest", "success"
  std::string digest;     // "sha256:<hex>" while downloading ("" when not yet known)
  int64_t total = -1;
  int64_t completed = 0;
};

struct PullOptions {
  std::string expected_sha256;  // "": the server's announced hash, if any; always computed
  std::function<void(const PullProgress&)> on_progress;
  const std::atomic<bool>* cancel = nullptr;  // set to stop; what arrived is kept to resume
};

Result<StoreEntry> pull_model(ModelStore& store, const PullSource& source, const ModelName& name,
                              const PullOptions& options);

}  // namespace tokenmill::store
