#!/usr/bin/env python3
"""Writes the golden fixtures of the quant layer to tests/fixtures/quant/.

Rerunnable and deterministic (fixed seed). Two independent references are used:

  * the `gguf` Python package (gguf.quants): dequantization of every type it knows, and
    quantization of BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0;
  * llama.cpp's own ggml libraries as shipped in the `llama_cpp_python` package, called
    through ctypes: quantize_row_*_ref for every type (including the K-quants and Q8_K,
    which gguf.quants cannot quantize), dequantize_row_* as a cross-check, and the
    scalar ggml_vec_dot_*_generic kernels for dot-product fixtures.

The script asserts that both references agree wherever both implement an operation.

For the i-quants (IQ4_NL, IQ4_XS) and MXFP4 our quantizer is our own search, so quantize_<type>.bin
holds ggml's bytes as a yardstick of fit, not as the expected output; and
iquant_many_blocks.txt records, per type, the FNV-1a 64 hash of gguf-py's dequantization
of 10,000 blocks drawn from a SplitMix64 byte stream (every scale bit pattern but inf/NaN:
subnormals, zero and 65504 included; every E8M0 exponent for MXFP4), which the C++ test
draws again.

Files (all little-endian):
  dequant_<type>.bin   "TMQD" u32 type_id u32 n_elements u32 n_bytes | bytes | f32[n_elements]
  quantize_<type>.bin  "TMQQ" u32 type_id u32 n_elements u32 n_bytes | f32[n_elements] | bytes
  vec_dot_<type>.bin   "TMQV" u32 type_id u32 n_cases, then per case:
                       u32 n_elements u32 weight_bytes u32 activation_bytes |
                       weight bytes | activation bytes | f32 expected | f32 magnitude
                       (magnitude = sum |w_i * a_i| of the dequantized rows, a scale for
                       tolerances)

Usage: python3 tools/make_quant_fixtures.py
"""

from __future__ import annotations

import ctypes
import importlib.util
import struct
import sys
from pathlib import Path

import numpy as np
from gguf import quants as gq
from gguf.constants import GGML_QUANT_SIZES as GGUF_PY_QUANT_SIZES, GGMLQuantizationType as T

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "tests" / "fixtures" / "quant"
SEED = 0x7A11

# Types of the quant layer, in ggml id order.
TYPES = [T.F32, T.F16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
         T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K, T.BF16]

# The i-quants, after the others so that the others' random draws stay as they were.
IQ_TYPES = [T.IQ4_NL, T.IQ4_XS, T.MXFP4]
# The lattice i-quants (read only: no quantize fixture) and the ternary types, after those.
LATTICE_TYPES = [T.IQ2_XXS, T.IQ2_XS, T.IQ3_XXS, T.IQ1_S, T.IQ3_S, T.IQ2_S, T.IQ1_M]
TERNARY_TYPES = [T.TQ1_0, T.TQ2_0]
MANY_BLOCKS = 10_000

# Byte offsets of the f16 scale fields of each block ("d", "dmin"/"m", ...). Random blocks
# get sane finite values there; every other byte is uniformly random.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0], T.MXFP4: [],  # MXFP4's E8M0 exponent: every byte is valid
    T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ3_XXS: [0], T.IQ1_S: [0], T.IQ3_S: [0], T.IQ2_S: [0],
    T.IQ1_M: [],  # its f16 scale is spread over four nibbles: see sanitize_iq1_m
    T.TQ1_0: [52], T.TQ2_0: [64],
}

# IQ1_M's d: the top nibbles of its four 16-bit scale words (bytes 48..55).
IQ1_M_SCALE_OFFSET = 48


def iq1_m_d_bits(raw: np.ndarray) -> np.ndarray:
    words = raw[:, IQ1_M_SCALE_OFFSET:IQ1_M_SCALE_OFFSET + 8].copy().view(np.uint16)
    return ((words[:, 0] >> 12) | ((words[:, 1] >> 8) & 0x00F0) | ((words[:, 2] >> 4) & 0x0F00)
            | (words[:, 3] & 0xF000)).astype(np.uint16)


def sanitize_iq1_m(raw: np.ndarray) -> None:
    """Clears bit 14 of an IQ1_M d that would be inf/NaN (bit 14 of the last scale word)."""
    bad = (iq1_m_d_bits(raw) & 0x7C00) == 0x7C00
    raw[bad, IQ1_M_SCALE_OFFSET + 7] &= 0xBF

# Activation type of each weight type's dot product (ggml x86 CPU backend).
VEC_DOT_TYPE = {
    T.Q4_0: T.Q8_0, T.Q4_1: T.Q8_1, T.Q5_0: T.Q8_0, T.Q5_1: T.Q8_1, T.Q8_0: T.Q8_0,
    T.Q2_K: T.Q8_K, T.Q3_K: T.Q8_K, T.Q4_K: T.Q8_K, T.Q5_K: T.Q8_K, T.Q6_K: T.Q8_K,
    T.IQ4_NL: T.Q8_0, T.IQ4_XS: T.Q8_K, T.MXFP4: T.Q8_0,
    **{t: T.Q8_K for t in LATTICE_TYPES + TERNARY_TYPES},
}

# gguf-py (0.19) lists Q8_1 as 40 bytes, a leftover of an older layout with f32 d and s;
# ggml's block_q8_1 (two f16 + 32 int8) is 36 bytes, as are the blocks llama.cpp writes.
GGML_QUANT_SIZES = {**GGUF_PY_QUANT_SIZES, T.Q8_1: (32, 36)}

GGUF_CAN_QUANTIZE = {T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0}


def ggml_name(t: T) -> str:
    return t.name.lower().replace("_k", "_K")


# ------------------------------------------------------------------ ggml through ctypes

class Ggml:
    def __init__(self) -> None:
        spec = importlib.util.find_spec("llama_cpp")
        if spec is None or spec.origin is None:
            sys.exit("llama_cpp_python is required (it ships llama.cpp's ggml libraries)")
        lib_dir = Path(spec.origin).parent / "lib"
        mode = ctypes.RTLD_GLOBAL
        self.base = ctypes.CDLL(str(lib_dir / "libggml-base.so"), mode=mode)
        self.cpu = ctypes.CDLL(str(lib_dir / "libggml-cpu.so"), mode=mode)
        self.cpu.ggml_cpu_init()  # fills the fp16 tables the CPU kernels may use

    def quantize(self, t: T, x: np.ndarray) -> bytes:
        bs, nbytes = GGML_QUANT_SIZES[t]
        out = np.zeros(len(x) // bs * nbytes, dtype=np.uint8)
        fn = getattr(self.base, f"quantize_row_{ggml_name(t)}_ref")
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn(x.ctypes.data, out.ctypes.data, len(x))
        return out.tobytes()

    def dequantize(self, t: T, data: bytes, n: int) -> np.ndarray | None:
        name = f"dequantize_row_{ggml_name(t)}"
        if not hasattr(self.base, name):
            return None
        fn = getattr(self.base, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        src = np.frombuffer(data, dtype=np.uint8).copy()
        out = np.zeros(n, dtype=np.float32)
        fn(src.ctypes.data, out.ctypes.data, n)
        return out

    def vec_dot(self, t: T, n: int, w: bytes, a: bytes, generic: bool = True) -> float:
        suffix = "_generic" if generic else ""  # without: the SIMD kernel ggml dispatches to
        fn = getattr(self.cpu, f"ggml_vec_dot_{ggml_name(t)}_{ggml_name(VEC_DOT_TYPE[t])}{suffix}")
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                       ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                       ctypes.c_int]
        wa = np.frombuffer(w, dtype=np.uint8).copy()
        aa = np.frombuffer(a, dtype=np.uint8).copy()
        result = ctypes.c_float(0.0)
        fn(n, ctypes.byref(result), 0, wa.ctypes.data, 0, aa.ctypes.data, 0, 1)
        return result.value


# ------------------------------------------------------------------------ generators

def random_blocks(rng: np.random.Generator, t: T, n_blocks: int) -> bytes:
    """Random but valid rows: arbitrary quant bits, finite sane scales."""
    bs, nbytes = GGML_QUANT_SIZES[t]
    n = n_blocks * bs
    if t == T.F32:
        return rng.standard_normal(n).astype(np.float32).tobytes()
    if t == T.F16:
        h = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
        h[(h & 0x7C00) == 0x7C00] &= 0xBFFF  # no inf / nan: clear an exponent bit
        return h.tobytes()
    if t == T.BF16:
        h = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
        h[(h & 0x7F80) == 0x7F80] &= 0xBFFF
        return h.tobytes()
    raw = rng.integers(0, 256, (n_blocks, nbytes), dtype=np.uint16).astype(np.uint8)
    if t == T.Q8_K:
        d = (rng.uniform(1e-4, 1e-1, n_blocks) * rng.choice([-1, 1], n_blocks)).astype(np.float32)
        raw[:, 0:4] = d.view(np.uint8).reshape(n_blocks, 4)
        return raw.tobytes()
    if t == T.MXFP4:  # exponents of 2^-10 .. 2^2, as weights have
        raw[:, 0] = rng.integers(118, 131, n_blocks)
    for offset in F16_FIELDS[t]:
        scale = rng.uniform(1e-3, 2.0, n_blocks) * rng.choice([-1, 1], n_blocks)
        raw[:, offset:offset + 2] = scale.astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    if t == T.IQ1_M:
        sanitize_iq1_m(raw)
    return raw.tobytes()


def quantize_inputs(rng: np.random.Generator, n_blocks: int, bs: int) -> np.ndarray:
    """Blocks of different character: the cases the scale searches branch on."""
    blocks = []
    for b in range(n_blocks):
        kind = b % 8
        if kind == 0:
            x = rng.standard_normal(bs)
        elif kind == 1:
            x = rng.standard_normal(bs) * 0.02 + 0.05  # mostly positive: min > 0 branches
        elif kind == 2:
            x = rng.uniform(-3, 3, bs)
        elif kind == 3:
            x = rng.standard_t(3, bs)  # heavy tails
        elif kind == 4:
            x = rng.standard_normal(bs) * 1e-3
        elif kind == 5:
            x = np.zeros(bs)
            x[rng.integers(0, bs)] = 1.5  # one spike
        elif kind == 6:
            x = -np.abs(rng.standard_normal(bs))  # all negative
        else:
            x = np.zeros(bs)  # all-zero block
        blocks.append(x)
    return np.concatenate(blocks).astype(np.float32)


def dequantize_reference(ggml: Ggml, t: T, data: bytes, n: int) -> np.ndarray:
    raw = np.frombuffer(data, dtype=np.uint8)
    bs, nbytes = GGML_QUANT_SIZES[t]
    if t == T.Q8_1:  # activation-only: not in gguf.quants; x = d * q
        blocks = raw.reshape(-1, nbytes)
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
        q = blocks[:, 4:].copy().view(np.int8).astype(np.float32)
        return (d * q).reshape(-1)
    if t == T.Q8_K:  # activation-only: ggml's own dequantizer
        return ggml.dequantize(t, data, n)
    values = gq.dequantize(raw.reshape(-1, nbytes) if bs > 1 else raw.copy(), t)
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    check = ggml.dequantize(t, data, n)
    if check is not None:
        assert np.array_equal(values.view(np.uint32), check.view(np.uint32)), f"{t.name}: gguf vs ggml dequant"
    return values


def splitmix64_bytes(seed: int, n: int) -> bytes:
    """n bytes of SplitMix64 output words, little-endian (tests/quant draws the same)."""
    mask = (1 << 64) - 1
    state = seed & mask
    out = bytearray()
    while len(out) < n:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out += z.to_bytes(8, "little")
    return bytes(out[:n])


def many_blocks(t: T) -> bytes:
    """MANY_BLOCKS blocks of t from a SplitMix64 stream seeded by the type id; each f16
    scale keeps its random bits but for inf/NaN patterns, whose 0x4000 bit is cleared."""
    bs, nbytes = GGML_QUANT_SIZES[t]
    raw = np.frombuffer(splitmix64_bytes(t.value, MANY_BLOCKS * nbytes), dtype=np.uint8).copy().reshape(-1, nbytes)
    for offset in F16_FIELDS[t]:
        h = raw[:, offset:offset + 2].copy().view(np.uint16).reshape(-1)
        h[(h & 0x7C00) == 0x7C00] &= 0xBFFF
        raw[:, offset:offset + 2] = h.view(np.uint8).reshape(-1, 2)
    if t == T.IQ1_M:
        sanitize_iq1_m(raw)
    return raw.tobytes()


def fnv1a64(data: bytes) -> int:
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & ((1 << 64) - 1)
    return h


def header(magic: bytes, *fields: int) -> bytes:
    return magic + struct.pack(f"<{len(fields)}I", *fields)


# ----------------------------------------------------------------------------- main

def main() -> None:
    rng = np.random.default_rng(SEED)
    ggml = Ggml()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    total = 0

    def write(name: str, payload: bytes) -> None:
        nonlocal total
        (OUT_DIR / name).write_bytes(payload)
        total += len(payload)

    for t in TYPES + IQ_TYPES + LATTICE_TYPES + TERNARY_TYPES:
        bs, nbytes = GGML_QUANT_SIZES[t]
        name = ggml_name(t)
        is_k = bs == 256
        unit = 1 if bs > 1 else 32  # float types: count in groups of 32 values

        # Dequantization of random valid blocks.
        n_blocks = (6 if is_k else 24) * unit
        data = random_blocks(rng, t, n_blocks)
        n = n_blocks * bs
        values = dequantize_reference(ggml, t, data, n)
        write(f"dequant_{name}.bin", header(b"TMQD", t.value, n, len(data)) + data + values.tobytes())

        # Quantization of structured random floats (none for the lattice types: read only).
        if t not in LATTICE_TYPES:
            n = (8 if is_k else 32) * (bs if bs > 1 else 32)
            x = quantize_inputs(rng, n // (bs if bs > 1 else 32), bs if bs > 1 else 32)
            if t == T.F32:
                expected = x.tobytes()
            elif t == T.F16:
                expected = x.astype(np.float16).tobytes()
            elif t == T.BF16:
                expected = np.asarray(gq.quantize(x, t)).tobytes()
            else:
                expected = ggml.quantize(t, x)
                if t in GGUF_CAN_QUANTIZE:
                    ours = np.asarray(gq.quantize(x.reshape(-1, bs), t)).tobytes()
                    status = "agrees" if ours == expected else "DIFFERS (fixture uses ggml)"
                    print(f"  gguf.quants quantize {name}: {status} with ggml")
            write(f"quantize_{name}.bin", header(b"TMQQ", t.value, n, len(expected)) + x.tobytes() + expected)

        # Dot products against ggml's scalar kernels.
        if t in VEC_DOT_TYPE:
            cases = []
            for n_blocks in ([1, 3] if is_k else [1, 7, 31]):
                n = n_blocks * bs
                w = random_blocks(rng, t, n_blocks)
                a_type = VEC_DOT_TYPE[t]
                a = ggml.quantize(a_type, rng.standard_normal(n).astype(np.float32))
                expected_dot = ggml.vec_dot(t, n, w, a)
                wv = dequantize_reference(ggml, t, w, n).astype(np.float64)
                av = dequantize_reference(ggml, a_type, a, n).astype(np.float64)
                magnitude = float(np.sum(np.abs(wv * av)))
                exact = float(np.dot(wv, av))
                if abs(expected_dot - exact) > 1e-5 * magnitude:
                    # The ggml_vec_dot_q5_0_q8_0_generic shipped in llama_cpp_python
                    # 0.3.36 returns wrong sums; its SIMD twin is right, so use that.
                    print(f"  {name}: ggml generic vec_dot off ({expected_dot} vs {exact}); using SIMD kernel")
                    expected_dot = ggml.vec_dot(t, n, w, a, generic=False)
                    assert abs(expected_dot - exact) <= 1e-5 * magnitude
                cases.append(struct.pack("<3I", n, len(w), len(a)) + w + a +
                             struct.pack("<2f", expected_dot, magnitude))
            write(f"vec_dot_{name}.bin", header(b"TMQV", t.value, len(cases)) + b"".join(cases))

    lines = []
    for t in IQ_TYPES + LATTICE_TYPES + TERNARY_TYPES:
        bs, _ = GGML_QUANT_SIZES[t]
        data = many_blocks(t)
        values = dequantize_reference(ggml, t, data, MANY_BLOCKS * bs)
        # MXFP4's largest exponents overflow to infinity (2^127 * 12): ggml gives the same.
        assert t == T.MXFP4 or np.all(np.isfinite(values))
        lines.append(f"{ggml_name(t)} {MANY_BLOCKS} {fnv1a64(values.tobytes()):016x}\n")
    write("iquant_many_blocks.txt", "".join(lines).encode())

    print(f"wrote {OUT_DIR.relative_to(ROOT)}: {total} bytes")


if __name__ == "__main__":
    main()
