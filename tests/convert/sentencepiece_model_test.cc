#include "convert/sentencepiece_model.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tokenmill::convert {
namespace {

// Protocol-buffer encoding, enough to write a ModelProto by hand.
void varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}
void key(std::vector<uint8_t>& out, uint32_t field, uint32_t wire) { varint(out, (field << 3) | wire); }
void bytes_field(std::vector<uint8_t>& out, uint32_t field, const std::vector<uint8_t>& b) {
  key(out, field, 2);
  varint(out, b.size());
  out.insert(out.end(), b.begin(), b.end());
}
std::vector<uint8_t> piece(const std::string& text, float score, int type) {
  std::vector<uint8_t> p;
  bytes_field(p, 1, std::vector<uint8_t>(text.begin(), text.end()));
  key(p, 2, 5);
  uint32_t bits;
  std::memcpy(&bits, &score, 4);
  for (int i = 0; i < 4; ++i) p.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  key(p, 3, 0);
  varint(p, static_cast<uint64_t>(type));
  return p;
}

std::vector<uint8_t> model_bytes() {
  std::vector<uint8_t> m;
  bytes_field(m, 1, piece("<unk>", 0.0f, 2));
  bytes_field(m, 1, piece("<s>", 0.0f, 3));
  bytes_field(m, 1, piece("\xe2\x96\x81the", -1.5f, 1));
  bytes_field(m, 1, piece("<0x0A>", 0.0f, 6));
  std::vector<uint8_t> trainer;  // model_type BPE, byte_fallback, and a field to skip
  key(trainer, 3, 0);
  varint(trainer, 2);
  key(trainer, 35, 0);
  varint(trainer, 1);
  bytes_field(trainer, 1, {'x', 'y'});
  bytes_field(m, 2, trainer);
  std::vector<uint8_t> normalizer;  // name "identity", add_dummy_prefix false
  bytes_field(normalizer, 1, {'i', 'd', 'e', 'n', 't', 'i', 't', 'y'});
  key(normalizer, 3, 0);
  varint(normalizer, 0);
  bytes_field(m, 3, normalizer);
  return m;
}

TEST(SentencePieceModel, ReadsPiecesScoresTypesAndSpecs) {
  auto model = parse_sentencepiece_model(model_bytes(), "tokenizer.model");
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_EQ(model->pieces.size(), 4u);
  EXPECT_EQ(model->pieces[2].text, "\xe2\x96\x81the");
  EXPECT_EQ(model->pieces[2].score, -1.5f);
  EXPECT_EQ(model->pieces[0].type, 2);
  EXPECT_EQ(model->pieces[3].type, 6);
  EXPECT_EQ(model->model_type, 2);
  EXPECT_TRUE(model->byte_fallback);
  EXPECT_FALSE(model->add_dummy_prefix);
  EXPECT_EQ(model->normalizer_name, "identity");
}

TEST(SentencePieceModel, RefusesTruncatedAndMalformedFiles) {
  const std::vector<uint8_t> good = model_bytes();
  for (size_t cut : {size_t{1}, size_t{5}, good.size() / 2, good.size() - 1}) {
    auto model = parse_sentencepiece_model(std::span<const uint8_t>(good.data(), cut), "tokenizer.model");
    EXPECT_FALSE(model.ok()) << "cut at " << cut;
  }
  std::vector<uint8_t> bad_type;
  bytes_field(bad_type, 1, piece("a", 0.0f, 9));
  EXPECT_FALSE(parse_sentencepiece_model(bad_type, "t").ok());
  std::vector<uint8_t> huge_length;
  key(huge_length, 1, 2);
  varint(huge_length, uint64_t{1} << 62);
  auto refused = parse_sentencepiece_model(huge_length, "t");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("runs past the end"), std::string::npos) << refused.status().message();
  std::vector<uint8_t> wire7 = {0x0f};
  EXPECT_FALSE(parse_sentencepiece_model(wire7, "t").ok());
  EXPECT_FALSE(parse_sentencepiece_model({}, "t").ok());  // no pieces
}

}  // namespace
}  // namespace tokenmill::convert
