// The model store: GGUF files kept once each under their content's digest, and small
// manifests that give them names, in a directory a person can read:
//
//   DIR/blobs/sha256-<hex>                 the files, named by their SHA-256
//   DIR/manifests/<name>/<tag>             JSON: the blob's digest and size, where it came from
//   DIR/partial/                           downloads in progress (store/pull.h)
//
// A manifest is written last (temporary name, fsync, rename), after its blob is in
// place, so a name never points at a half-written file; a blob is removed only when no
// manifest names it. `tokenmill import --link` may record a file outside the store
// instead of a blob (when it cannot be hard-linked in).
//
// Thread-safety: every method may run on any thread; operations that change the store
// are not atomic with respect to each other across processes beyond what the file
// system's renames give.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/model_name.h"

namespace tokenmill::store {

struct StoreEntry {
  ModelName name;
  std::string digest;      // 64 hex digits of the file's SHA-256
  int64_t size = 0;        // bytes
  std::string path;        // the file to load: the blob, or the linked file
  std::string source;      // where it came from: a URL, "hf:...", or the imported path
  int64_t modified_unix = 0;
  bool linked = false;     // path lies outside the store (import --link)
  std::string problem;     // why it cannot be loaded ("" when it can): a missing blob
};

class ModelStore {
 public:
  // Nothing is created until something is written.
  explicit ModelStore(std::string dir);

  // $XDG_DATA_HOME/tokenmill/models, else ~/.local/share/tokenmill/models.
  static std::string default_dir();

  const std::string& dir() const { return dir_; }
  std::string blob_path(const std::string& digest) const;  // DIR/blobs/sha256-<digest>
  std::string partial_dir() const;                          // DIR/partial
  // Creates blobs/, manifests/ and partial/.
  Status create_directories() const;

  // Every manifest, sorted by name; entries whose blob is missing carry a problem.
  // Manifests that cannot be read are reported in corrupt (path: reason), not listed.
  std::vector<StoreEntry> list(std::vector<std::string>* corrupt = nullptr) const;
  // NotFound when no manifest has the name; CorruptData when its manifest is unreadable;
  // NotFound naming the digest when its blob is gone.
  Result<StoreEntry> find(const ModelName& name) const;
  // Looks up the text as a name ("gemma3" means "gemma3:latest").
  Result<StoreEntry> find(const std::string& text) const;

  // Moves a finished file (in the same file system as the store, e.g. under partial/)
  // into blobs/ under digest, then names it. An existing blob with the digest is kept
  // and the file removed.
  Result<StoreEntry> install(const std::string& file, const std::string& digest, const ModelName& name,
                             const std::string& source);
  // Adds a local GGUF file: copied into blobs/ (hashing as it copies), or with link,
  // hard-linked in, or recorded where it lies when it is on another file system.
  Result<StoreEntry> import_file(const std::string& file, const ModelName& name, bool link);
  // A second name for the same blob.
  Result<StoreEntry> copy(const ModelName& from, const ModelName& to);
  // Removes the name, and the blob when no other name refers to it.
  Status remove(const ModelName& name);

 private:
  std::string manifest_path(const ModelName& name) const;
  Status write_manifest(const StoreEntry& entry) const;
  Result<StoreEntry> read_manifest(const std::string& path, const ModelName& name) const;

  std::string dir_;
};

}  // namespace tokenmill::store
