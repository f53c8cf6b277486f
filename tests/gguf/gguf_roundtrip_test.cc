// Writer -> bytes -> File round trips: every metadata type, tensors of several types and
// shapes, alignments other than 32, hand-built v2 files, the typed getters, and
// Writer::write's temp-file-and-rename contract.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::gguf {
namespace {

namespace fs = std::filesystem;

// Values are equal when their types match and their contents match bit for bit (so NaN
// and -0.0 round trips count).
bool same_value(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (const Array* x = a.as_array()) {
    const Array* y = b.as_array();
    if (x->element_type != y->element_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i) {
      if (!same_value(x->items[i], y->items[i])) return false;
    }
    return true;
  }
  if (const auto* f = std::get_if<float>(&a.storage)) {
    return std::bit_cast<uint32_t>(*f) == std::bit_cast<uint32_t>(std::get<float>(b.storage));
  }
  if (const auto* d = std::get_if<double>(&a.storage)) {
    return std::bit_cast<uint64_t>(*d) == std::bit_cast<uint64_t>(std::get<double>(b.storage));
  }
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Array>) {
          return false;  // handled above
        } else {
          return x == std::get<T>(b.storage);
        }
      },
      a.storage);
}

Result<File> parse_writer(const Writer& w, std::vector<uint8_t>& bytes) {
  auto out = w.to_bytes();
  if (!out.ok()) return out.status();
  bytes = std::move(out).value();
  return File::parse(bytes);
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31);
  return v;
}

// Every value type, with edge values.
std::vector<KeyValue> all_value_kinds() {
  const std::vector<KeyValue> kvs = {
      {"u8", Value(uint8_t{255})},
      {"i8", Value(int8_t{-128})},
      {"u16", Value(uint16_t{65535})},
      {"i16", Value(int16_t{-32768})},
      {"u32", Value(uint32_t{4294967295u})},
      {"i32", Value(int32_t{std::numeric_limits<int32_t>::min()})},
      {"f32", Value(1.5f)},
      {"f32.nan", Value(std::numeric_limits<float>::quiet_NaN())},
      {"f32.neg_zero", Value(-0.0f)},
      {"bool.true", Value(true)},
      {"bool.false", Value(false)},
      {"str", Value(std::string("héllo \"wörld\"\n"))},
      {"str.empty", Value(std::string())},
      {"str.nul", Value(std::string("a\0b", 3))},
      {"u64", Value(std::numeric_limits<uint64_t>::max())},
      {"i64", Value(std::numeric_limits<int64_t>::min())},
      {"f64", Value(-2.25e300)},
      {"f64.inf", Value(std::numeric_limits<double>::infinity())},
      {"arr.u8", make_array(ValueType::kUint8, std::vector<uint8_t>{0, 1, 255})},
      {"arr.i8", make_array(ValueType::kInt8, std::vector<int8_t>{-1, 127})},
      {"arr.u16", make_array(ValueType::kUint16, std::vector<uint16_t>{7})},
      {"arr.i16", make_array(ValueType::kInt16, std::vector<int16_t>{-7, 8})},
      {"arr.u32", make_array(ValueType::kUint32, std::vector<uint32_t>{1, 2, 3})},
      {"arr.i32", make_array(ValueType::kInt32, std::vector<int32_t>{-3, 0, 3})},
      {"arr.f32", make_array(ValueType::kFloat32, std::vector<float>{0.25f, -1e30f})},
      {"arr.bool", make_array(ValueType::kBool, std::vector<Value>{Value(true), Value(false), Value(true)})},
      {"arr.u64", make_array(ValueType::kUint64, std::vector<uint64_t>{~uint64_t{0}})},
      {"arr.i64", make_array(ValueType::kInt64, std::vector<int64_t>{-1, 1})},
      {"arr.f64", make_array(ValueType::kFloat64, std::vector<double>{3.5})},
      {"arr.str", make_array(ValueType::kString, std::vector<std::string>{"<s>", "", "▁the", std::string("\0x", 2)})},
      {"arr.empty.u32", make_array(ValueType::kUint32, std::vector<uint32_t>{})},
      {"arr.empty.str", make_array(ValueType::kString, std::vector<std::string>{})},
      {"arr.empty.arr", make_array(ValueType::kArray, std::vector<Value>{})},
      {"arr.nested",
       make_array(ValueType::kArray,
                  std::vector<Value>{make_array(ValueType::kInt32, std::vector<int32_t>{1, 2}),
                                     make_array(ValueType::kInt32, std::vector<int32_t>{}),
                                     make_array(ValueType::kInt32, std::vector<int32_t>{3})})},
      {"arr.nested.str",
       make_array(ValueType::kArray,
                  std::vector<Value>{make_array(ValueType::kString, std::vector<std::string>{"a", "b"})})},
      {"arr.nested.3deep",
       make_array(ValueType::kArray,
                  std::vector<Value>{make_array(
                      ValueType::kArray, std::vector<Value>{make_array(ValueType::kUint8, std::vector<uint8_t>{9})})})},
  };
  return kvs;
}

TEST(GgufRoundTrip, EveryMetadataTypeInOrder) {
  Writer w;
  const std::vector<KeyValue> kvs = all_value_kinds();
  for (const KeyValue& kv : kvs) w.set(kv.key, kv.value);
  std::vector<uint8_t> bytes;
  auto file = parse_writer(w, bytes);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_TRUE(file->tensors().empty());
  EXPECT_EQ(file->data_offset() % 32, 0u);
  ASSERT_EQ(file->metadata().size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    SCOPED_TRACE(kvs[i].key);
    EXPECT_EQ(file->metadata()[i].key, kvs[i].key);
    EXPECT_TRUE(same_value(file->metadata()[i].value, kvs[i].value))
        << file->metadata()[i].value.to_display_string() << " vs " << kvs[i].value.to_display_string();
    ASSERT_NE(file->find(kvs[i].key), nullptr);
    EXPECT_EQ(file->find(kvs[i].key), &file->metadata()[i].value);
  }
  EXPECT_EQ(file->find("missing"), nullptr);

  // Bytes -> File -> Writer -> bytes is the identity.
  Writer again;
  for (const KeyValue& kv : file->metadata()) again.set(kv.key, kv.value);
  auto bytes_again = again.to_bytes();
  ASSERT_TRUE(bytes_again.ok());
  EXPECT_EQ(*bytes_again, bytes);
}

TEST(GgufRoundTrip, SetReplacesInPlace) {
  Writer w;
  w.set_u32("a", 1);
  w.set_string("b", "x");
  w.set_string("a", "replaced");
  EXPECT_TRUE(w.has("a"));
  EXPECT_FALSE(w.has("c"));
  std::vector<uint8_t> bytes;
  auto file = parse_writer(w, bytes);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->metadata().size(), 2u);
  EXPECT_EQ(file->metadata()[0].key, "a");
  EXPECT_EQ(file->get_string("a").value(), "replaced");
}

TEST(GgufRoundTrip, ArrayWithMixedElementTypesIsRefused) {
  Writer w;
  Array a;
  a.element_type = ValueType::kUint32;
  a.items = {Value(uint32_t{1}), Value(std::string("two"))};
  w.set("mixed", Value(a));
  auto bytes = w.to_bytes();
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find("mixed"), std::string::npos);
}

struct TensorCase {
  std::string name;
  TensorType type;
  std::vector<int64_t> shape;
  size_t n_bytes;
};

std::vector<TensorCase> tensor_cases() {
  return {
      {"f32.vec7", TensorType::kF32, {7}, 7 * 4},
      {"f16.3x5", TensorType::kF16, {3, 5}, 15 * 2},
      {"q4_0.64x3", TensorType::kQ4_0, {64, 3}, 2 * 3 * 18},
      {"q8_0.32x1x2", TensorType::kQ8_0, {32, 1, 2}, 2 * 34},
      {"q4_K.256x2", TensorType::kQ4_K, {256, 2}, 2 * 144},
      {"q6_K.512", TensorType::kQ6_K, {512}, 2 * 210},
      {"bf16.4d", TensorType::kBF16, {1, 1, 1, 3}, 3 * 2},
      {"i8.5", TensorType::kI8, {5}, 5},
      {"f64.1", TensorType::kF64, {1}, 8},
  };
}

void expect_tensors_round_trip(uint64_t alignment) {
  SCOPED_TRACE("alignment " + std::to_string(alignment));
  Writer w;
  w.set_string("general.architecture", "test");
  if (alignment != kDefaultAlignment) w.set_u32("general.alignment", static_cast<uint32_t>(alignment));
  const auto cases = tensor_cases();
  std::vector<std::vector<uint8_t>> datas;
  for (size_t i = 0; i < cases.size(); ++i) {
    datas.push_back(pattern(cases[i].n_bytes, static_cast<uint8_t>(i * 17 + 1)));
    ASSERT_TRUE(w.add_tensor(cases[i].name, cases[i].type, cases[i].shape, datas.back()).ok()) << cases[i].name;
  }
  std::vector<uint8_t> bytes;
  auto file = parse_writer(w, bytes);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->alignment(), alignment);
  EXPECT_EQ(file->data_offset() % alignment, 0u);
  EXPECT_EQ(file->file_size(), bytes.size());
  EXPECT_EQ(bytes.size() % alignment, 0u);
  ASSERT_EQ(file->tensors().size(), cases.size());
  uint64_t previous_end = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorInfo& t = file->tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.type, cases[i].type);
    EXPECT_EQ(t.shape, cases[i].shape);
    EXPECT_EQ(t.n_bytes, cases[i].n_bytes);
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_GE(t.offset, previous_end);  // in order, no overlap
    previous_end = t.offset + t.n_bytes;
    int64_t n_elements = 1;
    for (int64_t d : cases[i].shape) n_elements *= d;
    EXPECT_EQ(t.n_elements(), n_elements);
    EXPECT_EQ(t.n_rows(), n_elements / cases[i].shape[0]);
    EXPECT_EQ(file->find_tensor(t.name), &t);
    const auto data = file->tensor_data(t);
    EXPECT_EQ(data.data(), bytes.data() + file->data_offset() + t.offset);
    EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), datas[i]);
  }
  EXPECT_EQ(file->find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, TensorsWithDefaultAlignment) { expect_tensors_round_trip(32); }
TEST(GgufRoundTrip, TensorsWithAlignment1) { expect_tensors_round_trip(1); }
TEST(GgufRoundTrip, TensorsWithAlignment8) { expect_tensors_round_trip(8); }
TEST(GgufRoundTrip, TensorsWithAlignment64) { expect_tensors_round_trip(64); }
TEST(GgufRoundTrip, TensorsWithAlignment4096) { expect_tensors_round_trip(4096); }

TEST(GgufRoundTrip, AlignmentAsU64IsAccepted) {
  Writer w;
  w.set("general.alignment", Value(uint64_t{16}));
  ASSERT_TRUE(w.add_tensor("t", TensorType::kF32, {3}, pattern(12, 1)).ok());
  std::vector<uint8_t> bytes;
  auto file = parse_writer(w, bytes);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->alignment(), 16u);
}

TEST(GgufRoundTrip, WriterRefusesAnAlignmentTheReaderWouldReject) {
  for (const Value& bad : {Value(uint32_t{0}), Value(uint32_t{3}), Value(uint32_t{48}), Value(uint32_t{2u << 20}),
                           Value(std::string("32")), Value(32.0f), Value(true), Value(int32_t{-32})}) {
    SCOPED_TRACE(bad.to_display_string());
    Writer w;
    w.set("general.alignment", bad);
    ASSERT_TRUE(w.add_tensor("t", TensorType::kF32, {3}, pattern(12, 1)).ok());
    auto bytes = w.to_bytes();
    ASSERT_FALSE(bytes.ok());
    EXPECT_EQ(bytes.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bytes.status().message().find("general.alignment"), std::string::npos);
  }
}

TEST(GgufRoundTrip, AddTensorValidates) {
  Writer w;
  const auto data = pattern(16, 0);
  EXPECT_EQ(w.add_tensor("none", TensorType::kF32, {}, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("five", TensorType::kF32, {1, 1, 1, 1, 4}, data).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("zero", TensorType::kF32, {4, 0}, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("neg", TensorType::kF32, {-4}, data).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("short", TensorType::kF32, {5}, data).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("q4_0.33", TensorType::kQ4_0, {33}, pattern(18, 0)).code(), ErrorCode::kInvalidArgument);
  // Shapes whose element count or byte size overflow are refused; 2^62 f32 elements
  // once wrapped to 0 bytes and were accepted with no data.
  EXPECT_EQ(w.add_tensor("huge", TensorType::kF32, {int64_t{1} << 40, int64_t{1} << 40}, data).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("huge.bytes", TensorType::kF32, {int64_t{1} << 62}, {}).code(),
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(w.add_tensor("ok", TensorType::kF32, {4}, data).ok());
  EXPECT_EQ(w.add_tensor("ok", TensorType::kF32, {4}, data).code(), ErrorCode::kInvalidArgument);
  std::vector<uint8_t> bytes;
  auto file = parse_writer(w, bytes);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->tensors().size(), 1u);
}

// --- v2 files ----------------------------------------------------------------------------

class Bytes {
 public:
  template <typename T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    data.insert(data.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    data.insert(data.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& pad(size_t alignment) {
    while (data.size() % alignment != 0) data.push_back(0);
    return *this;
  }
  std::vector<uint8_t> data;
};

TEST(GgufRoundTrip, HandBuiltVersion2File) {
  // GGUF v2 differs from v3 only in endianness signalling, which we do not use.
  Bytes b;
  b.put<uint32_t>(0x46554747).put<uint32_t>(2).put<uint64_t>(2).put<uint64_t>(3);
  b.str("general.architecture").put<uint32_t>(8).str("llama");
  b.str("llama.block_count").put<uint32_t>(4).put<uint32_t>(2);
  b.str("tokenizer.ggml.scores").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(2).put<float>(-1.0f).put<float>(0.5f);
  b.str("tok_embd").put<uint32_t>(2).put<uint64_t>(2).put<uint64_t>(3).put<uint32_t>(0).put<uint64_t>(0);
  b.str("norm").put<uint32_t>(1).put<uint64_t>(2).put<uint32_t>(1).put<uint64_t>(32);
  b.pad(32);
  const size_t data_offset = b.data.size();
  for (int i = 0; i < 6; ++i) b.put<float>(static_cast<float>(i));
  b.pad(32);
  b.put<uint16_t>(0x3c00).put<uint16_t>(0xc000);

  auto file = File::parse(b.data);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->version(), 2u);
  EXPECT_EQ(file->data_offset(), data_offset);
  EXPECT_EQ(file->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(file->get_int("llama.block_count").value(), 2);
  const Array* scores = file->get_array("tokenizer.ggml.scores");
  ASSERT_NE(scores, nullptr);
  ASSERT_EQ(scores->items.size(), 2u);
  EXPECT_EQ(scores->items[1].as_double(), 0.5);
  ASSERT_EQ(file->tensors().size(), 2u);
  const TensorInfo* embd = file->find_tensor("tok_embd");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->shape, (std::vector<int64_t>{2, 3}));
  float values[6];
  ASSERT_EQ(file->tensor_data(*embd).size(), sizeof(values));
  std::memcpy(values, file->tensor_data(*embd).data(), sizeof(values));
  EXPECT_EQ(values[5], 5.0f);
  const TensorInfo* norm = file->find_tensor("norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type, TensorType::kF16);
  EXPECT_EQ(file->tensor_data(*norm).data(), b.data.data() + data_offset + 32);
  EXPECT_EQ(file->tensor_data(*norm).size(), 4u);
}

TEST(GgufRoundTrip, WriterOutputReadsAsVersion2) {
  Writer w;
  for (const KeyValue& kv : all_value_kinds()) w.set(kv.key, kv.value);
  ASSERT_TRUE(w.add_tensor("t", TensorType::kQ8_0, {32}, pattern(34, 5)).ok());
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok());
  std::vector<uint8_t> v2 = *bytes;
  v2[4] = 2;
  auto f3 = File::parse(*bytes);
  auto f2 = File::parse(v2);
  ASSERT_TRUE(f3.ok());
  ASSERT_TRUE(f2.ok()) << f2.status().message();
  EXPECT_EQ(f2->version(), 2u);
  ASSERT_EQ(f2->metadata().size(), f3->metadata().size());
  for (size_t i = 0; i < f2->metadata().size(); ++i) {
    EXPECT_TRUE(same_value(f2->metadata()[i].value, f3->metadata()[i].value)) << f2->metadata()[i].key;
  }
  EXPECT_EQ(f2->data_offset(), f3->data_offset());
}

// --- typed getters -----------------------------------------------------------------------

class GgufGetters : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const KeyValue& kv : all_value_kinds()) writer_.set(kv.key, kv.value);
    writer_.set("u64.small", Value(uint64_t{42}));
    writer_.set("i32.neg", Value(int32_t{-7}));
    auto file = parse_writer(writer_, bytes_);
    ASSERT_TRUE(file.ok()) << file.status().message();
    file_ = std::make_unique<File>(std::move(file).value());
  }
  Writer writer_;
  std::vector<uint8_t> bytes_;
  std::unique_ptr<File> file_;
};

TEST_F(GgufGetters, GetIntAcceptsEveryIntegerThatFits) {
  const File& f = *file_;
  EXPECT_EQ(f.get_int("u8").value(), 255);
  EXPECT_EQ(f.get_int("i8").value(), -128);
  EXPECT_EQ(f.get_int("u16").value(), 65535);
  EXPECT_EQ(f.get_int("i16").value(), -32768);
  EXPECT_EQ(f.get_int("u32").value(), 4294967295);
  EXPECT_EQ(f.get_int("i32").value(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(f.get_int("u64.small").value(), 42);
  EXPECT_EQ(f.get_int("i64").value(), std::numeric_limits<int64_t>::min());
  // A u64 past INT64_MAX does not fit.
  auto big = f.get_int("u64");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("is u64, expected an integer"), std::string::npos) << big.status().message();
}

TEST_F(GgufGetters, GetUintRejectsNegatives) {
  const File& f = *file_;
  EXPECT_EQ(f.get_uint("u64").value(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.get_uint("u32").value(), 4294967295u);
  EXPECT_EQ(f.get_uint("u8").value(), 255u);
  for (const char* key : {"i8", "i32.neg", "i64"}) {
    auto r = f.get_uint(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("non-negative"), std::string::npos);
  }
}

TEST_F(GgufGetters, GetDoubleAcceptsNumbersOnly) {
  const File& f = *file_;
  EXPECT_EQ(f.get_double("f32").value(), 1.5);
  EXPECT_EQ(f.get_double("f64").value(), -2.25e300);
  EXPECT_EQ(f.get_double("i32.neg").value(), -7.0);
  EXPECT_EQ(f.get_double("u64").value(), 18446744073709551615.0);
  EXPECT_TRUE(std::isnan(f.get_double("f32.nan").value()));
  EXPECT_EQ(f.get_double("bool.true").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f.get_double("str").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f.get_double("arr.f32").status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(GgufGetters, GetStringAndBoolAreStrict) {
  const File& f = *file_;
  EXPECT_EQ(f.get_string("str").value(), "héllo \"wörld\"\n");
  EXPECT_EQ(f.get_string("str.nul").value(), std::string("a\0b", 3));
  EXPECT_EQ(f.get_string("str.empty").value(), "");
  auto not_string = f.get_string("u32");
  ASSERT_FALSE(not_string.ok());
  EXPECT_EQ(not_string.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(not_string.status().message().find("'u32' is u32, expected a string"), std::string::npos)
      << not_string.status().message();
  EXPECT_TRUE(f.get_bool("bool.true").value());
  EXPECT_FALSE(f.get_bool("bool.false").value());
  EXPECT_EQ(f.get_bool("u8").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f.get_bool("str").status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(GgufGetters, MissingKeysAreNotFound) {
  const File& f = *file_;
  for (auto status : {f.get_string("nope").status(), f.get_int("nope").status(), f.get_uint("nope").status(),
                      f.get_double("nope").status(), f.get_bool("nope").status()}) {
    EXPECT_EQ(status.code(), ErrorCode::kNotFound);
    EXPECT_NE(status.message().find("'nope' is missing"), std::string::npos);
  }
  EXPECT_EQ(f.get_array("nope"), nullptr);
  EXPECT_EQ(f.get_array("u32"), nullptr);
}

TEST_F(GgufGetters, DefaultsApplyWhenMissingOrWrongType) {
  const File& f = *file_;
  EXPECT_EQ(f.get_string_or("str.empty", "x"), "");
  EXPECT_EQ(f.get_string_or("nope", "x"), "x");
  EXPECT_EQ(f.get_string_or("u8", "x"), "x");
  EXPECT_EQ(f.get_int_or("i16", 3), -32768);
  EXPECT_EQ(f.get_int_or("nope", 3), 3);
  EXPECT_EQ(f.get_int_or("u64", 3), 3);
  EXPECT_EQ(f.get_int_or("str", 3), 3);
  EXPECT_EQ(f.get_double_or("f32", 2.0), 1.5);
  EXPECT_EQ(f.get_double_or("str", 2.0), 2.0);
  EXPECT_EQ(f.get_bool_or("bool.false", true), false);
  EXPECT_EQ(f.get_bool_or("u8", true), true);
}

TEST_F(GgufGetters, ArraysKeepElementTypes) {
  const File& f = *file_;
  const Array* tokens = f.get_array("arr.str");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->element_type, ValueType::kString);
  ASSERT_EQ(tokens->items.size(), 4u);
  EXPECT_EQ(*tokens->items[2].as_string(), "▁the");
  EXPECT_EQ(*tokens->items[3].as_string(), std::string("\0x", 2));
  const Array* empty = f.get_array("arr.empty.arr");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->element_type, ValueType::kArray);
  EXPECT_TRUE(empty->items.empty());
  const Array* nested = f.get_array("arr.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->items.size(), 3u);
  EXPECT_EQ(nested->items[0].as_array()->element_type, ValueType::kInt32);
  EXPECT_EQ(nested->items[0].as_array()->items[1].as_int(), 2);
  EXPECT_TRUE(nested->items[1].as_array()->items.empty());
}

// --- Writer::write -----------------------------------------------------------------------

class GgufWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tokenmill_gguf_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    writer_.set_string("general.architecture", "llama");
    writer_.set_strings("tokenizer.ggml.tokens", {"a", "b"});
    ASSERT_TRUE(writer_.add_tensor("t", TensorType::kF16, {8, 2}, pattern(32, 9)).ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::vector<std::string> entries(const fs::path& dir) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::vector<uint8_t> read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  fs::path dir_;
  Writer writer_;
};

TEST_F(GgufWrite, WritesTheSameBytesAndNoTempFile) {
  const fs::path path = dir_ / "model.gguf";
  ASSERT_TRUE(writer_.write(path.string()).ok());
  auto bytes = writer_.to_bytes();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(read_all(path), *bytes);
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"model.gguf"});

  auto file = File::open(path.string());
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->path(), path.string());
  EXPECT_EQ(file->file_size(), bytes->size());
  file->prefetch();
  const TensorInfo* t = file->find_tensor("t");
  ASSERT_NE(t, nullptr);
  const auto data = file->tensor_data(*t);
  EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), pattern(32, 9));
}

TEST_F(GgufWrite, OverwritesAnExistingFile) {
  const fs::path path = dir_ / "model.gguf";
  std::ofstream(path) << "old contents";
  ASSERT_TRUE(writer_.write(path.string()).ok());
  EXPECT_EQ(read_all(path), *writer_.to_bytes());
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"model.gguf"});
}

TEST_F(GgufWrite, MissingDirectoryFailsCleanly) {
  const fs::path path = dir_ / "no_such_dir" / "model.gguf";
  Status status = writer_.write(path.string());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_NE(status.message().find("cannot create"), std::string::npos) << status.message();
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(GgufWrite, ReadOnlyDirectoryFailsCleanly) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const fs::path ro = dir_ / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  Status status = writer_.write((ro / "model.gguf").string());
  fs::permissions(ro, fs::perms::owner_all);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_TRUE(entries(ro).empty());
}

TEST_F(GgufWrite, TargetThatIsADirectoryFailsWithoutLeavingTheTempFile) {
  // The temp file is written, then rename() onto a non-empty directory fails.
  const fs::path target = dir_ / "target";
  fs::create_directories(target / "child");
  Status status = writer_.write(target.string());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_NE(status.message().find("cannot rename"), std::string::npos) << status.message();
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"target"});
  EXPECT_EQ(entries(target), std::vector<std::string>{"child"});
}

TEST_F(GgufWrite, ProducedTensorsAreWrittenAsStoredOnesAre) {
  // The same bytes through a producer give the same file.
  Writer produced;
  produced.set_string("general.architecture", "llama");
  produced.set_strings("tokenizer.ggml.tokens", {"a", "b"});
  ASSERT_TRUE(produced
                  .add_tensor_produced("t", TensorType::kF16, {8, 2},
                              Writer::Producer([](std::vector<uint8_t>& out) {
                                out = pattern(32, 9);
                                return Status();
                              }))
                  .ok());
  ASSERT_TRUE(produced.write((dir_ / "produced.gguf").string()).ok());
  ASSERT_TRUE(writer_.write((dir_ / "stored.gguf").string()).ok());
  auto a = File::open((dir_ / "produced.gguf").string());
  auto b = File::open((dir_ / "stored.gguf").string());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->file_size(), b->file_size());
  const auto ta = a->tensor_data(*a->find_tensor("t")), tb = b->tensor_data(*b->find_tensor("t"));
  EXPECT_TRUE(std::equal(ta.begin(), ta.end(), tb.begin(), tb.end()));
}

TEST_F(GgufWrite, AProducerThatFailsOrGivesTheWrongSizeLeavesNothing) {
  ASSERT_TRUE(writer_.add_tensor_produced("short", TensorType::kF32, {4}, Writer::Producer([](std::vector<uint8_t>& out) {
                                   out.assign(12, 0);  // 16 needed
                                   return Status();
                                 }))
                  .ok());
  Status status = writer_.write((dir_ / "x.gguf").string());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("produced 12 bytes, 16 expected"), std::string::npos) << status.message();
  Writer failing;
  ASSERT_TRUE(failing.add_tensor_produced("t", TensorType::kF32, {4}, Writer::Producer([](std::vector<uint8_t>&) {
                                   return io_error("source went away");
                                 }))
                  .ok());
  status = failing.write((dir_ / "y.gguf").string());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "source went away");
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(GgufWrite, OpenReportsMissingFile) {
  auto file = File::open((dir_ / "absent.gguf").string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tokenmill::gguf
