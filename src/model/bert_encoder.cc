#include "model/bert_encoder.h"

#include <algorithm>
#include <cmath>

#include "model/tensor_binder.h"
#include "model/weights.h"

namespace tokenmill::model {

namespace {

// Widths an input is refused beyond: what the buffers below may hold without overflow.
constexpr int64_t kMaxWidth = 1 << 16;

// The integer hyperparameters, each checked against a bound the buffers can hold.
Status read_widths(const gguf::File& file, BertConfig& c) {
  struct Field {
    const char* key;
    int64_t max;
    int32_t* out;
  };
  const Field fields[] = {{"bert.block_count", 256, &c.n_layers},
                          {"bert.embedding_length", kMaxWidth, &c.n_embd},
                          {"bert.attention.head_count", 1024, &c.n_heads},
                          {"bert.feed_forward_length", 4 * kMaxWidth, &c.n_ff},
                          {"bert.context_length", kMaxWidth, &c.max_positions}};
  for (const Field& field : fields) {
    auto value = file.get_int(field.key);
    if (!value.ok()) return value.status();
    if (*value <= 0 || *value > field.max) {
      return corrupt_data(std::string(field.key) + " is " + std::to_string(*value) + ", expected 1.." +
                          std::to_string(field.max));
    }
    *field.out = static_cast<int32_t>(*value);
  }
  return {};
}

// y = (x - mean) / sqrt(var + eps) * weight + bias, per row of n values.
void layer_norm(float* x, int64_t n_rows, int64_t n, const float* weight, const float* bias, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = x + r * n;
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += row[i];
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(n);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) row[i] = (row[i] - m) * inv * weight[i] + bias[i];
  }
}

// erf(x) within 1.5e-7 (Abramowitz and Stegun 7.1.26), with one exp: several times
// cheaper than std::erf, and below float's resolution of GELU's result.
inline float fast_erf(float x) {
  const float t = 1.0f / (1.0f + 0.3275911f * std::fabs(x));
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float y = 1.0f - poly * std::exp(-x * x);
  return x < 0 ? -y : y;
}

// BERT's GELU, with erf (not the tanh approximation).
void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + fast_erf(x[i] * 0.70710678118654752f));
}

// a · b over n floats, in 16 independent lanes the compiler turns into vector code.
inline float dot(const float* a, const float* b, int64_t n) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int x = 0; x < 16; ++x) lanes[x] += a[i + x] * b[i + x];
  }
  float total = 0;
  for (; i < n; ++i) total += a[i] * b[i];
  for (float lane : lanes) total += lane;
  return total;
}

// out[t] = softmax(scale * q[t] . k[j]) v[j] over the input's tokens j, for one head
// (columns off .. off + head_dim of rows begin .. begin + len, rows of width d).
void attend(const float* q, const float* k, const float* v, int64_t begin, int64_t len, int64_t off,
            int64_t head_dim, int64_t d, float scale, float* out) {
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) {
    const float* qi = q + (begin + i) * d + off;
    float best = -INFINITY;
    for (int64_t j = 0; j < len; ++j) {
      const float sc = dot(qi, k + (begin + j) * d + off, head_dim) * scale;
      scores[static_cast<size_t>(j)] = sc;
      best = std::max(best, sc);
    }
    float total = 0;
    for (float& sc : scores) total += (sc = std::exp(sc - best));
    float* oi = out + (begin + i) * d + off;
    std::fill(oi, oi + head_dim, 0.0f);
    const float inv = 1.0f / total;
    for (int64_t j = 0; j < len; ++j) {
      const float w = scores[static_cast<size_t>(j)] * inv;
      const float* vj = v + (begin + j) * d + off;
      for (int64_t x = 0; x < head_dim; ++x) oi[x] += w * vj[x];
    }
  }
}

}  // namespace

const char* pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "mean";
}

Result<std::unique_ptr<BertEncoder>> BertEncoder::load(std::shared_ptr<const gguf::File> file,
                                                       std::unique_ptr<ops::Backend> backend) {
  const gguf::File& f = *file;
  if (f.get_string_or("general.architecture", "") != "bert") {
    return unsupported("general.architecture is '" + f.get_string_or("general.architecture", "") +
                       "', not an embedding model (bert)");
  }
  std::unique_ptr<BertEncoder> e(new BertEncoder());
  BertConfig& c = e->config_;
  TM_RETURN_IF_ERROR(read_widths(f, c));
  if (c.n_embd % c.n_heads != 0) return corrupt_data("bert.embedding_length is not a multiple of the head count");
  c.eps = static_cast<float>(f.get_double_or("bert.attention.layer_norm_epsilon", 1e-12));
  if (!(c.eps > 0 && c.eps < 1)) return corrupt_data("bert.attention.layer_norm_epsilon is out of range");
  if (f.get_bool_or("bert.attention.causal", false)) return unsupported("a causal BERT model");
  switch (f.get_int_or("bert.pooling_type", 1)) {
    case 1: c.pooling = Pooling::kMean; break;
    case 2: c.pooling = Pooling::kCls; break;
    case 3: c.pooling = Pooling::kLast; break;
    default: return unsupported("bert.pooling_type " + std::to_string(f.get_int_or("bert.pooling_type", 1)) +
                                " (supported: 1 mean, 2 cls, 3 last)");
  }
  const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) return not_found("tensor 'token_embd.weight' is missing");
  if (embd->shape[1] <= 0 || embd->shape[1] > (int64_t{1} << 24)) return corrupt_data("token_embd.weight's vocabulary");
  c.n_vocab = static_cast<int32_t>(embd->shape[1]);

  TensorBinder b(f);
  const int64_t d = c.n_embd;
  TM_RETURN_IF_ERROR(b.matrix("token_embd.weight", c.n_vocab, d, e->token_embd_));
  TM_RETURN_IF_ERROR(b.matrix("position_embd.weight", c.max_positions, d, e->position_embd_));
  const gguf::TensorInfo* types = f.find_tensor("token_types.weight");
  const int64_t n_types = types && types->shape.size() == 2 ? types->shape[1] : 0;
  if (n_types < 1 || n_types > 16) return corrupt_data("tensor 'token_types.weight' is missing or malformed");
  TM_RETURN_IF_ERROR(b.matrix("token_types.weight", n_types, d, e->token_types_));
  TM_RETURN_IF_ERROR(b.vector("token_embd_norm.weight", d, e->embd_norm_));
  TM_RETURN_IF_ERROR(b.vector("token_embd_norm.bias", d, e->embd_norm_bias_));
  e->layers_.resize(static_cast<size_t>(c.n_layers));
  for (int32_t i = 0; i < c.n_layers; ++i) {
    Layer& l = e->layers_[static_cast<size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    TM_RETURN_IF_ERROR(b.matrix(p + "attn_q.weight", d, d, l.q));
    TM_RETURN_IF_ERROR(b.matrix(p + "attn_k.weight", d, d, l.k));
    TM_RETURN_IF_ERROR(b.matrix(p + "attn_v.weight", d, d, l.v));
    TM_RETURN_IF_ERROR(b.matrix(p + "attn_output.weight", d, d, l.o));
    TM_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", c.n_ff, d, l.up));
    TM_RETURN_IF_ERROR(b.matrix(p + "ffn_down.weight", d, c.n_ff, l.down));
    TM_RETURN_IF_ERROR(b.vector(p + "attn_q.bias", d, l.q_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "attn_k.bias", d, l.k_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "attn_v.bias", d, l.v_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "attn_output.bias", d, l.o_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "ffn_up.bias", c.n_ff, l.up_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "ffn_down.bias", d, l.down_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "attn_output_norm.weight", d, l.attn_norm));
    TM_RETURN_IF_ERROR(b.vector(p + "attn_output_norm.bias", d, l.attn_norm_bias));
    TM_RETURN_IF_ERROR(b.vector(p + "layer_output_norm.weight", d, l.out_norm));
    TM_RETURN_IF_ERROR(b.vector(p + "layer_output_norm.bias", d, l.out_norm_bias));
  }
  // The token, position and type tables are read by row (get_rows): only the layers'
  // matrices go into the kernels' panels.
  for (Layer& l : e->layers_) {
    for (ops::WeightMatrix* m : {&l.q, &l.k, &l.v, &l.o, &l.up, &l.down}) {
      if (auto buffer = repack_matrix(*m, f)) e->repacked_.push_back(std::move(buffer));
    }
  }
  e->file_ = std::move(file);
  e->backend_ = std::move(backend);
  return e;
}

void BertEncoder::embed(std::span<const std::vector<int32_t>> inputs, std::vector<std::vector<float>>& out) {
  const BertConfig& c = config_;
  const int64_t d = c.n_embd, head_dim = c.n_embd / c.n_heads;
  std::vector<int32_t> ids, positions;
  std::vector<int64_t> starts;  // each input's first row
  for (const std::vector<int32_t>& input : inputs) {
    starts.push_back(static_cast<int64_t>(ids.size()));
    for (size_t i = 0; i < input.size(); ++i) {
      ids.push_back(input[i]);
      positions.push_back(static_cast<int32_t>(i));
    }
  }
  starts.push_back(static_cast<int64_t>(ids.size()));
  const int64_t n = static_cast<int64_t>(ids.size());
  ops::Backend& be = *backend_;

  std::vector<float> hidden(static_cast<size_t>(n * d)), scratch(static_cast<size_t>(n * d));
  be.get_rows(token_embd_, ids, hidden.data());
  be.get_rows(position_embd_, positions, scratch.data());
  be.add(hidden.data(), scratch.data(), n * d, hidden.data());
  const std::vector<int32_t> type_zero(static_cast<size_t>(n), 0);
  be.get_rows(token_types_, type_zero, scratch.data());
  be.add(hidden.data(), scratch.data(), n * d, hidden.data());
  layer_norm(hidden.data(), n, d, embd_norm_, embd_norm_bias_, c.eps);

  std::vector<float> q(static_cast<size_t>(n * d)), k(q.size()), v(q.size()), attn(q.size());
  std::vector<float> ff(static_cast<size_t>(n * c.n_ff));
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (const Layer& l : layers_) {
    const ops::MatmulProduct qkv[] = {{&l.q, q.data()}, {&l.k, k.data()}, {&l.v, v.data()}};
    be.matmul_shared_input(qkv, hidden.data(), n);
    be.add_bias(q.data(), l.q_bias, n, d);
    be.add_bias(k.data(), l.k_bias, n, d);
    be.add_bias(v.data(), l.v_bias, n, d);
    // Bidirectional attention within each input, one (input, head) pair per task.
    const size_t n_inputs = starts.size() - 1;
    be.for_each_parallel(n_inputs * static_cast<size_t>(c.n_heads), [&](size_t task) {
      const size_t s = task / static_cast<size_t>(c.n_heads);
      const int64_t h = static_cast<int64_t>(task % static_cast<size_t>(c.n_heads));
      attend(q.data(), k.data(), v.data(), starts[s], starts[s + 1] - starts[s], h * head_dim, head_dim, d, scale,
             attn.data());
    });
    be.matmul(l.o, attn.data(), n, scratch.data());
    be.add_bias(scratch.data(), l.o_bias, n, d);
    be.add(hidden.data(), scratch.data(), n * d, hidden.data());
    layer_norm(hidden.data(), n, d, l.attn_norm, l.attn_norm_bias, c.eps);

    be.matmul(l.up, hidden.data(), n, ff.data());
    be.add_bias(ff.data(), l.up_bias, n, c.n_ff);
    gelu_erf(ff.data(), n * c.n_ff);
    be.matmul(l.down, ff.data(), n, scratch.data());
    be.add_bias(scratch.data(), l.down_bias, n, d);
    be.add(hidden.data(), scratch.data(), n * d, hidden.data());
    layer_norm(hidden.data(), n, d, l.out_norm, l.out_norm_bias, c.eps);
  }

  out.assign(inputs.size(), std::vector<float>(static_cast<size_t>(d), 0.0f));
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    std::vector<float>& e = out[s];
    const int64_t begin = starts[s], len = starts[s + 1] - starts[s];
    if (c.pooling == Pooling::kMean) {
      for (int64_t i = 0; i < len; ++i) {
        for (int64_t x = 0; x < d; ++x) e[static_cast<size_t>(x)] += hidden[static_cast<size_t>((begin + i) * d + x)];
      }
      for (float& x : e) x /= static_cast<float>(len);
    } else {
      const int64_t row = c.pooling == Pooling::kCls ? begin : begin + len - 1;
      std::copy_n(&hidden[static_cast<size_t>(row * d)], d, e.begin());
    }
    double norm = 0;
    for (float x : e) norm += static_cast<double>(x) * x;
    const float inv = norm > 0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
    for (float& x : e) x *= inv;
  }
}

}  // namespace tokenmill::model
