#include "ops/timing_backend.h"

#include "base/timer.h"
#include "quant/type_traits.h"

namespace tokenmill::ops {

double OpTimes::total_seconds() const {
  double total = 0;
  for (const auto& [label, t] : times_) total += t.seconds;
  return total;
}

template <typename Fn>
void TimingBackend::timed(const std::string& label, Fn&& fn, int64_t weight_bytes) {
  Timer timer;
  fn();
  times_->add(label, timer.seconds(), weight_bytes);
}

namespace {

// "q8_0 640x262144": the weight type, then inputs x outputs.
std::string matmul_shape(const WeightMatrix& w) {
  return std::string(quant::type_traits(w.type).name) + " " + std::to_string(w.n_cols) + "x" +
         std::to_string(w.n_rows);
}

}  // namespace

void TimingBackend::matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  timed("matmul " + matmul_shape(w), [&] { inner().matmul(w, x, n_tokens, y); }, w.n_bytes());
}
void TimingBackend::matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                                  int32_t* argmax) {
  timed("matmul " + matmul_shape(w) + " + argmax", [&] { inner().matmul_argmax(w, x, n_tokens, y, argmax); },
        w.n_bytes());
}
void TimingBackend::matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) {
  std::string label = "matmul ";
  int64_t bytes = 0;
  for (size_t i = 0; i < products.size(); ++i) {
    label += (i > 0 ? " + " : "") + matmul_shape(*products[i].w);
    bytes += products[i].w->n_bytes();
  }
  timed(label, [&] { inner().matmul_shared_input(products, x, n_tokens); }, bytes);
}
void TimingBackend::get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) {
  timed("get_rows", [&] { inner().get_rows(table, ids, out); });
}
void TimingBackend::rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps,
                             float* y) {
  timed("rms_norm", [&] { inner().rms_norm(x, weight, n_rows, n_cols, eps, y); });
}
void TimingBackend::rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim,
                         int32_t n_rot, float freq_base, float freq_scale, RopeStyle style, const float* freq_factors) {
  timed("rope", [&] { inner().rope(x, positions, n_heads, head_dim, n_rot, freq_base, freq_scale, style, freq_factors); });
}
void TimingBackend::geglu(const float* gate, const float* up, int64_t n, float* y) {
  timed("geglu", [&] { inner().geglu(gate, up, n, y); });
}
void TimingBackend::swiglu(const float* gate, const float* up, int64_t n, float* y) {
  timed("swiglu", [&] { inner().swiglu(gate, up, n, y); });
}
void TimingBackend::add(const float* a, const float* b, int64_t n, float* y) {
  timed("add", [&] { inner().add(a, b, n, y); });
}
void TimingBackend::add_bias(float* x, const float* bias, int64_t n_rows, int64_t n_cols) {
  timed("add_bias", [&] { inner().add_bias(x, bias, n_rows, n_cols); });
}
void TimingBackend::scale(float* x, float factor, int64_t n) {
  timed("scale", [&] { inner().scale(x, factor, n); });
}
void TimingBackend::store_kv(KvStorage& kv, int32_t layer, const AttentionBatch& batch, const float* k,
                             const float* v) {
  timed("store_kv", [&] { inner().store_kv(kv, layer, batch, k, v); });
}
void TimingBackend::attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params,
                              const float* q, float* out) {
  timed(params.window > 0 ? "attention (window)" : "attention", [&] { inner().attention(kv, batch, params, q, out); });
}

}  // namespace tokenmill::ops
