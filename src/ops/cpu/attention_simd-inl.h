// The body of the SIMD attention kernel (attention_kernels.h), written once for every
// vector width. attention_avx512.cc, attention_avx2.cc and attention_neon.cc each define
// a struct `Simd` of primitives on their vectors (16, 8 or 4 floats) and include this
// file inside an anonymous namespace, so every function here is compiled for that file's
// instruction set and has internal linkage (the linker never merges an AVX-512 copy into
// the AVX2 file's calls).
// For the same reason nothing here calls an inline or template function of another
// header: only Simd's primitives and plain arithmetic.
//
// Simd provides:
//   F, kLanes (4, 8 or 16), kScoreChains (q·k accumulators in flight), kValueVectors
//   (vectors of output per value pass); zero, set1, load, store, add, sub, mul, fma;
//   load_f16 (kLanes F16 values), round_f16, from_codes (kLanes int8 codes times a
//   scale), scale_of (an F16 scale broadcast); load_first / store_first (the first n
//   lanes, n >= 1; other lanes read as 0 and are not written); keep_first (zeroes the
//   others); max_first (a max over the first n lanes); reduce_max;
//   reduce_16 (a q·k accumulator's 16 lanes, given as 16 / kLanes vectors, summed in a
//   fixed order); exp_nonpositive; DoubleSums16 (16 running double sums: add, total).
//
// The arithmetic is the same on every width, so every width gives the same bits:
//   scores:  each (head, key) q·k is 16 running sums, lane l over dims l, l + 16, l + 32,
//            ... in order (a narrow vector holds them in 16 / kLanes passes over the
//            tile's rows, the later ones from L1), then reduce_16's fixed sum;
//   softmax: scaled and soft-capped, e^(s - max) to ~1 ulp summed in double, lane l over
//            keys l (mod 16), the 16 lanes then in order; probabilities rounded to F16;
//   values:  out[h] += p[h][j] * v_j, one FMA chain per output element over j in order,
//            kValueKeys keys at a time.

// Row formats: load(row, d, o) gives values d + o .. d + o + kLanes - 1 of a row, where d
// is a multiple of kStep and o + kLanes <= kStep (the values of one step share whatever
// the format converts once, so a compiler can keep it).
//
// Rows of F16 values.
struct F16Rows {
  static constexpr int32_t kStep = 16;
  static int32_t bytes(int32_t n) { return 2 * n; }
  static int32_t last_byte(int32_t d) { return 2 * d + 1; }  // of value d
  static Simd::F load(const uint8_t* row, int32_t d, int32_t o) {
    return Simd::load_f16(reinterpret_cast<const uint16_t*>(row) + d + o);
  }
  // The line holding step d's bytes, every other step (two steps per line; rows of
  // head_dim % 32 == 0 values are line-aligned).
  static void prefetch_step(const uint8_t* row, int32_t d) {
    if (d % 32 == 0) __builtin_prefetch(row + 2 * d, 0, 3);
  }
};

// Rows of Q8_0 blocks (kv_storage.h): each value its code times its block's scale (exact
// in float, as the reference computes it). A step is one block.
struct Q8Rows {
  static constexpr int32_t kStep = kKvQ8Block;
  static int32_t bytes(int32_t n) { return n / kKvQ8Block * kKvQ8BlockBytes; }
  static int32_t last_byte(int32_t d) { return bytes(d / kKvQ8Block * kKvQ8Block) + 2 + d % kKvQ8Block; }
  static Simd::F load(const uint8_t* row, int32_t d, int32_t o) {
    const uint8_t* block = row + (d / kKvQ8Block) * kKvQ8BlockBytes;
    uint16_t scale_bits;
    std::memcpy(&scale_bits, block, sizeof(scale_bits));
    return Simd::from_codes(block + 2 + d % kKvQ8Block + o, Simd::scale_of(scale_bits));
  }
  // The line holding the step's last byte: over a row's steps, every line it spans (34
  // bytes a step) except, for an unaligned row, perhaps the one holding its first bytes.
  static void prefetch_step(const uint8_t* row, int32_t d) {
    __builtin_prefetch(row + bytes(d + kStep) - 1, 0, 3);
  }
};

using F = Simd::F;
constexpr int kLanes = Simd::kLanes;
constexpr int kPasses = 16 / kLanes;  // vectors per 16-lane q·k accumulator

// Keys and values sit in 16-position blocks scattered over the cache: the hardware
// prefetcher follows a block's rows but restarts at every block boundary, so rows
// kPrefetchRows ahead of the one being read are prefetched by hand. An item reads one
// stream of rows, its keys and then its values (stream_row), and the prefetches run
// ahead along that stream a few lines per step of the arithmetic: a burst of a whole
// row's or block's lines at once overflows the core's miss buffers and most of it is
// dropped (bench/attention_bench measures both). The score pass's last tiles thus fetch
// the first kPrefetchRows values; the value pass fetches from kValueKeys ahead (the two
// are equal).
constexpr int32_t kPrefetchRows = 16;

// Row r of the item's stream (key r, then value r - n_keys), or `fallback` past its end.
const uint8_t* stream_row(const HeadGroupAttention& a, int32_t r, const uint8_t* fallback) {
  if (r < a.n_keys) return a.keys[r];
  return r < 2 * a.n_keys ? a.values[r - a.n_keys] : fallback;
}

void prefetch(const uint8_t* p) { __builtin_prefetch(p, 0, 3); }  // prefetcht0 on x86

// Raw q·k (before the scale) of kHeads heads x kKeys keys starting at key j0:
// scores[h * n_keys + j0 + k]. kHeads * kKeys is kScoreChains (kHeads for the tails):
// each key vector loaded and converted once serves every head, each query vector every key.
template <typename Rows, int kHeads, int kKeys>
void score_tile(const HeadGroupAttention& a, const float* q16, int32_t j0) {
  constexpr int kChains = kHeads * kKeys;
  // The stream's rows kPrefetchRows ahead: each step of the first pass prefetches the
  // lines of them that it reads of its own rows (past the end, its own rows again:
  // already cached).
  const uint8_t* ahead[kKeys];
  for (int j = 0; j < kKeys; ++j) ahead[j] = stream_row(a, j0 + j + kPrefetchRows, a.keys[j0 + j]);
  F acc[kPasses][kChains];
  for (int pass = 0; pass < kPasses; ++pass) {
    for (int c = 0; c < kChains; ++c) acc[pass][c] = Simd::zero();
    for (int32_t d = 0; d < a.head_dim; d += Rows::kStep) {
      if (pass == 0) {
        for (int j = 0; j < kKeys; ++j) Rows::prefetch_step(ahead[j], d);
      }
      for (int32_t o = kLanes * pass; o < Rows::kStep; o += 16) {
        F k[kKeys];
        for (int j = 0; j < kKeys; ++j) k[j] = Rows::load(a.keys[j0 + j], d, o);
        for (int h = 0; h < kHeads; ++h) {
          const F q = Simd::load(q16 + static_cast<int64_t>(h) * a.head_dim + d + o);
          for (int j = 0; j < kKeys; ++j) acc[pass][h * kKeys + j] = Simd::fma(q, k[j], acc[pass][h * kKeys + j]);
        }
      }
    }
  }
  float dots[kChains];
  Simd::reduce_16(acc, dots);
  for (int h = 0; h < kHeads; ++h) {
    for (int j = 0; j < kKeys; ++j) a.scratch_scores[static_cast<int64_t>(h) * a.n_keys + j0 + j] = dots[h * kKeys + j];
  }
}

template <typename Rows, int kHeads>
void score_heads(const HeadGroupAttention& a, const float* q16) {
  constexpr int kKeys = Simd::kScoreChains / kHeads;
  int32_t j = 0;
  for (; j + kKeys <= a.n_keys; j += kKeys) score_tile<Rows, kHeads, kKeys>(a, q16, j);
  for (; j < a.n_keys; ++j) score_tile<Rows, kHeads, 1>(a, q16, j);
}

// Values are read in blocks of kValueKeys keys: each block's rows (8 KB at head_dim 256)
// are read from memory once, by the first chunk of dims, and stay in L1 for the others.
constexpr int32_t kValueKeys = 16;
static_assert(kValueKeys == kPrefetchRows, "the score pass prefetches exactly the first block of values");

// out[h][d0 .. d0 + kVectors * kLanes) += sum_j p[h][j] * v_j for keys j0 .. j1 - 1 in
// order, for kHeads heads; `first`: out starts at zero. Each output element is one chain
// of FMAs over j = 0, 1, ... whatever the blocks (a float stored and loaded back is
// unchanged). REQUIRES: the chunk is whole steps of Rows, or lies within one step.
template <typename Rows, int kHeads, int kVectors>
void value_tile(const HeadGroupAttention& a, const float* probabilities, float* out, int32_t d0, int32_t j0,
                int32_t j1, bool first) {
  constexpr int32_t kDims = kVectors * kLanes;
  constexpr int32_t kStepDims = kDims < Rows::kStep ? kDims : Rows::kStep;  // read per step
  F acc[kHeads][kVectors];
  for (int h = 0; h < kHeads; ++h) {
    for (int c = 0; c < kVectors; ++c) {
      acc[h][c] = first ? Simd::zero() : Simd::load(out + static_cast<int64_t>(h) * a.head_dim + d0 + kLanes * c);
    }
  }
  // The chunk's bytes of the value kValueKeys ahead, read by the next block's pass over
  // the same chunk: the line of its last byte, and of its first where a chunk of 32 or
  // more values can span two lines.
  const int32_t first_byte = Rows::bytes(d0), last_byte = Rows::last_byte(d0 + kDims - 1);
  for (int32_t j = j0; j < j1; ++j) {
    if (j + kValueKeys < a.n_keys) {
      if constexpr (kDims >= 32) prefetch(a.values[j + kValueKeys] + first_byte);
      prefetch(a.values[j + kValueKeys] + last_byte);
    }
    F v[kVectors];
    for (int32_t s = 0; s < kDims; s += kStepDims) {
      const int32_t step = (d0 + s) / Rows::kStep * Rows::kStep;
      for (int32_t o = 0; o < kStepDims; o += kLanes) v[(s + o) / kLanes] = Rows::load(a.values[j], step, d0 + s - step + o);
    }
    for (int h = 0; h < kHeads; ++h) {
      const F p = Simd::set1(probabilities[static_cast<int64_t>(h) * a.n_keys + j]);
      for (int c = 0; c < kVectors; ++c) acc[h][c] = Simd::fma(p, v[c], acc[h][c]);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    for (int c = 0; c < kVectors; ++c) Simd::store(out + static_cast<int64_t>(h) * a.head_dim + d0 + kLanes * c, acc[h][c]);
  }
}

// Chunks of kValueVectors vectors, then (where head_dim leaves a rest) chunks of one step.
template <typename Rows, int kHeads>
void value_heads(const HeadGroupAttention& a, const float* probabilities, float* out) {
  constexpr int32_t kChunk = Simd::kValueVectors * kLanes;
  constexpr int32_t kRest = kChunk < Rows::kStep ? kChunk : Rows::kStep;
  for (int32_t j0 = 0; j0 < a.n_keys; j0 += kValueKeys) {
    const int32_t j1 = j0 + kValueKeys < a.n_keys ? j0 + kValueKeys : a.n_keys;
    const bool first = j0 == 0;
    int32_t d = 0;
    for (; d + kChunk <= a.head_dim; d += kChunk) {
      value_tile<Rows, kHeads, Simd::kValueVectors>(a, probabilities, out, d, j0, j1, first);
    }
    for (; d < a.head_dim; d += kRest) value_tile<Rows, kHeads, kRest / kLanes>(a, probabilities, out, d, j0, j1, first);
  }
}

// scores (raw dots) -> F16-rounded probabilities, in place, for one head (sink: its sink
// logit, or null). The order of every sum depends only on the number of keys, so a
// token's probabilities do not depend on its batch; a sink's term is added last, through
// the same e^x as the scores'.
void softmax(const HeadGroupAttention& a, float* scores, const float* sink) {
  const int32_t n = a.n_keys;
  const F scale = Simd::set1(a.scale);
  F max_v = Simd::set1(-INFINITY);
  for (int32_t j = 0; j < n; j += kLanes) {
    F v = Simd::mul(Simd::load_first(scores + j, n - j), scale);
    if (a.softcap > 0.0f) {
      float lanes[kLanes];
      Simd::store(lanes, v);
      for (float& x : lanes) x = a.softcap * tanhf(x / a.softcap);
      v = Simd::load(lanes);
    }
    Simd::store_first(scores + j, n - j, v);
    max_v = Simd::max_first(max_v, v, n - j);
  }
  const float scores_max = Simd::reduce_max(max_v);
  const float max_scalar = sink != nullptr && *sink > scores_max ? *sink : scores_max;
  const F max_score = Simd::set1(max_scalar);
  Simd::DoubleSums16 sums;
  for (int32_t j = 0; j < n; j += kLanes) {
    // Lanes past the end read 0 and give e^(-max); they are zeroed before the sum.
    const F e = Simd::keep_first(Simd::exp_nonpositive(Simd::sub(Simd::load_first(scores + j, n - j), max_score)), n - j);
    Simd::store_first(scores + j, n - j, e);
    sums.add(e, j);
  }
  double total = sums.total();
  if (sink != nullptr) {
    float e[kLanes];
    Simd::store(e, Simd::exp_nonpositive(Simd::set1(*sink - max_scalar)));
    total += e[0];
  }
  const F inv_sum = Simd::set1(static_cast<float>(1.0 / total));
  for (int32_t j = 0; j < n; j += kLanes) {
    Simd::store_first(scores + j, n - j, Simd::round_f16(Simd::mul(Simd::load_first(scores + j, n - j), inv_sum)));
  }
}

template <typename Fn>
void for_head_chunks(int32_t n_heads, Fn&& fn) {
  int32_t h = 0;
  for (; h + 4 <= n_heads; h += 4) fn(h, 4);
  if (h + 2 <= n_heads) {
    fn(h, 2);
    h += 2;
  }
  if (h < n_heads) fn(h, 1);
}

template <typename Rows>
void attend(const HeadGroupAttention& a) {
  const int32_t hd = a.head_dim;
  for (int64_t i = 0; i < static_cast<int64_t>(a.n_heads) * hd; i += kLanes) {
    Simd::store(a.scratch_q + i, Simd::round_f16(Simd::load(a.q + i)));
  }
  for_head_chunks(a.n_heads, [&](int32_t h, int32_t n) {
    const float* q16 = a.scratch_q + static_cast<int64_t>(h) * hd;
    HeadGroupAttention part = a;
    part.scratch_scores = a.scratch_scores + static_cast<int64_t>(h) * a.n_keys;
    if (n == 4) score_heads<Rows, 4>(part, q16);
    if (n == 2) score_heads<Rows, 2>(part, q16);
    if (n == 1) score_heads<Rows, 1>(part, q16);
  });
  for (int32_t h = 0; h < a.n_heads; ++h) {
    softmax(a, a.scratch_scores + static_cast<int64_t>(h) * a.n_keys, a.sinks != nullptr ? a.sinks + h : nullptr);
  }
  for_head_chunks(a.n_heads, [&](int32_t h, int32_t n) {
    const float* p = a.scratch_scores + static_cast<int64_t>(h) * a.n_keys;
    float* out = a.out + static_cast<int64_t>(h) * hd;
    if (n == 4) value_heads<Rows, 4>(a, p, out);
    if (n == 2) value_heads<Rows, 2>(a, p, out);
    if (n == 1) value_heads<Rows, 1>(a, p, out);
  });
}

void attend_any_rows(const HeadGroupAttention& a) {
  if (a.kv_type == KvType::kQ8_0) {
    attend<Q8Rows>(a);
  } else {
    attend<F16Rows>(a);
  }
}
