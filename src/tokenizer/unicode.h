// UTF-8 helpers and the GPT-2 byte <-> character table that byte-level BPE vocabularies
// are written in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tokenmill::tokenizer {

// Bytes in the UTF-8 sequence that starts with `lead`, judged from its high bits alone:
// ASCII and stray continuation bytes count as 1, 0xC0-0xDF as 2, 0xE0-0xEF as 3, 0xF0-0xFF
// as 4. Splitting text into "characters" with this never loses or reorders a byte.
size_t utf8_sequence_length(uint8_t lead);

// Appends the UTF-8 encoding of cp (REQUIRES: cp <= 0x10FFFF).
void append_utf8(uint32_t cp, std::string& out);

// Length of the well-formed UTF-8 sequence at text[pos], 0 if the bytes there are not one
// (bad lead byte, bad continuation, overlong form, surrogate, past U+10FFFF), or -1 if the
// bytes so far are a valid start that text ends before completing.
int valid_utf8_sequence_at(std::string_view text, size_t pos);

// The character a byte-level BPE vocabulary writes for byte b (GPT-2's table: printable
// bytes stand for themselves, the rest are moved up to U+0100 and beyond), as UTF-8.
const std::string& byte_to_byte_level(uint8_t b);

// Inverse of byte_to_byte_level for one code point; nullopt for a character the table
// does not produce.
std::optional<uint8_t> byte_level_to_byte(uint32_t cp);

// Rewrites raw bytes as byte-level characters.
std::string encode_byte_level(std::string_view bytes);

// Rewrites a byte-level token's text back to raw bytes. Characters outside the table are
// kept as their own UTF-8 (a vocabulary entry that was never byte-level encoded).
std::string decode_byte_level(std::string_view text);

}  // namespace tokenmill::tokenizer
