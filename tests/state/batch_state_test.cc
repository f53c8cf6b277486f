// The data directory's database: migrations from an older schema keep the data, a newer
// schema is refused, one process holds a directory, results are written once per line.
#include "state/batch_state.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tokenmill::state {
namespace {

namespace fs = std::filesystem;

class BatchStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tokenmill-state-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BatchStateTest, MigratingFromTheFirstSchemaKeepsTheData) {
  fs::create_directories(dir_ / "files");
  {
    // A database as the first schema left it, with a file row in it.
    const std::vector<std::string> v1 = {
        "CREATE TABLE files (id TEXT PRIMARY KEY, purpose TEXT NOT NULL, filename TEXT NOT NULL,"
        "  bytes INTEGER NOT NULL, created_at INTEGER NOT NULL);"
        "CREATE INDEX files_by_time ON files (created_at, id);"
        "CREATE TABLE batches (id TEXT PRIMARY KEY, status TEXT NOT NULL, object TEXT NOT NULL,"
        "  created_at INTEGER NOT NULL);"
        "CREATE INDEX batches_by_time ON batches (created_at, id);"
        "CREATE TABLE batch_results (batch_id TEXT NOT NULL, line INTEGER NOT NULL, custom_id TEXT NOT NULL,"
        "  is_error INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY (batch_id, line));"};
    auto db = Database::open((dir_ / "state.db").string(), v1);
    ASSERT_TRUE(db.ok()) << db.status().to_string();
    EXPECT_EQ((*db)->schema_version(), 1);
    ASSERT_TRUE((*db)->run("INSERT INTO files VALUES ('file-old', 'batch', 'a.jsonl', 3, 1)").ok());
  }
  auto state = BatchState::open(dir_.string());
  ASSERT_TRUE(state.ok()) << state.status().to_string();
  auto file = (*state)->file("file-old");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->filename, "a.jsonl");
  // The second schema's table is there.
  ASSERT_TRUE((*state)->put_completion({"chatcmpl-1", "m", 5, "{\"k\": \"v\"}", "{}", "{}"}).ok());
  EXPECT_EQ((*state)->list_completions("", {{"k", "v"}}, "", 10, true).size(), 1u);
  EXPECT_EQ((*state)->list_completions("", {{"k", "w"}}, "", 10, true).size(), 0u);
}

TEST_F(BatchStateTest, ANewerSchemaIsRefused) {
  fs::create_directories(dir_);
  {
    auto db = Database::open((dir_ / "state.db").string(), {"CREATE TABLE a (x)", "CREATE TABLE b (x)",
                                                            "CREATE TABLE c (x)"});
    ASSERT_TRUE(db.ok());
  }
  auto state = BatchState::open(dir_.string());
  EXPECT_EQ(state.status().code(), ErrorCode::kUnsupported);
}

TEST_F(BatchStateTest, OneProcessHoldsADirectoryAndResultsAreWrittenOnce) {
  auto state = BatchState::open(dir_.string());
  ASSERT_TRUE(state.ok());
  auto second = BatchState::open(dir_.string());
  EXPECT_EQ(second.status().code(), ErrorCode::kResourceExhausted);
  ASSERT_TRUE((*state)->add_result("batch_1", {3, "c", false, "{\"first\": true}"}).ok());
  ASSERT_TRUE((*state)->add_result("batch_1", {3, "c", false, "{\"first\": false}"}).ok());
  const auto rows = (*state)->results("batch_1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].json, "{\"first\": true}");
  EXPECT_EQ((*state)->lines_done("batch_1"), std::set<int64_t>({3}));
}

TEST_F(BatchStateTest, TheWriteAheadLogStaysSmall) {
  auto state = BatchState::open(dir_.string());
  ASSERT_TRUE(state.ok());
  // 8 MiB of results: SQLite's defaults would let the log grow to 4 MiB between
  // checkpoints and keep that size; ours checkpoint at 1 MiB and cut it back.
  const std::string json = "{\"body\": \"" + std::string(2000, 'x') + "\"}";
  uintmax_t largest = 0;
  for (int64_t line = 0; line < 4096; ++line) {
    ASSERT_TRUE((*state)->add_result("batch_1", {line, "c" + std::to_string(line), false, json}).ok());
    std::error_code error;
    const uintmax_t size = fs::file_size(dir_ / "state.db-wal", error);
    if (!error) largest = std::max(largest, size);
  }
  EXPECT_GT(largest, 0u);
  EXPECT_LT(largest, 2u << 20);
  EXPECT_EQ((*state)->results("batch_1").size(), 4096u);
}

TEST_F(BatchStateTest, AFileIsNamedOnlyOnceItsBytesAreInPlace) {
  auto state = BatchState::open(dir_.string());
  ASSERT_TRUE(state.ok());
  const std::string temp = (*state)->temp_path();
  std::ofstream(temp) << "{\"custom_id\": \"a\"}\n";
  auto file = (*state)->add_file(temp, "batch", "in.jsonl");
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(fs::file_size((*state)->file_path(file->id)), static_cast<uintmax_t>(file->bytes));
  ASSERT_TRUE((*state)->delete_file(file->id).ok());
  EXPECT_FALSE(fs::exists((*state)->file_path(file->id)));
  EXPECT_EQ((*state)->delete_file(file->id).code(), ErrorCode::kNotFound);
}

TEST_F(BatchStateTest, FilesLeftIncomingByADeadProcessAreRemovedOnOpen) {
  std::string kept_id;
  {
    auto state = BatchState::open(dir_.string());
    ASSERT_TRUE(state.ok());
    const std::string temp = (*state)->temp_path();
    std::ofstream(temp) << "done";
    auto kept = (*state)->add_file(temp, "user_data", "kept.txt");
    ASSERT_TRUE(kept.ok());
    kept_id = kept->id;
    // What a kill leaves: an upload half spooled, an output half written.
    std::ofstream((*state)->incoming_dir() + "/.incoming-upload-1-0") << "half an upload";
    std::ofstream((*state)->temp_path()) << "half an output";
  }
  auto reopened = BatchState::open(dir_.string());
  ASSERT_TRUE(reopened.ok());
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator((*reopened)->incoming_dir())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{kept_id});
}

}  // namespace
}  // namespace tokenmill::state
