#include "convert/sentencepiece_model.h"

#include <cstring>

#include "base/mapped_file.h"

namespace tokenmill::convert {

namespace {

// Real vocabularies are at most a few hundred thousand pieces.
constexpr size_t kMaxPieces = size_t{1} << 22;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// A cursor over one message's bytes; every read is bounds-checked.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, const std::string& label) : bytes_(bytes), label_(label) {}

  bool done() const { return pos_ >= bytes_.size(); }

  Result<uint64_t> varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return error("a number runs past the end");
      const uint8_t b = bytes_[pos_++];
      value |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return value;
    }
    return error("a number is longer than 10 bytes");
  }

  Result<std::span<const uint8_t>> bytes(uint64_t n) {
    if (n > bytes_.size() - pos_) return error("a field of " + std::to_string(n) + " bytes runs past the end");
    const auto out = bytes_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }

  Result<std::span<const uint8_t>> length_delimited() {
    auto n = varint();
    if (!n.ok()) return n.status();
    return bytes(*n);
  }

  Result<float> fixed32_float() {
    auto b = bytes(4);
    if (!b.ok()) return b.status();
    uint32_t bits = 0;
    for (int i = 3; i >= 0; --i) bits = (bits << 8) | (*b)[static_cast<size_t>(i)];
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  // Skips a field this reader does not need.
  Status skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint:
        return varint().status();
      case kFixed64:
        return bytes(8).status();
      case kLength:
        return length_delimited().status();
      case kFixed32:
        return bytes(4).status();
      default:
        return error("wire type " + std::to_string(wire_type) + " is not one protocol buffers use");
    }
  }

  Status error(const std::string& what) const {
    return corrupt_data(label_ + ": not a SentencePiece model (" + what + " at byte " + std::to_string(pos_) + ")");
  }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& label_;
  size_t pos_ = 0;
};

// Reads a message field by field; `on_field` handles the fields it knows and returns
// false for those to skip.
template <typename OnField>
Status read_message(std::span<const uint8_t> bytes, const std::string& label, OnField on_field) {
  Reader r(bytes, label);
  while (!r.done()) {
    auto key = r.varint();
    if (!key.ok()) return key.status();
    const uint32_t field = static_cast<uint32_t>(*key >> 3);
    const uint32_t wire = static_cast<uint32_t>(*key & 7);
    if (field == 0) return r.error("field number 0");
    auto handled = on_field(field, wire, r);
    if (!handled.ok()) return handled.status();
    if (!*handled) TM_RETURN_IF_ERROR(r.skip(wire));
  }
  return {};
}

Status expect_wire(Reader& r, uint32_t wire, uint32_t expected, const char* field) {
  if (wire != expected) return r.error(std::string("field ") + field + " has the wrong wire type");
  return {};
}

}  // namespace

Result<SentencePieceModel> parse_sentencepiece_model(std::span<const uint8_t> bytes, const std::string& label) {
  SentencePieceModel model;
  Status s = read_message(bytes, label, [&](uint32_t field, uint32_t wire, Reader& r) -> Result<bool> {
    if (field == 1) {  // repeated SentencePiece pieces
      TM_RETURN_IF_ERROR(expect_wire(r, wire, kLength, "pieces"));
      auto message = r.length_delimited();
      if (!message.ok()) return message.status();
      if (model.pieces.size() >= kMaxPieces) return r.error("more than 4M pieces");
      SentencePiece piece;
      TM_RETURN_IF_ERROR(read_message(*message, label, [&](uint32_t f, uint32_t w, Reader& p) -> Result<bool> {
        if (f == 1) {
          TM_RETURN_IF_ERROR(expect_wire(p, w, kLength, "piece"));
          auto text = p.length_delimited();
          if (!text.ok()) return text.status();
          piece.text.assign(reinterpret_cast<const char*>(text->data()), text->size());
          return true;
        }
        if (f == 2) {
          TM_RETURN_IF_ERROR(expect_wire(p, w, kFixed32, "score"));
          auto score = p.fixed32_float();
          if (!score.ok()) return score.status();
          piece.score = *score;
          return true;
        }
        if (f == 3) {
          TM_RETURN_IF_ERROR(expect_wire(p, w, kVarint, "type"));
          auto type = p.varint();
          if (!type.ok()) return type.status();
          if (*type < 1 || *type > 6) return p.error("piece type " + std::to_string(*type));
          piece.type = static_cast<int32_t>(*type);
          return true;
        }
        return false;
      }));
      model.pieces.push_back(std::move(piece));
      return true;
    }
    if (field == 2 || field == 3) {  // trainer_spec, normalizer_spec
      TM_RETURN_IF_ERROR(expect_wire(r, wire, kLength, field == 2 ? "trainer_spec" : "normalizer_spec"));
      auto message = r.length_delimited();
      if (!message.ok()) return message.status();
      TM_RETURN_IF_ERROR(read_message(*message, label, [&](uint32_t f, uint32_t w, Reader& p) -> Result<bool> {
        if (field == 2 && (f == 3 || f == 35) && w == kVarint) {
          auto v = p.varint();
          if (!v.ok()) return v.status();
          if (f == 3) model.model_type = static_cast<int32_t>(*v);
          if (f == 35) model.byte_fallback = *v != 0;
          return true;
        }
        if (field == 3 && f == 3 && w == kVarint) {
          auto v = p.varint();
          if (!v.ok()) return v.status();
          model.add_dummy_prefix = *v != 0;
          return true;
        }
        if (field == 3 && f == 1 && w == kLength) {
          auto name = p.length_delimited();
          if (!name.ok()) return name.status();
          model.normalizer_name.assign(reinterpret_cast<const char*>(name->data()), name->size());
          return true;
        }
        return false;
      }));
      return true;
    }
    return false;
  });
  if (!s.ok()) return s;
  if (model.pieces.empty()) return corrupt_data(label + ": not a SentencePiece model (no pieces)");
  return model;
}

Result<SentencePieceModel> read_sentencepiece_model(const std::string& path) {
  auto map = MappedFile::open(path);
  if (!map.ok()) return map.status();
  return parse_sentencepiece_model(map->bytes(), path);
}

}  // namespace tokenmill::convert
