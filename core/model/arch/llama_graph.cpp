#include "core/model/arch/llama_graph.hpp"

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/common/env_flag.hpp"
#include "core/common/error.hpp"

namespace aph::model {

void LlamaGraph::load(const WeightLoader& w, const weights::ModelConfig& c, const ModelSetup& setup) {
  setup_ = setup;
  hidden_ = c.hidden_size;
  inter_ = c.intermediate_size;
  heads_ = c.num_attention_heads;
  kv_heads_ = c.num_key_value_heads;
  head_dim_ = c.head_dim;
  rotary_dim_ = c.rotary_dim();
  norm_eps_ = static_cast<float>(c.rms_norm_eps);
  if (c.hidden_act != "silu") {
    throw invalid_argument("config.json: hidden_act '" + c.hidden_act + "' is not supported (silu)");
  }
  const bool qkv_bias = variant_.qkv_bias || c.attention_bias;
  embed_ = w.embedding("model.embed_tokens.weight", c.vocab_size, hidden_);
  // Some checkpoints ship lm_head even when tied; the flag decides.
  const bool tied = c.tie_word_embeddings || !w.has("lm_head.weight");
  lm_head_ = w.lm_head("lm_head.weight", tied, *embed_, c.vocab_size, hidden_);
  final_norm_ = w.vector_f32("model.norm.weight", hidden_);
  layers_.resize(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = layers_[i];
    l.attn_norm = w.vector_f32(p + "input_layernorm.weight", hidden_);
    l.ffn_norm = w.vector_f32(p + "post_attention_layernorm.weight", hidden_);
    l.qkv = w.group({p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"},
                    {heads_ * head_dim_, kv_heads_ * head_dim_, kv_heads_ * head_dim_}, hidden_, qkv_bias);
    l.o_proj = w.linear(p + "self_attn.o_proj", hidden_, heads_ * head_dim_, false);
    l.gate_up = w.group({p + "mlp.gate_proj", p + "mlp.up_proj"}, {inter_, inter_}, hidden_, c.mlp_bias);
    l.down_proj = w.linear(p + "mlp.down_proj", hidden_, inter_, c.mlp_bias);
  }
}

void LlamaGraph::reserve(int64_t t) {
  const aph_dtype dt = setup_.act_dtype;
  const int32_t dev = setup_.device;
  residual_ = Tensor::empty({t, hidden_}, dt, dev);
  residual_alt_ = Tensor::empty({t, hidden_}, dt, dev);
  normed_ = Tensor::empty({t, hidden_}, dt, dev);
  q_ = Tensor::empty({t, heads_ * head_dim_}, dt, dev);
  k_ = Tensor::empty({t, kv_heads_ * head_dim_}, dt, dev);
  v_ = Tensor::empty({t, kv_heads_ * head_dim_}, dt, dev);
  attn_out_ = Tensor::empty({t, heads_ * head_dim_}, dt, dev);
  delta_ = Tensor::empty({t, hidden_}, dt, dev);
  act_ = Tensor::empty({t, inter_}, dt, dev);
  for (auto& l : layers_) {
    l.qkv->reserve(t, dt, dev);
    l.gate_up->reserve(t, dt, dev);
  }
}

namespace {
bool fused_rope_enabled() {
  static const bool on = env_flag("APH_FUSED_ROPE", true);
  return on;
}
}  // namespace

FinalHidden LlamaGraph::forward(StepContext& ctx) {
  const int64_t t = ctx.n_tokens;
  if (!residual_.defined() || residual_.dim(0) < t) throw Error(APH_ERR_INTERNAL, "LlamaGraph: workspace too small");
  const ops::Exec& ex = ctx.exec;
  Tensor residual[2] = {residual_.rows(0, t), residual_alt_.rows(0, t)};
  int cur = 0;  // the residual buffer that holds the stream now
  Tensor normed = normed_.rows(0, t), q = q_.rows(0, t), k = k_.rows(0, t),
         v = v_.rows(0, t), attn_out = attn_out_.rows(0, t), delta = delta_.rows(0, t), act = act_.rows(0, t);

  embed_->lookup(ex, ctx.token_ids, residual[cur]);
  // RMSNorm(stream + delta) * weight as a projection group's input; the sum
  // goes to the other buffer, which becomes the stream.
  auto normed_input = [&](const Tensor* delta_or_none, const Tensor& weight) {
    NormedInput in;
    in.residual = &residual[cur];
    in.delta = delta_or_none;
    in.weight = &weight;
    in.eps = norm_eps_;
    in.residual_out = &residual[cur ^ 1];
    return in;
  };
  ops::RopeParams rope;
  rope.num_heads = static_cast<int32_t>(heads_);
  rope.num_kv_heads = static_cast<int32_t>(kv_heads_);
  rope.head_dim = static_cast<int32_t>(head_dim_);
  rope.rotary_dim = static_cast<int32_t>(rotary_dim_);
  rope.interleaved = setup_.rope_interleaved;
  rope.mscale = setup_.rope_mscale;

  // On CUDA the attention's KV write applies RoPE (one kernel a layer fewer)
  // instead of rope_qkv + the plain write; APH_FUSED_ROPE=0 takes the two
  // steps, as the CPU always does.
  const bool fused_rope = setup_.device != APH_DEVICE_CPU && fused_rope_enabled();
  // Better still, a quant plugin's q/k/v matvec rotates and stores them as
  // it writes its rows (GGUF's adjacent-pair order only): no rope or KV
  // write kernel at all. A split decode then relies on the runner's split
  // counters, which nothing else zeroes.
  const bool qkv_stores_kv = fused_rope && setup_.rope_interleaved && ctx.attention.split_counters != nullptr;
  aph_rope_kv_store kv_store{};
  if (qkv_stores_kv) {
    const attention::PagedAttentionArgs& a = ctx.attention;
    kv_store.size = sizeof(kv_store);
    kv_store.positions = ctx.positions.as<int32_t>();
    kv_store.inv_freq = setup_.inv_freq.as<float>();
    kv_store.head_dim = static_cast<int32_t>(head_dim_);
    kv_store.rotary_dim = static_cast<int32_t>(rotary_dim_);
    kv_store.mscale = rope.mscale;
    kv_store.slot_mapping = a.slot_mapping;
    kv_store.total_slots = static_cast<int64_t>(a.layout.num_blocks) * a.layout.block_size;
    kv_store.kv_dtype = a.layout.dtype;
    kv_store.k_scale = a.k_scale;
    kv_store.v_scale = a.v_scale;
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    Layer& l = layers_[i];
    // The first layer's input is the embedding alone: nothing to add.
    const NormedInput attn_in = normed_input(i == 0 ? nullptr : &delta, l.attn_norm);
    attention::PagedAttentionArgs a = ctx.attention;
    a.k_cache = (*ctx.kv)[i].k.data();
    a.v_cache = (*ctx.kv)[i].v.data();
    if (qkv_stores_kv) {
      kv_store.k_cache = a.k_cache;
      kv_store.v_cache = a.v_cache;
      a.kv_written = l.qkv->forward_rope_kv(ex, attn_in, kv_store, q);
    }
    ProjectionGroup::Outputs qkv;
    if (!a.kv_written) qkv = l.qkv->forward_rms_norm(ex, attn_in, normed);
    if (i > 0) cur ^= 1;
    if (a.kv_written) {
      a.q = q.data();  // rotated; k and v are in the cache
    } else if (fused_rope) {  // the KV write rotates q and k itself
      a.q = qkv.ptr[0];
      a.k = qkv.ptr[1];
      a.v = qkv.ptr[2];
      a.rope.inv_freq = setup_.inv_freq.as<float>();
      a.rope.positions = ctx.positions.as<int32_t>();
      a.rope.rotary_dim = rope.rotary_dim;
      a.rope.interleaved = rope.interleaved;
      a.rope.mscale = rope.mscale;
      a.rope.q_stride = qkv.stride[0];
      a.rope.k_stride = qkv.stride[1];
      a.rope.v_stride = qkv.stride[2];
      a.rope.q_rot = q.data();
    } else {
      ops::QkvIn in{qkv.ptr[0], qkv.ptr[1], qkv.ptr[2], qkv.stride[0], qkv.stride[1], qkv.stride[2]};
      ops::rope_qkv(ex, rope, in, ctx.positions, setup_.inv_freq, q, k, v);
      a.q = q.data();
      a.k = k.data();
      a.v = v.data();
    }
    a.out = attn_out.data();
    a.num_heads = static_cast<int32_t>(heads_);
    a.softmax_scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
    attention::paged_attention(a);

    l.o_proj->forward(ex, attn_out, delta);
    const NormedInput mlp_in = normed_input(&delta, l.ffn_norm);
    cur ^= 1;
    // Dense gate/up: silu(gate) * up straight from the matmul where the
    // device can. Plugin linears: the down projection may fold it in.
    if (l.gate_up->forward_rms_norm_silu_mul(ex, mlp_in, normed, act)) {
      l.down_proj->forward(ex, act, delta);
      continue;
    }
    ProjectionGroup::Outputs gu = l.gate_up->forward_rms_norm(ex, mlp_in, normed);
    if (gu.stride[0] != gu.stride[1]) throw Error(APH_ERR_INTERNAL, "LlamaGraph: gate and up rows differ in stride");
    if (!l.down_proj->forward_silu_mul(ex, gu.ptr[0], gu.ptr[1], gu.stride[0], delta)) {
      ops::silu_mul(ex, gu.ptr[0], gu.ptr[1], gu.stride[0], act);
      l.down_proj->forward(ex, act, delta);
    }
  }
  // The last layer's MLP output still has to join the residual stream: the
  // final norm does that add (for the rows that need logits only).
  return {residual[cur], delta, residual[cur ^ 1]};
}

uint64_t LlamaGraph::device_bytes() const {
  uint64_t n = embed_->device_bytes() + lm_head_->device_bytes();
  if (embed_->plugin_rows() && embed_->plugin_rows().get() == lm_head_.get()) n -= lm_head_->device_bytes();
  for (const auto& l : layers_) {
    n += l.qkv->device_bytes() + l.gate_up->device_bytes() + l.o_proj->device_bytes() + l.down_proj->device_bytes();
    if (!l.attn_norm.on_cpu()) n += 2 * l.attn_norm.nbytes();
  }
  return n;
}

}  // namespace aph::model
