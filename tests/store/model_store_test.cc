// The model store on a temporary directory: names that cannot escape it, content-addressed
// blobs shared between names, manifests written whole, and clear errors for a corrupt
// manifest or a missing blob.
#include "store/model_store.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"
#include "store/sha256.h"

namespace tokenmill::store {
namespace {

namespace fs = std::filesystem;

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tokenmill-store-test-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A small valid GGUF file; tag changes its bytes.
  std::string tiny_gguf(const std::string& file, const std::string& tag) {
    gguf::Writer writer;
    writer.set_string("general.architecture", "llama");
    writer.set_string("general.name", tag);
    std::vector<float> data(32, 1.0f);
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
    EXPECT_TRUE(writer.add_tensor("t", gguf::TensorType::kF32, {32}, {bytes, data.size() * sizeof(float)}).ok());
    const std::string path = (root_ / file).string();
    EXPECT_TRUE(writer.write(path).ok());
    return path;
  }

  ModelName name(const std::string& text) { return *parse_model_name(text); }

  fs::path root_;
};

TEST(ModelName, ParsesNamesAndTags) {
  auto plain = parse_model_name("gemma3");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->full(), "gemma3:latest");
  auto tagged = parse_model_name("me/gemma-3.tuned:q4_K_M");
  ASSERT_TRUE(tagged.ok());
  EXPECT_EQ(tagged->name, "me/gemma-3.tuned");
  EXPECT_EQ(tagged->tag, "q4_K_M");
}

TEST(ModelName, RejectsNamesThatCouldLeaveTheStore) {
  const std::vector<std::string> bad_names = {"", "../x", "a/../b", "a/./b", "/abs", "a//b", ".hidden", "-flag",
                                              "a/b/c/d", "x:", "x:ta/g", "x:.tag", "x:t g", "sp ace", "a\\b",
                                              std::string(129, 'a')};
  for (const std::string& bad : bad_names) {
    EXPECT_FALSE(parse_model_name(bad).ok()) << bad;
  }
}

TEST_F(ModelStoreTest, ImportCopyAndRemoveShareOneBlob) {
  ModelStore store((root_ / "store").string());
  const std::string file = tiny_gguf("a.gguf", "a");
  auto imported = store.import_file(file, name("tiny"), /*link=*/false);
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  EXPECT_EQ(imported->digest, *sha256_file(file));
  EXPECT_EQ(imported->path, store.blob_path(imported->digest));
  EXPECT_TRUE(fs::exists(imported->path));

  ASSERT_TRUE(store.copy(name("tiny"), name("other:v1")).ok());
  const auto entries = store.list();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name.full(), "other:v1");
  EXPECT_EQ(entries[0].digest, entries[1].digest);

  ASSERT_TRUE(store.remove(name("tiny")).ok());
  EXPECT_TRUE(fs::exists(store.blob_path(imported->digest))) << "the other name still needs the blob";
  ASSERT_TRUE(store.remove(name("other:v1")).ok());
  EXPECT_FALSE(fs::exists(store.blob_path(imported->digest))) << "the last name took the blob with it";
  EXPECT_TRUE(store.list().empty());
  EXPECT_EQ(store.remove(name("tiny")).code(), ErrorCode::kNotFound);
}

TEST_F(ModelStoreTest, LinkedImportHardLinksTheFile) {
  ModelStore store((root_ / "store").string());
  const std::string file = tiny_gguf("linked.gguf", "l");
  auto entry = store.import_file(file, name("linked"), /*link=*/true);
  ASSERT_TRUE(entry.ok()) << entry.status().to_string();
  EXPECT_EQ(fs::hard_link_count(file), 2u);
  EXPECT_TRUE(fs::equivalent(file, entry->path));
}

TEST_F(ModelStoreTest, ANonGgufFileIsRefusedAndNothingIsNamed) {
  ModelStore store((root_ / "store").string());
  const std::string text = (root_ / "notes.txt").string();
  std::ofstream(text) << "not a model";
  auto entry = store.import_file(text, name("notes"), false);
  EXPECT_EQ(entry.status().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(store.list().empty());
  EXPECT_FALSE(fs::exists(root_ / "store" / "blobs") && !fs::is_empty(root_ / "store" / "blobs"));
}

TEST_F(ModelStoreTest, CorruptManifestAndMissingBlobAreClearErrors) {
  ModelStore store((root_ / "store").string());
  ASSERT_TRUE(store.import_file(tiny_gguf("a.gguf", "a"), name("good"), false).ok());
  auto gone = store.import_file(tiny_gguf("b.gguf", "b"), name("gone"), false);
  ASSERT_TRUE(gone.ok());
  fs::remove(gone->path);
  fs::create_directories(root_ / "store" / "manifests" / "broken");
  std::ofstream(root_ / "store" / "manifests" / "broken" / "latest") << "{\"schema_version\": 1, \"digest\": 7";

  std::vector<std::string> corrupt;
  const auto entries = store.list(&corrupt);
  ASSERT_EQ(entries.size(), 2u);  // good, and gone with its problem
  EXPECT_EQ(entries[0].name.full(), "gone:latest");
  EXPECT_NE(entries[0].problem.find("missing"), std::string::npos);
  EXPECT_TRUE(entries[1].problem.empty());
  ASSERT_EQ(corrupt.size(), 1u);
  EXPECT_NE(corrupt[0].find("broken"), std::string::npos);

  auto broken = store.find(name("broken"));
  EXPECT_EQ(broken.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(broken.status().message().find("tokenmill rm broken:latest"), std::string::npos);
  auto missing = store.find(name("gone"));
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
  EXPECT_TRUE(store.find(name("good")).ok());
  // A corrupt manifest can still be removed.
  EXPECT_TRUE(store.remove(name("broken")).ok());
}

TEST_F(ModelStoreTest, ManifestsFromANewerTokenmillAreNamedAsSuch) {
  ModelStore store((root_ / "store").string());
  fs::create_directories(root_ / "store" / "manifests" / "future");
  std::ofstream(root_ / "store" / "manifests" / "future" / "latest")
      << R"({"schema_version": 99, "digest": "sha256-)" << std::string(64, 'a') << R"(", "size": 1})";
  auto entry = store.find(name("future"));
  EXPECT_EQ(entry.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(entry.status().message().find("newer"), std::string::npos);
}

TEST(Sha256, KnownDigests) {
  Sha256 empty;
  EXPECT_EQ(empty.hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 abc;
  abc.update("abc", 3);
  EXPECT_EQ(abc.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(is_sha256_hex(std::string(64, 'F')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'g')));
}

}  // namespace
}  // namespace tokenmill::store
