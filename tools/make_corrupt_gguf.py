#!/usr/bin/env python3
"""Writes the corpus of corrupt GGUF files to tests/fixtures/gguf_corrupt/.

Every file is broken in exactly one way; the GGUF reader (src/gguf/gguf_file.cc) must
reject each with an error, never crash. manifest.json maps each file name to a
substring the reader's error message must contain (tests/gguf/gguf_corrupt_test.cc).

Plain struct packing, no dependencies. Rerunnable and deterministic: the one "random"
file is filled from SHA-256 of a fixed seed. The script deletes stale *.gguf files it
no longer writes, so the directory always matches the manifest.

GGUF layout (little-endian), for reading the builders below:
  "GGUF" | u32 version | u64 n_tensors | u64 n_kv
  n_kv x      { string key | u32 value_type | value }
  n_tensors x { string name | u32 n_dims | n_dims x u64 dim | u32 type | u64 offset }
  padding to general.alignment (default 32) | tensor data
  string = u64 length + bytes; array = u32 element_type + u64 count + elements

Usage: python3 tools/make_corrupt_gguf.py
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "tests" / "fixtures" / "gguf_corrupt"
SEED = b"tokenmill-gguf-corrupt-v1"

# Value type ids.
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
# Tensor type ids.
T_F32, T_F16, T_Q4_0, T_Q8_0, T_IQ2_XS, T_IQ1_M, T_TQ1_0, T_MXFP4 = 0, 1, 2, 8, 17, 29, 34, 39


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def string(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return u64(len(b)) + b


def header(n_tensors: int, n_kv: int, version: int = 3, magic: bytes = b"GGUF") -> bytes:
    return magic + u32(version) + u64(n_tensors) + u64(n_kv)


def kv(key: str, value_type: int, payload: bytes) -> bytes:
    return string(key) + u32(value_type) + payload


def kv_u32(key: str, v: int) -> bytes:
    return kv(key, U32, u32(v))


def kv_str(key: str, v: str) -> bytes:
    return kv(key, STR, string(v))


def tensor_info(name: str, dims: list[int], type_id: int, offset: int) -> bytes:
    return string(name) + u32(len(dims)) + b"".join(u64(d) for d in dims) + u32(type_id) + u64(offset)


def pad(b: bytes, alignment: int = 32) -> bytes:
    return b + b"\0" * (-len(b) % alignment)


def with_tensors(kvs: list[bytes], infos: list[bytes], data: bytes, alignment: int = 32) -> bytes:
    """A complete file: header, metadata, tensor infos, padding, data."""
    head = header(len(infos), len(kvs)) + b"".join(kvs) + b"".join(infos)
    return pad(head, alignment) + data


def metadata_only(*kvs: bytes, version: int = 3) -> bytes:
    return header(0, len(kvs), version) + b"".join(kvs)


def one_tensor(dims: list[int], type_id: int = T_F32, offset: int = 0, data: bytes = b"",
               kvs: list[bytes] | None = None) -> bytes:
    return with_tensors(kvs or [kv_str("general.name", "t")], [tensor_info("w", dims, type_id, offset)], data)


def garbage(n: int) -> bytes:
    out = b""
    block = SEED
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return out[:n]


def build() -> dict[str, tuple[bytes, str]]:
    """file name -> (bytes, substring the error message must contain)."""
    valid_head = header(1, 1) + kv_str("general.name", "t")
    f32x4 = struct.pack("<4f", 1, 2, 3, 4)
    files: dict[str, tuple[bytes, str]] = {}

    def add(name: str, data: bytes, expect: str) -> None:
        assert name not in files, name
        files[name] = (data, expect)

    # --- header -----------------------------------------------------------------------
    add("empty.gguf", b"", "not a GGUF file")
    add("three_bytes.gguf", b"GGU", "not a GGUF file")
    add("wrong_magic.gguf", header(0, 0, magic=b"GGML") + b"\0" * 16, "first four bytes are not")
    add("text_file.gguf", b"This is a plain text file, not a model.\n" * 4, "not a GGUF file")
    add("version_1.gguf", header(0, 0, version=1) + b"\0" * 16, "version 1 is not supported")
    add("version_99.gguf", header(0, 0, version=99) + b"\0" * 16, "unknown GGUF version 99")
    add("truncated_header.gguf", header(0, 0)[:12], "while reading tensor count")
    add("huge_tensor_count.gguf", header(1 << 63, 0) + b"\0" * 64, "tensor count")
    add("huge_metadata_count.gguf", header(0, (1 << 64) - 1) + b"\0" * 64, "metadata count")
    # A valid header and then 256 pseudo-random bytes where the first key should be.
    add("garbage_after_header.gguf", header(1, 3) + garbage(256), "metadata key #0")

    # --- metadata ---------------------------------------------------------------------
    add("truncated_kv_key.gguf", header(0, 1) + u64(20) + b"gener" + b"\0" * 8,
        "while reading metadata key #0 (20-byte string)")
    add("huge_string_length.gguf", header(0, 1) + u64(1 << 63) + b"\0" * 32, "string length")
    add("truncated_string_value.gguf", metadata_only(kv("general.name", STR, u64(100) + b"only ten b")),
        "(100-byte string)")
    add("huge_array_count.gguf", metadata_only(kv("a", ARR, u32(U8) + u64(1 << 62) + b"\0" * 16)),
        "does not fit in the")
    # Ten u32 elements present, eleven claimed.
    add("array_count_just_over.gguf",
        metadata_only(kv("a", ARR, u32(U32) + u64(11) + b"".join(u32(i) for i in range(10)))),
        "array of 11 u32 elements does not fit")
    add("huge_string_in_array.gguf",
        metadata_only(kv("tokenizer.ggml.tokens", ARR, u32(STR) + u64(2) + string("a") + u64(1 << 40) + b"xx")),
        "string length")
    nested = b"".join(u32(ARR) + u64(1) for _ in range(100)) + u32(U8) + u64(1) + b"\x01"
    add("nested_arrays_100_deep.gguf", metadata_only(kv("a", ARR, nested)), "nested deeper than")
    add("unknown_value_type.gguf", metadata_only(kv("general.name", 13, b"\0" * 16)), "unknown value type 13")
    add("unknown_value_type_max.gguf", metadata_only(kv("general.name", 0xFFFFFFFF, b"\0" * 16)),
        "unknown value type 4294967295")
    add("unknown_array_element_type.gguf", metadata_only(kv("a", ARR, u32(42) + u64(1) + b"\0" * 16)),
        "unknown array element type 42")
    add("bool_byte_7.gguf", metadata_only(kv("general.flag", BOOL, b"\x07")), "bool byte is 7")
    add("bool_byte_7_in_array.gguf", metadata_only(kv("flags", ARR, u32(BOOL) + u64(3) + b"\x00\x01\x07")),
        "bool byte is 7")
    add("duplicate_key.gguf", metadata_only(kv_str("general.name", "a"), kv_str("general.name", "b")),
        "metadata key 'general.name' appears twice")
    add("truncated_in_value.gguf", metadata_only(kv("general.n", U64, b"\1\2\3")), "while reading metadata 'general.n'")

    # --- general.alignment ------------------------------------------------------------
    for name, value in [("alignment_0.gguf", kv_u32("general.alignment", 0)),
                        ("alignment_3.gguf", kv_u32("general.alignment", 3)),
                        ("alignment_2MiB.gguf", kv_u32("general.alignment", 2 << 20)),
                        ("alignment_string.gguf", kv_str("general.alignment", "32")),
                        ("alignment_f32.gguf", kv("general.alignment", F32, struct.pack("<f", 32.0))),
                        ("alignment_bool.gguf", kv("general.alignment", BOOL, b"\x01")),
                        ("alignment_negative.gguf", kv("general.alignment", I32, struct.pack("<i", -32)))]:
        add(name, one_tensor([4], data=f32x4, kvs=[value]), "general.alignment must be a power of two")

    # --- tensor infos -----------------------------------------------------------------
    add("truncated_tensor_info.gguf", valid_head + string("w"), "while reading tensor dimension count")
    add("n_dims_0.gguf", one_tensor([], data=f32x4), "has 0 dimensions")
    add("n_dims_5.gguf", one_tensor([1, 1, 1, 1, 4], data=f32x4), "has 5 dimensions")
    add("zero_dimension.gguf", one_tensor([4, 0], data=f32x4), "dimension 1 is 0")
    add("dimension_over_int64.gguf", one_tensor([1 << 63], data=f32x4), "dimension 0 is 9223372036854775808")
    add("dimension_product_overflow.gguf", one_tensor([1 << 32, 1 << 32], data=f32x4),
        "more elements than fit in 64 bits")
    add("byte_size_overflow.gguf", one_tensor([(1 << 63) - 1], type_id=T_F32, data=f32x4), "byte size overflows")
    add("unknown_tensor_type.gguf", one_tensor([4], type_id=99, data=f32x4), "unknown tensor type id 99")
    add("q4_0_33_cols.gguf", one_tensor([33, 2], type_id=T_Q4_0, data=b"\0" * 64),
        "row length 33 is not a multiple of q4_0's block size 32")
    # An MXFP4 tensor (gpt-oss's experts) whose rows are not whole 32-value blocks, and one
    # whose data holds one block fewer than its shape needs.
    add("mxfp4_2880_plus_16_cols.gguf", one_tensor([2896, 2], type_id=T_MXFP4, data=b"\0" * 3200),
        "row length 2896 is not a multiple of mxfp4's block size 32")
    add("mxfp4_one_block_short.gguf", one_tensor([64, 2], type_id=T_MXFP4, data=b"\0" * (4 * 17 - 17)),
        "ends past the end of the file")
    # The i-quants and ternary types: a row that is not whole 256-value super-blocks, and
    # tensors whose data ends a block short (IQ2_XS 74, IQ1_M 56 bytes per block).
    add("iq2_xs_640_cols.gguf", one_tensor([640, 2], type_id=T_IQ2_XS, data=b"\0" * 4 * 74),
        "row length 640 is not a multiple of iq2_xs's block size 256")
    add("iq2_xs_one_block_short.gguf", one_tensor([512, 2], type_id=T_IQ2_XS, data=b"\0" * 3 * 74),
        "ends past the end of the file")
    add("iq1_m_one_block_short.gguf", one_tensor([256, 3], type_id=T_IQ1_M, data=b"\0" * 2 * 56),
        "ends past the end of the file")
    add("tq1_0_100_cols.gguf", one_tensor([100, 1], type_id=T_TQ1_0, data=b"\0" * 54),
        "row length 100 is not a multiple of tq1_0's block size 256")
    add("unaligned_tensor_offset.gguf", one_tensor([4], offset=16, data=b"\0" * 64), "offset 16 is not aligned to 32")
    add("duplicate_tensor_name.gguf",
        with_tensors([kv_str("general.name", "t")],
                     [tensor_info("w", [4], T_F32, 0), tensor_info("w", [4], T_F32, 32)], pad(f32x4) + f32x4),
        "tensor name 'w' appears twice")

    # --- tensor data ------------------------------------------------------------------
    add("tensor_data_past_end.gguf", one_tensor([4], offset=1024, data=f32x4), "ends past the end of the file")
    add("tensor_offset_near_u64_max.gguf", one_tensor([4], offset=(1 << 64) - 32, data=f32x4),
        "ends past the end of the file")
    add("truncated_tensor_data.gguf", one_tensor([16, 4], data=b"\0" * (16 * 4 * 4 - 1)),
        "ends past the end of the file")
    # Tensor infos end, then the file stops before the aligned start of the data.
    add("missing_data_padding.gguf", valid_head + tensor_info("w", [4], T_F32, 0), "padding before tensor data")
    return files


def main() -> None:
    files = build()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for stale in OUT_DIR.glob("*.gguf"):
        if stale.name not in files:
            stale.unlink()
    total = 0
    for name, (data, _) in sorted(files.items()):
        assert len(data) < 10_000, name
        (OUT_DIR / name).write_bytes(data)
        total += len(data)
    manifest = {name: expect for name, (_, expect) in sorted(files.items())}
    (OUT_DIR / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=True) + "\n")
    assert total < 500_000
    print(f"wrote {len(files)} files ({total} bytes) and manifest.json to {OUT_DIR}")


if __name__ == "__main__":
    main()
