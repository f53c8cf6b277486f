#include "server/embedding_request.h"

#include <cstring>

namespace tokenmill::server {

namespace {

// An input as token ids with [CLS] and [SEP]: text, or ids given by the client (which
// are taken as they are, without adding the special tokens).
std::vector<int32_t> read_input(const Json& input, const ServedEmbeddings& model, const std::string& where) {
  if (input.is_string()) {
    const std::string& text = input.get_ref<const std::string&>();
    if (text.empty()) throw bad_request("'" + where + "' is an empty string", where);
    return model.tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/false);
  }
  if (input.is_array() && !input.empty()) {
    std::vector<int32_t> ids;
    const int32_t n_vocab = model.tokenizer.n_vocab();
    for (const Json& id : input) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= n_vocab) {
        throw bad_request("'" + where + "' must hold token ids in [0, " + std::to_string(n_vocab) + "), found " +
                              dump_json(id),
                          where);
      }
      ids.push_back(id.get<int32_t>());
    }
    return ids;
  }
  throw bad_request("'" + where + "' must be a non-empty string or a non-empty array of token ids, found " +
                        json_kind(input),
                    where);
}

}  // namespace

EmbeddingRequest parse_embedding_request(EmbeddingApi api, const Json& body, const ServedEmbeddings& model) {
  Fields f(body);
  const char* field = api == EmbeddingApi::kOllamaLegacy ? "prompt" : "input";
  const Json* input = f.raw(field);
  if (input == nullptr) throw bad_request("'" + std::string(field) + "' is required", field);

  EmbeddingRequest out;
  // One input (a string or one list of ids), or a list of inputs.
  const bool list = input->is_array() && !input->empty() && ((*input)[0].is_string() || (*input)[0].is_array());
  if (list) {
    if (api == EmbeddingApi::kOllamaLegacy) throw bad_request("'prompt' must be a string", "prompt");
    if (input->size() > kMaxEmbeddingInputs) {
      throw bad_request("'input' holds at most " + std::to_string(kMaxEmbeddingInputs) + " inputs", field);
    }
    for (size_t i = 0; i < input->size(); ++i) {
      out.inputs.push_back(read_input((*input)[i], model, std::string(field) + "[" + std::to_string(i) + "]"));
    }
  } else {
    if (api == EmbeddingApi::kOllamaLegacy && !input->is_string()) throw bad_request("'prompt' must be a string", "prompt");
    out.inputs.push_back(read_input(*input, model, field));
  }

  const int32_t max_positions = model.embedder.config().max_positions;
  const bool truncate = api != EmbeddingApi::kOpenAi && f.boolean("truncate").value_or(true);
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    std::vector<int32_t>& ids = out.inputs[i];
    if (static_cast<int32_t>(ids.size()) <= max_positions) continue;
    if (!truncate) {
      throw bad_request("Input " + std::to_string(i) + " has " + std::to_string(ids.size()) +
                            " tokens; this model reads at most " + std::to_string(max_positions) + " per input",
                        field, "context_length_exceeded");
    }
    const int32_t sep = model.tokenizer.eos_id();
    ids.resize(static_cast<size_t>(max_positions));
    if (sep >= 0) ids.back() = sep;  // keep the closing [SEP]
  }

  if (api == EmbeddingApi::kOpenAi) {
    const std::string format = f.string("encoding_format").value_or("float");
    if (format != "float" && format != "base64") {
      throw bad_request("'encoding_format' must be \"float\" or \"base64\", found " + dump_json(format),
                        "encoding_format");
    }
    out.base64 = format == "base64";
    f.string("user");  // accepted: it changes nothing in the answer
  }
  if (auto dims = f.integer("dimensions", 1, INT32_MAX)) {
    const int32_t native = model.embedder.config().n_embd;
    if (*dims != native) {
      throw bad_request("This model's embeddings have " + std::to_string(native) +
                            " dimensions and it was not trained to be shortened; 'dimensions' must be " +
                            std::to_string(native) + " or absent",
                        "dimensions");
    }
    out.dimensions = static_cast<int32_t>(*dims);
  }
  return out;
}

std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86-64: little-endian already
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t a = static_cast<uint8_t>(bytes[i]);
    const uint32_t b = i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) : 0;
    const uint32_t c = i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0;
    const uint32_t triple = (a << 16) | (b << 8) | c;
    out += kAlphabet[(triple >> 18) & 63];
    out += kAlphabet[(triple >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(triple >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[triple & 63] : '=';
  }
  return out;
}

}  // namespace tokenmill::server
