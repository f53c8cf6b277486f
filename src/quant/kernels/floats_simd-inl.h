// The F32, F16 and BF16 dot products, written once for every vector width:
// floats_avx2.cc, floats_avx512.cc and floats_neon.cc each define a struct `Simd` (kLanes
// floats per step, loads of each format, mul, and DoubleSums: running sums of the products
// widened to double) and include this file inside their instruction set's namespace. As in the reference
// (float_formats.cc) each product is rounded to float and the sum is kept in double, so
// a result differs from the reference only by the order of the double additions.
//
// Only Simd's primitives, plain arithmetic and half_to_float (x86_helpers.h, or the NEON
// file's own; internal linkage) here: an inline function shared with other files could be
// merged into an AVX2 file's calls.

namespace {

// sum over i of x[i] * y[i]: kLanes values at a time into Simd::DoubleSums, the tail in
// order after them.
template <typename Value, typename Vector, typename Scalar>
float dot_products(int64_t n, const Value* x, const Value* y, Vector vector_at, Scalar scalar) {
  Simd::DoubleSums sums;
  int64_t i = 0;
  for (; i + Simd::kLanes <= n; i += Simd::kLanes) sums.add(Simd::mul(vector_at(x + i), vector_at(y + i)));
  double sum = sums.total();
  for (; i < n; ++i) sum += static_cast<double>(scalar(x[i]) * scalar(y[i]));
  return static_cast<float>(sum);
}

// One weight row w against n_rows activation rows (a_stride bytes apart), four at a time:
// four independent running sums hide the latency of the double additions, and each is
// the sum dot_products forms (the same products, added in the same order), so every
// result has vec_dot's bits.
template <typename Value, typename Vector, typename Scalar>
void dot_products_rows(int64_t n, const Value* w, const void* activations, size_t a_stride, int64_t n_rows,
                       float* out, int64_t out_stride, Vector vector_at, Scalar scalar) {
  constexpr int kTokens = 4;
  const auto* bytes = static_cast<const uint8_t*>(activations);
  auto row = [&](int64_t t) { return reinterpret_cast<const Value*>(bytes + static_cast<size_t>(t) * a_stride); };
  int64_t t = 0;
  for (; t + kTokens <= n_rows; t += kTokens) {
    const Value* a[kTokens];
    Simd::DoubleSums sums[kTokens];
    for (int j = 0; j < kTokens; ++j) a[j] = row(t + j);
    int64_t i = 0;
    for (; i + Simd::kLanes <= n; i += Simd::kLanes) {
      const auto weights = vector_at(w + i);
      for (int j = 0; j < kTokens; ++j) sums[j].add(Simd::mul(weights, vector_at(a[j] + i)));
    }
    for (int j = 0; j < kTokens; ++j) {
      double sum = sums[j].total();
      for (int64_t k = i; k < n; ++k) sum += static_cast<double>(scalar(w[k]) * scalar(a[j][k]));
      out[(t + j) * out_stride] = static_cast<float>(sum);
    }
  }
  for (; t < n_rows; ++t) out[t * out_stride] = dot_products(n, w, row(t), vector_at, scalar);
}

// BF16 is the upper half of an F32.
float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

float f32_value(float v) { return v; }

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_products(n, static_cast<const float*>(w), static_cast<const float*>(a), Simd::load_f32, f32_value);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_products(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a), Simd::load_f16,
                      half_to_float);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_products(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a), Simd::load_bf16,
                      bf16_to_float);
}

void vec_dot_rows_f32(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_rows, float* out,
                      int64_t out_stride) {
  dot_products_rows(n, static_cast<const float*>(w), a, a_stride, n_rows, out, out_stride, Simd::load_f32, f32_value);
}

void vec_dot_rows_f16(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_rows, float* out,
                      int64_t out_stride) {
  dot_products_rows(n, static_cast<const uint16_t*>(w), a, a_stride, n_rows, out, out_stride, Simd::load_f16,
                    half_to_float);
}

void vec_dot_rows_bf16(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_rows, float* out,
                       int64_t out_stride) {
  dot_products_rows(n, static_cast<const uint16_t*>(w), a, a_stride, n_rows, out, out_stride, Simd::load_bf16,
                    bf16_to_float);
}
