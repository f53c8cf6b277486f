// A Backend that forwards every call to another one and adds up the wall time each kind
// of operation takes: `tokenmill bench --profile` shows where a forward pass goes.
// Matmuls are told apart by weight type and shape ("matmul q8_0 640x262144"; the products
// of one input joined by " + "), the other operations by name. Each call costs two clock
// reads (tens of nanoseconds), so a profiled pass is as fast as a plain one to within noise.
//
// Thread-safety: as Backend; OpTimes is written by the calling thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ops/forwarding_backend.h"

namespace tokenmill::ops {

struct OpTime {
  int64_t calls = 0;
  double seconds = 0;
  int64_t weight_bytes = 0;  // matmuls: the weight matrices' bytes, once per call
};

// Label -> totals since the last clear().
class OpTimes {
 public:
  void add(const std::string& label, double seconds, int64_t weight_bytes = 0) {
    OpTime& t = times_[label];
    ++t.calls;
    t.seconds += seconds;
    t.weight_bytes += weight_bytes;
  }
  void clear() { times_.clear(); }
  const std::map<std::string, OpTime>& times() const { return times_; }
  double total_seconds() const;

 private:
  std::map<std::string, OpTime> times_;
};

class TimingBackend final : public ForwardingBackend {
 public:
  // `times` must outlive the backend.
  TimingBackend(std::unique_ptr<Backend> inner, OpTimes* times) : ForwardingBackend(std::move(inner)), times_(times) {}

  void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) override;
  void matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int32_t* argmax) override;
  void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) override;
  void get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) override;
  void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y) override;
  void rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim, int32_t n_rot,
            float freq_base, float freq_scale, RopeStyle style,
            const float* freq_factors = nullptr) override;
  void geglu(const float* gate, const float* up, int64_t n, float* y) override;
  void swiglu(const float* gate, const float* up, int64_t n, float* y) override;
  void add(const float* a, const float* b, int64_t n, float* y) override;
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n_cols) override;
  void scale(float* x, float factor, int64_t n) override;
  void store_kv(KvStorage& kv, int32_t layer, const AttentionBatch& batch, const float* k, const float* v) override;
  void attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params, const float* q,
                 float* out) override;

 private:
  template <typename Fn>
  void timed(const std::string& label, Fn&& fn, int64_t weight_bytes = 0);

  OpTimes* times_;
};

}  // namespace tokenmill::ops
