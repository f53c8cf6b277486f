#include "store/model_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/data_dir.h"
#include "base/durable_file.h"
#include "gguf/gguf_file.h"
#include "store/sha256.h"

namespace tokenmill::store {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr int kSchemaVersion = 1;

std::string errno_text() { return std::strerror(errno); }

Status check_gguf(const std::string& path) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return corrupt_data("'" + path + "' is not a usable GGUF file: " + file.status().message());
  return {};
}

int64_t mtime_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtime) : 0;
}

}  // namespace

ModelStore::ModelStore(std::string dir) : dir_(std::move(dir)) {}

std::string ModelStore::default_dir() { return (fs::path(user_data_dir()) / "models").string(); }

std::string ModelStore::blob_path(const std::string& digest) const {
  return (fs::path(dir_) / "blobs" / ("sha256-" + digest)).string();
}

std::string ModelStore::partial_dir() const { return (fs::path(dir_) / "partial").string(); }

std::string ModelStore::manifest_path(const ModelName& name) const {
  return (fs::path(dir_) / "manifests" / name.name / name.tag).string();
}

Status ModelStore::create_directories() const {
  for (const char* sub : {"blobs", "manifests", "partial"}) {
    std::error_code ec;
    fs::create_directories(fs::path(dir_) / sub, ec);
    if (ec) return io_error("cannot create '" + (fs::path(dir_) / sub).string() + "': " + ec.message());
  }
  return {};
}

Status ModelStore::write_manifest(const StoreEntry& entry) const {
  Json manifest = {{"schema_version", kSchemaVersion},
                   {"name", entry.name.name},
                   {"tag", entry.name.tag},
                   {"digest", "sha256-" + entry.digest},
                   {"size", entry.size},
                   {"source", entry.source},
                   {"created_at", static_cast<int64_t>(std::time(nullptr))}};
  if (entry.linked) manifest["path"] = entry.path;
  const std::string path = manifest_path(entry.name);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return io_error("cannot create '" + fs::path(path).parent_path().string() + "': " + ec.message());
  return write_file_durably(path, manifest.dump(2) + "\n");
}

Result<StoreEntry> ModelStore::read_manifest(const std::string& path, const ModelName& name) const {
  std::ifstream in(path);
  if (!in) return not_found("model '" + name.full() + "' is not in the store " + dir_);
  std::stringstream text;
  text << in.rdbuf();
  const Json manifest = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto corrupt = [&](const std::string& why) {
    return corrupt_data("the manifest of '" + name.full() + "' (" + path + ") is corrupt: " + why +
                        "; remove it with `tokenmill rm " + name.full() + "` or pull the model again");
  };
  if (!manifest.is_object()) return corrupt("not a JSON object");
  const auto version = manifest.find("schema_version");
  if (version == manifest.end() || !version->is_number_integer()) return corrupt("no schema_version");
  if (version->get<int64_t>() > kSchemaVersion) {
    return unsupported("the manifest of '" + name.full() + "' has schema version " +
                       std::to_string(version->get<int64_t>()) + ", newer than this tokenmill reads (" +
                       std::to_string(kSchemaVersion) + ")");
  }
  const auto digest = manifest.find("digest");
  const auto size = manifest.find("size");
  if (digest == manifest.end() || !digest->is_string() || !digest->get<std::string>().starts_with("sha256-") ||
      !is_sha256_hex(digest->get<std::string>().substr(7))) {
    return corrupt("no valid digest");
  }
  if (size == manifest.end() || !size->is_number_integer() || size->get<int64_t>() < 0) return corrupt("no valid size");
  StoreEntry entry;
  entry.name = name;
  entry.digest = digest->get<std::string>().substr(7);
  entry.size = size->get<int64_t>();
  if (const auto source = manifest.find("source"); source != manifest.end() && source->is_string()) {
    entry.source = source->get<std::string>();
  }
  const auto linked = manifest.find("path");
  if (linked != manifest.end()) {
    if (!linked->is_string() || linked->get<std::string>().empty()) return corrupt("'path' is not a file name");
    entry.linked = true;
    entry.path = linked->get<std::string>();
  } else {
    entry.path = blob_path(entry.digest);
  }
  entry.modified_unix = mtime_of(path);
  struct stat st {};
  if (::stat(entry.path.c_str(), &st) != 0) {
    entry.problem = "its file " + entry.path + " is missing; pull or import it again";
  } else if (st.st_size != entry.size) {
    entry.problem = "its file " + entry.path + " has " + std::to_string(st.st_size) + " bytes, the manifest says " +
                    std::to_string(entry.size);
  }
  return entry;
}

std::vector<StoreEntry> ModelStore::list(std::vector<std::string>* corrupt) const {
  std::vector<StoreEntry> out;
  const fs::path root = fs::path(dir_) / "manifests";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string file = it->path().filename().string();
    if (file.find(".tmp.") != std::string::npos) continue;  // a manifest being written
    const fs::path relative = fs::relative(it->path(), root, ec);
    const std::string text = relative.parent_path().generic_string() + ":" + file;
    auto name = parse_model_name(text);
    if (!name.ok()) {
      if (corrupt) corrupt->push_back(it->path().string() + ": " + name.status().message());
      continue;
    }
    auto entry = read_manifest(it->path().string(), *name);
    if (!entry.ok()) {
      if (corrupt) corrupt->push_back(it->path().string() + ": " + entry.status().message());
      continue;
    }
    out.push_back(std::move(entry).value());
  }
  std::sort(out.begin(), out.end(), [](const StoreEntry& a, const StoreEntry& b) { return a.name.full() < b.name.full(); });
  return out;
}

Result<StoreEntry> ModelStore::find(const ModelName& name) const {
  auto entry = read_manifest(manifest_path(name), name);
  if (!entry.ok()) return entry.status();
  if (!entry->problem.empty()) return not_found("model '" + name.full() + "' cannot be loaded: " + entry->problem);
  return entry;
}

Result<StoreEntry> ModelStore::find(const std::string& text) const {
  auto name = parse_model_name(text);
  if (!name.ok()) return name.status();
  return find(*name);
}

Result<StoreEntry> ModelStore::install(const std::string& file, const std::string& digest, const ModelName& name,
                                       const std::string& source) {
  if (Status s = create_directories(); !s.ok()) return s;
  if (Status s = check_gguf(file); !s.ok()) return s;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return io_error("cannot read '" + file + "': " + errno_text());
  const std::string blob = blob_path(digest);
  struct stat existing {};
  if (::stat(blob.c_str(), &existing) == 0 && existing.st_size == st.st_size) {
    ::unlink(file.c_str());  // the same bytes are already here
  } else if (Status s = rename_durably(file, blob); !s.ok()) {
    return s;
  }
  StoreEntry entry;
  entry.name = name;
  entry.digest = digest;
  entry.size = st.st_size;
  entry.path = blob;
  entry.source = source;
  if (Status s = write_manifest(entry); !s.ok()) return s;
  entry.modified_unix = mtime_of(manifest_path(name));
  return entry;
}

Result<StoreEntry> ModelStore::import_file(const std::string& file, const ModelName& name, bool link) {
  if (Status s = check_gguf(file); !s.ok()) return s;
  if (Status s = create_directories(); !s.ok()) return s;
  std::error_code ec;
  const std::string absolute = fs::absolute(file, ec).string();
  if (link) {
    auto digest = sha256_file(file);
    if (!digest.ok()) return digest.status();
    const std::string blob = blob_path(*digest);
    StoreEntry entry;
    entry.name = name;
    entry.digest = *digest;
    entry.source = absolute;
    if (::link(file.c_str(), blob.c_str()) == 0 || errno == EEXIST) {
      if (Status s = sync_directory(fs::path(blob).parent_path().string()); !s.ok()) return s;
      entry.path = blob;
    } else {
      // Another file system (or one without hard links): name the file where it lies.
      entry.path = absolute;
      entry.linked = true;
    }
    entry.size = static_cast<int64_t>(fs::file_size(entry.path, ec));
    if (Status s = write_manifest(entry); !s.ok()) return s;
    return find(name);
  }
  // Copy into partial/ while hashing, then install like a finished download.
  const std::string temp = (fs::path(partial_dir()) / ("import-" + std::to_string(::getpid()) + ".gguf")).string();
  {
    std::ifstream in(file, std::ios::binary);
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!in) return io_error("cannot read '" + file + "'");
    if (!out) return io_error("cannot create '" + temp + "'");
    Sha256 digest;
    std::vector<char> buffer(1 << 20);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const std::streamsize n = in.gcount();
      if (n <= 0) break;
      digest.update(buffer.data(), static_cast<size_t>(n));
      out.write(buffer.data(), n);
      if (!out) break;
    }
    out.flush();
    if (!out || in.bad()) {
      out.close();
      ::unlink(temp.c_str());
      return io_error("copying '" + file + "' into the store failed: " + errno_text());
    }
    out.close();
    const std::string hex = digest.hex();
    // fsync the copy before it gets a name.
    if (FILE* f = std::fopen(temp.c_str(), "rb")) {
      ::fsync(fileno(f));
      std::fclose(f);
    }
    auto entry = install(temp, hex, name, absolute);
    if (!entry.ok()) ::unlink(temp.c_str());
    return entry;
  }
}

Result<StoreEntry> ModelStore::copy(const ModelName& from, const ModelName& to) {
  auto entry = find(from);
  if (!entry.ok()) return entry.status();
  StoreEntry copied = *entry;
  copied.name = to;
  if (Status s = write_manifest(copied); !s.ok()) return s;
  return find(to);
}

Status ModelStore::remove(const ModelName& name) {
  const std::string path = manifest_path(name);
  auto entry = read_manifest(path, name);
  if (!entry.ok() && entry.status().code() == ErrorCode::kNotFound) return entry.status();
  if (::unlink(path.c_str()) != 0) return io_error("cannot remove '" + path + "': " + errno_text());
  // Empty name directories go too, up to manifests/.
  const fs::path root = fs::path(dir_) / "manifests";
  std::error_code ec;
  for (fs::path dir = fs::path(path).parent_path(); dir != root && fs::is_empty(dir, ec); dir = dir.parent_path()) {
    fs::remove(dir, ec);
  }
  if (Status s = sync_directory(fs::path(path).parent_path().string()); !s.ok() && fs::exists(fs::path(path).parent_path())) {
    return s;
  }
  if (!entry.ok() || entry->linked) return {};  // a corrupt manifest names no blob we trust
  for (const StoreEntry& other : list()) {
    if (other.digest == entry->digest) return {};
  }
  if (::unlink(blob_path(entry->digest).c_str()) != 0 && errno != ENOENT) {
    return io_error("cannot remove '" + blob_path(entry->digest) + "': " + errno_text());
  }
  return {};
}

}  // namespace tokenmill::store
