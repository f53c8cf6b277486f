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

// BF16 is the upper half of an F32.
float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  return dot_products(n, static_cast<const float*>(w), static_cast<const float*>(a), Simd::load_f32,
                      [](float v) { return v; });
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_products(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a), Simd::load_f16,
                      half_to_float);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_products(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a), Simd::load_bf16,
                      bf16_to_float);
}
