#include "engine/request.h"

namespace tokenmill::engine {

Status check_request(const Request& request, int32_t n_vocab, int32_t max_context, int64_t kv_positions) {
  TM_RETURN_IF_ERROR(request.sampling.validate());
  if (request.prompt.empty()) return invalid_argument("the prompt is empty");
  if (request.n < 1 || request.n > kMaxChoices) {
    return invalid_argument("n must be between 1 and " + std::to_string(kMaxChoices) + ", got " +
                            std::to_string(request.n));
  }
  if (request.max_tokens < 1) return invalid_argument("max_tokens must be at least 1");
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= n_vocab) return invalid_argument("prompt token id out of range");
  }
  for (int32_t t : request.prediction) {
    if (t < 0 || t >= n_vocab) return invalid_argument("prediction token id out of range");
  }
  // A prediction longer than the output can be is harmless (drafts never pass max_tokens)
  // but is bounded, as the prompt is.
  if (static_cast<int64_t>(request.prediction.size()) > max_context) {
    return invalid_argument("the prediction (" + std::to_string(request.prediction.size()) +
                            " tokens) is longer than the context of " + std::to_string(max_context) + " tokens");
  }
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  if (n_prompt + request.max_tokens > max_context) {
    return invalid_argument("the prompt (" + std::to_string(n_prompt) + " tokens) plus max_tokens (" +
                            std::to_string(request.max_tokens) + ") exceeds the context of " +
                            std::to_string(max_context) + " tokens");
  }
  if (n_prompt + 1 > kv_positions) {
    return invalid_argument("the prompt (" + std::to_string(n_prompt) + " tokens) needs more KV cache than the " +
                            std::to_string(kv_positions) + " positions the server has");
  }
  return Status::ok_status();
}

}  // namespace tokenmill::engine
