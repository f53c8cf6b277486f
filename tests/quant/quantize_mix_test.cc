// The per-tensor type rule of each mix, on the shapes of gemma-3-270m (640-wide rows that
// 256-element blocks do not divide, 18 layers, 4 query heads sharing 1 KV head, tied
// embeddings): the layout llama.cpp's llama-quantize gives the same model.
#include <gtest/gtest.h>

#include "quant/quantize_mix.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;

ModelFacts gemma_270m() { return {18, 4, 1, true}; }

TypeChoice choose(std::string_view mix, std::string_view name, int64_t row_length, int32_t n_dims = 2,
                  bool imatrix = false) {
  return choose_tensor_type(*find_mix(mix), {name, n_dims, row_length}, gemma_270m(), imatrix);
}

TEST(QuantizeMix, NamesAreCaseInsensitiveAndUnknownOnesFail) {
  ASSERT_TRUE(find_mix("q4_k_m").has_value());
  EXPECT_EQ(find_mix("q4_k_m")->llama_file_type, 15u);
  EXPECT_EQ(find_mix("Q8_0")->base_type, TensorType::kQ8_0);
  EXPECT_FALSE(find_mix("Q4_K_X").has_value());
  EXPECT_FALSE(find_mix("").has_value());
  EXPECT_EQ(all_mixes().size(), 28u);
  EXPECT_EQ(find_mix("IQ1_M")->llama_file_type, 31u);
  EXPECT_EQ(find_mix("TQ1_0")->llama_file_type, 36u);
  EXPECT_EQ(find_mix("IQ3_M")->llama_file_type, 27u);
  EXPECT_EQ(find_mix("iq2_m")->base_type, TensorType::kIQ2_S);
  EXPECT_EQ(find_mix("IQ2_S")->base_type, TensorType::kIQ2_XS);
  EXPECT_EQ(find_mix("IQ3_XS")->base_type, TensorType::kIQ3_S);
  EXPECT_EQ(find_mix("iq4_xs")->llama_file_type, 30u);
  EXPECT_EQ(find_mix("IQ4_NL")->llama_file_type, 25u);
}

TEST(QuantizeMix, Iq4XsFallsBackToIq4NlWhere256DoesNotDivideARow) {
  EXPECT_EQ(choose("IQ4_XS", "blk.0.ffn_gate.weight", 2048).type, TensorType::kIQ4_XS);
  EXPECT_EQ(choose("IQ4_XS", "blk.0.ffn_gate.weight", 640 + 32).type, TensorType::kIQ4_NL);
  EXPECT_EQ(choose("IQ4_XS", "output.weight", 2048).type, TensorType::kQ6_K);
}

// llama-quantize's layouts of gemma-3-270m (row lengths 640 for Q/K/V/gate/up, 1024 for
// attn_output, 2048 for ffn_down; 4 query heads per KV head).
TEST(QuantizeMix, LatticeMixesMatchLlamaCppOnGemma270m) {
  // 640-wide rows: every 256-element type falls back to IQ4_NL (Q4_K to Q5_0).
  EXPECT_EQ(choose("IQ3_S", "blk.5.ffn_gate.weight", 640).type, TensorType::kIQ4_NL);
  EXPECT_EQ(choose("IQ3_S", "blk.5.ffn_gate.weight", 640).wanted, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ3_S", "blk.5.ffn_down.weight", 2048).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ3_S", "blk.5.attn_output.weight", 1024).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ3_S", "blk.5.attn_v.weight", 640).wanted, TensorType::kQ4_K);  // 4 heads per KV head
  EXPECT_EQ(choose("IQ3_S", "token_embd.weight", 640).type, TensorType::kQ8_0);
  // IQ3_M: Q4_K for attn_output and the first eighth of ffn_down.
  EXPECT_EQ(choose("IQ3_M", "blk.1.ffn_down.weight", 2048).type, TensorType::kQ4_K);
  EXPECT_EQ(choose("IQ3_M", "blk.2.ffn_down.weight", 2048).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ3_M", "blk.2.attn_output.weight", 1024).type, TensorType::kQ4_K);
  // IQ3_XS: IQ3_XXS for attn_q/attn_k and the middle layers' gate/up.
  EXPECT_EQ(choose("IQ3_XS", "blk.2.attn_q.weight", 640).wanted, TensorType::kIQ3_XXS);
  EXPECT_EQ(choose("IQ3_XS", "blk.2.ffn_up.weight", 640).wanted, TensorType::kIQ3_XXS);
  EXPECT_EQ(choose("IQ3_XS", "blk.1.ffn_up.weight", 640).wanted, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ3_XS", "blk.16.ffn_gate.weight", 640).wanted, TensorType::kIQ3_S);
  // IQ3_XXS: attn_q/attn_k in IQ2_S, attn_output IQ3_S, ffn_down K-quants without an imatrix.
  EXPECT_EQ(choose("IQ3_XXS", "blk.3.attn_k.weight", 640).wanted, TensorType::kIQ2_S);
  EXPECT_EQ(choose("IQ3_XXS", "blk.3.attn_output.weight", 1024).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ3_XXS", "blk.3.ffn_down.weight", 2048).type, TensorType::kQ3_K);
  EXPECT_EQ(choose("IQ3_XXS", "blk.3.ffn_down.weight", 2048, 2, true).type, TensorType::kIQ3_XXS);
  // The 2-bit mixes: Q5_K for the output where it fits, Q2_K (IQ2_XXS/XS) or IQ3_S (IQ2_S/M)
  // for the first eighth of ffn_down, Q4_K for attn_v with 4 heads per KV head.
  EXPECT_EQ(choose("IQ2_XS", "output.weight", 2048).type, TensorType::kQ5_K);
  EXPECT_EQ(choose("IQ2_XS", "token_embd.weight", 640).type, TensorType::kQ8_0);
  EXPECT_EQ(choose("IQ2_XS", "blk.0.ffn_down.weight", 2048).type, TensorType::kQ2_K);
  EXPECT_EQ(choose("IQ2_XS", "blk.9.ffn_down.weight", 2048).type, TensorType::kIQ2_XS);
  EXPECT_EQ(choose("IQ2_M", "blk.0.ffn_down.weight", 2048).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ2_M", "blk.9.ffn_down.weight", 2048).type, TensorType::kIQ2_S);
  EXPECT_EQ(choose("IQ2_M", "blk.9.attn_output.weight", 1024).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ2_S", "blk.9.attn_output.weight", 1024).type, TensorType::kIQ3_S);
  EXPECT_EQ(choose("IQ2_XXS", "blk.9.attn_output.weight", 1024).type, TensorType::kIQ2_XXS);
  EXPECT_EQ(choose("IQ2_XXS", "blk.9.attn_v.weight", 640).wanted, TensorType::kQ4_K);
  // IQ1_S / IQ1_M: as the 2-bit mixes, with IQ2_XXS for attn_output.
  EXPECT_EQ(choose("IQ1_M", "blk.9.attn_output.weight", 1024).type, TensorType::kIQ2_XXS);
  EXPECT_EQ(choose("IQ1_S", "blk.9.ffn_down.weight", 2048).type, TensorType::kIQ1_S);
  EXPECT_EQ(choose("IQ1_S", "blk.0.ffn_down.weight", 2048).type, TensorType::kQ2_K);
  EXPECT_EQ(choose("IQ1_S", "output.weight", 2048).type, TensorType::kQ5_K);
  // TQ1_0 / TQ2_0: the base type throughout, Q4_0 where 256 does not divide a row.
  EXPECT_EQ(choose("TQ2_0", "blk.9.ffn_down.weight", 2048).type, TensorType::kTQ2_0);
  EXPECT_EQ(choose("TQ1_0", "blk.9.ffn_up.weight", 640).type, TensorType::kQ4_0);
  EXPECT_EQ(choose("TQ1_0", "output.weight", 2048).type, TensorType::kQ6_K);
  // IQ4_XS: attn_v Q5_K with 4 heads per KV head; the first ffn_down Q5_K without an imatrix.
  EXPECT_EQ(choose("IQ4_XS", "blk.9.attn_v.weight", 640).wanted, TensorType::kQ5_K);
  EXPECT_EQ(choose("IQ4_XS", "blk.1.ffn_down.weight", 2048).type, TensorType::kQ5_K);
  EXPECT_EQ(choose("IQ4_XS", "blk.1.ffn_down.weight", 2048, 2, true).type, TensorType::kIQ4_XS);
}

TEST(QuantizeMix, LowBitLatticeTypesNeedAnImportanceMatrix) {
  EXPECT_TRUE(type_requires_importance(TensorType::kIQ2_XS, "blk.0.ffn_up.weight"));
  EXPECT_TRUE(type_requires_importance(TensorType::kIQ3_XXS, "blk.0.ffn_up.weight"));
  EXPECT_TRUE(type_requires_importance(TensorType::kIQ1_M, "blk.0.ffn_up.weight"));
  EXPECT_FALSE(type_requires_importance(TensorType::kIQ3_S, "blk.0.ffn_up.weight"));
  EXPECT_FALSE(type_requires_importance(TensorType::kIQ2_XS, "output.weight"));
  EXPECT_FALSE(type_requires_importance(TensorType::kQ2_K, "blk.0.ffn_up.weight"));
}

TEST(QuantizeMix, LayerIndexFromName) {
  EXPECT_EQ(layer_of_tensor("blk.0.attn_v.weight"), 0);
  EXPECT_EQ(layer_of_tensor("blk.17.ffn_down.weight"), 17);
  EXPECT_EQ(layer_of_tensor("token_embd.weight"), -1);
  EXPECT_EQ(layer_of_tensor("blk.x.attn_v.weight"), -1);
  EXPECT_EQ(layer_of_tensor("blk.3"), -1);
}

TEST(QuantizeMix, NormsAndVectorsStayF32) {
  EXPECT_EQ(choose("Q4_K_M", "blk.0.attn_norm.weight", 640, 1).type, TensorType::kF32);
  EXPECT_EQ(choose("Q4_K_M", "blk.0.attn_q_norm.weight", 256, 1).type, TensorType::kF32);
  EXPECT_EQ(choose("F16", "output_norm.weight", 640, 1).type, TensorType::kF32);
  EXPECT_FALSE(choose("Q4_K_M", "blk.0.attn_norm.weight", 640, 1).quantized_weight);
}

TEST(QuantizeMix, Q4_K_M_MatchesLlamaCppOnGemma270m) {
  // Tied output: Q6_K does not fit 640-wide rows -> Q8_0.
  EXPECT_EQ(choose("Q4_K_M", "token_embd.weight", 640).type, TensorType::kQ8_0);
  // attn_v: Q6_K in the layers that get more bits (0, 1, 4, 7, 10, 13, 15, 16, 17), else
  // Q4_K; both fall back on 640-wide rows (Q6_K -> Q8_0, Q4_K -> Q5_0).
  for (int layer : {0, 1, 4, 7, 10, 13, 15, 16, 17}) {
    const TypeChoice c = choose("Q4_K_M", "blk." + std::to_string(layer) + ".attn_v.weight", 640);
    EXPECT_EQ(c.wanted, TensorType::kQ6_K) << layer;
    EXPECT_EQ(c.type, TensorType::kQ8_0) << layer;
  }
  for (int layer : {2, 3, 5, 6, 8, 9, 11, 12, 14}) {
    EXPECT_EQ(choose("Q4_K_M", "blk." + std::to_string(layer) + ".attn_v.weight", 640).type, TensorType::kQ5_0)
        << layer;
    EXPECT_EQ(choose("Q4_K_M", "blk." + std::to_string(layer) + ".ffn_down.weight", 2048).type, TensorType::kQ4_K)
        << layer;
  }
  EXPECT_EQ(choose("Q4_K_M", "blk.0.ffn_down.weight", 2048).type, TensorType::kQ6_K);
  EXPECT_EQ(choose("Q4_K_M", "blk.5.attn_output.weight", 1024).type, TensorType::kQ4_K);
  EXPECT_EQ(choose("Q4_K_M", "blk.5.attn_q.weight", 640).type, TensorType::kQ5_0);
  EXPECT_EQ(choose("Q4_K_M", "blk.5.ffn_gate.weight", 640).type, TensorType::kQ5_0);
}

TEST(QuantizeMix, LowBitMixesRaiseSensitiveTensors) {
  // Q2_K: attn_v to Q4_K when 4+ query heads share a KV head; attn_output and ffn_down Q3_K.
  EXPECT_EQ(choose("Q2_K", "blk.3.attn_v.weight", 640).wanted, TensorType::kQ4_K);
  EXPECT_EQ(choose("Q2_K", "blk.3.attn_output.weight", 1024).type, TensorType::kQ3_K);
  EXPECT_EQ(choose("Q2_K", "blk.3.ffn_down.weight", 2048).type, TensorType::kQ3_K);
  EXPECT_EQ(choose("Q2_K", "blk.3.ffn_up.weight", 640).type, TensorType::kQ4_0);  // Q2_K fallback
  // Q3_K_M: attn_v Q5_K in the first two layers, then Q4_K; attn_output Q4_K; ffn_down
  // Q5_K in the first n/16 layers, then Q4_K.
  EXPECT_EQ(choose("Q3_K_M", "blk.1.attn_v.weight", 640).wanted, TensorType::kQ5_K);
  EXPECT_EQ(choose("Q3_K_M", "blk.1.attn_v.weight", 640).type, TensorType::kQ5_1);
  EXPECT_EQ(choose("Q3_K_M", "blk.2.attn_v.weight", 640).wanted, TensorType::kQ4_K);
  EXPECT_EQ(choose("Q3_K_M", "blk.0.ffn_down.weight", 2048).type, TensorType::kQ5_K);
  EXPECT_EQ(choose("Q3_K_M", "blk.1.ffn_down.weight", 2048).type, TensorType::kQ4_K);
  EXPECT_EQ(choose("Q3_K_M", "blk.1.attn_output.weight", 1024).type, TensorType::kQ4_K);
  EXPECT_EQ(choose("Q3_K_S", "blk.1.attn_output.weight", 1024).type, TensorType::kQ3_K);
  // Q4_K_S: Q5_K for attn_v in the first 4 layers and ffn_down in the first n/8.
  EXPECT_EQ(choose("Q4_K_S", "blk.3.attn_v.weight", 640).wanted, TensorType::kQ5_K);
  EXPECT_EQ(choose("Q4_K_S", "blk.4.attn_v.weight", 640).wanted, TensorType::kQ4_K);
  EXPECT_EQ(choose("Q4_K_S", "blk.1.ffn_down.weight", 2048).type, TensorType::kQ5_K);
  EXPECT_EQ(choose("Q4_K_S", "blk.2.ffn_down.weight", 2048).type, TensorType::kQ4_K);
}

TEST(QuantizeMix, LegacyMixesUseImatrixRuleOnlyWithImatrix) {
  EXPECT_EQ(choose("Q4_0", "blk.0.ffn_down.weight", 2048).type, TensorType::kQ4_0);
  EXPECT_EQ(choose("Q4_0", "blk.0.ffn_down.weight", 2048, 2, true).type, TensorType::kQ4_1);
  EXPECT_EQ(choose("Q5_0", "blk.0.ffn_down.weight", 2048, 2, true).type, TensorType::kQ5_1);
  EXPECT_EQ(choose("Q5_0", "blk.9.ffn_down.weight", 2048, 2, true).type, TensorType::kQ5_0);
}

TEST(QuantizeMix, OutputGetsQ6KOrQ8_0) {
  ModelFacts untied = gemma_270m();
  untied.tied_embeddings = false;
  const MixInfo q4 = *find_mix("Q4_K_M");
  EXPECT_EQ(choose_tensor_type(q4, {"output.weight", 2, 4096}, untied, false).type, TensorType::kQ6_K);
  EXPECT_EQ(choose_tensor_type(q4, {"token_embd.weight", 2, 4096}, untied, false).type, TensorType::kQ4_K);
  EXPECT_EQ(choose_tensor_type(*find_mix("Q8_0"), {"output.weight", 2, 4096}, untied, false).type,
            TensorType::kQ8_0);
}

TEST(QuantizeMix, NamedTypesOverrideTheVocabularyTensorsOnly) {
  const MixInfo q2 = *find_mix("Q2_K");
  TypeOverrides overrides;
  overrides.output = TensorType::kQ4_0;
  // Tied: token_embd.weight is the output projection and takes the output's type.
  EXPECT_EQ(choose_tensor_type(q2, {"token_embd.weight", 2, 640}, gemma_270m(), false, overrides).type,
            TensorType::kQ4_0);
  EXPECT_EQ(choose("Q2_K", "token_embd.weight", 640).type, TensorType::kQ8_0);
  EXPECT_EQ(choose_tensor_type(q2, {"blk.0.attn_q.weight", 2, 512}, gemma_270m(), false, overrides).type,
            TensorType::kQ2_K);
  // Untied: each tensor takes its own; a block that does not divide the rows falls back.
  ModelFacts untied = gemma_270m();
  untied.tied_embeddings = false;
  overrides.token_embedding = TensorType::kQ6_K;
  EXPECT_EQ(choose_tensor_type(q2, {"output.weight", 2, 4096}, untied, false, overrides).type, TensorType::kQ4_0);
  const TypeChoice embedding = choose_tensor_type(q2, {"token_embd.weight", 2, 640}, untied, false, overrides);
  EXPECT_EQ(embedding.wanted, TensorType::kQ6_K);
  EXPECT_EQ(embedding.type, TensorType::kQ8_0);
  // A float mix with a quantized output, and a quantized mix with a float one.
  EXPECT_EQ(choose_tensor_type(*find_mix("F16"), {"output.weight", 2, 4096}, untied, false, overrides).type,
            TensorType::kQ4_0);
  overrides.output = TensorType::kF16;
  EXPECT_EQ(choose_tensor_type(q2, {"output.weight", 2, 4096}, untied, false, overrides).type, TensorType::kF16);
  // Norms stay F32 whatever is named.
  EXPECT_EQ(choose_tensor_type(q2, {"output_norm.weight", 1, 640}, untied, false, overrides).type, TensorType::kF32);
}

TEST(QuantizeMix, OnlyWeightFormatsCanBeNamed) {
  EXPECT_TRUE(is_weight_type(TensorType::kQ4_0));
  EXPECT_TRUE(is_weight_type(TensorType::kQ6_K));
  EXPECT_TRUE(is_weight_type(TensorType::kBF16));
  EXPECT_FALSE(is_weight_type(TensorType::kQ8_K));  // activations only
  EXPECT_FALSE(is_weight_type(TensorType::kQ8_1));
}

TEST(QuantizeMix, FloatMixesAndOddRows) {
  EXPECT_EQ(choose("F16", "blk.0.attn_q.weight", 640).type, TensorType::kF16);
  EXPECT_EQ(choose("BF16", "token_embd.weight", 640).type, TensorType::kBF16);
  EXPECT_EQ(choose("F32", "blk.0.attn_q.weight", 640).type, TensorType::kF32);
  // No 32-element block fits a 100-wide row: F16.
  EXPECT_EQ(choose("Q4_K_M", "blk.3.attn_q.weight", 100).type, TensorType::kF16);
  EXPECT_EQ(choose("Q8_0", "blk.3.attn_q.weight", 100).type, TensorType::kF16);
}

}  // namespace
}  // namespace tokenmill::quant
