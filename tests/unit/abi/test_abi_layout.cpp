// Pins the layout of every struct in plugin-api/ for x86_64 LP64: the offset
// and size of each field. A struct may only grow at its end, so a change to a
// line here means the ABI broke (bump APH_ABI_MAJOR) — a new field appended
// at the end adds a line. Generated once from the headers, then checked by hand.
#include <gtest/gtest.h>

#include <cstddef>

#include "aphrodite/api.h"
#include "aphrodite/lora.h"
#include "aphrodite/plugin.h"
#include "aphrodite/quant.h"
#include "aphrodite/sampler.h"

static_assert(sizeof(void*) == 8 && sizeof(long) == 8, "the pins below are for LP64");

#define PIN(type, field, offset, bytes)                                         \
  EXPECT_EQ(offsetof(type, field), size_t{offset}) << #type "." #field " moved"; \
  EXPECT_EQ(sizeof(static_cast<type*>(nullptr)->field), size_t{bytes}) << #type "." #field " resized"

TEST(AbiLayout, EveryFieldOfEveryStructIsPinned) {

  // aph_error (plugin.h)
  PIN(aph_error, size, 0, 4);
  PIN(aph_error, code, 4, 4);
  PIN(aph_error, message, 8, 1024);

  // aph_tensor (plugin.h)
  PIN(aph_tensor, size, 0, 4);
  PIN(aph_tensor, dtype, 4, 4);
  PIN(aph_tensor, device, 8, 4);
  PIN(aph_tensor, rank, 12, 4);
  PIN(aph_tensor, data, 16, 8);
  PIN(aph_tensor, shape, 24, 64);
  PIN(aph_tensor, strides, 88, 64);

  // aph_host_services (plugin.h)
  PIN(aph_host_services, size, 0, 4);
  PIN(aph_host_services, host, 8, 8);
  PIN(aph_host_services, log, 16, 8);
  PIN(aph_host_services, config_json, 24, 8);
  PIN(aph_host_services, device_alloc, 32, 8);
  PIN(aph_host_services, device_free, 40, 8);
  PIN(aph_host_services, pinned_alloc, 48, 8);
  PIN(aph_host_services, pinned_free, 56, 8);
  PIN(aph_host_services, register_route, 64, 8);
  PIN(aph_host_services, engine, 72, 8);
  PIN(aph_host_services, active_device, 80, 8);
  PIN(aph_host_services, parallel_for, 88, 8);  // minor 1

  // aph_version_offer (plugin.h)
  PIN(aph_version_offer, size, 0, 4);
  PIN(aph_version_offer, major, 4, 4);
  PIN(aph_version_offer, min_minor, 8, 4);
  PIN(aph_version_offer, max_minor, 12, 4);

  // aph_plugin_info (plugin.h)
  PIN(aph_plugin_info, size, 0, 4);
  PIN(aph_plugin_info, abi_major, 4, 4);
  PIN(aph_plugin_info, abi_minor, 8, 4);
  PIN(aph_plugin_info, kind, 12, 4);
  PIN(aph_plugin_info, name, 16, 8);
  PIN(aph_plugin_info, version, 24, 8);
  PIN(aph_plugin_info, description, 32, 8);
  PIN(aph_plugin_info, vtable, 40, 8);
  PIN(aph_plugin_info, init, 48, 8);
  PIN(aph_plugin_info, shutdown, 56, 8);

  // aph_http_header (api.h)
  PIN(aph_http_header, size, 0, 4);
  PIN(aph_http_header, name, 8, 8);
  PIN(aph_http_header, value, 16, 8);

  // aph_http_request (api.h)
  PIN(aph_http_request, size, 0, 4);
  PIN(aph_http_request, method, 8, 8);
  PIN(aph_http_request, path, 16, 8);
  PIN(aph_http_request, query, 24, 8);
  PIN(aph_http_request, body, 32, 8);
  PIN(aph_http_request, body_len, 40, 8);
  PIN(aph_http_request, n_headers, 48, 4);
  PIN(aph_http_request, headers, 56, 8);
  PIN(aph_http_request, request_id, 64, 8);
  PIN(aph_http_request, api_key, 72, 8);
  PIN(aph_http_request, remote_addr, 80, 8);

  // aph_http_responder (api.h)
  PIN(aph_http_responder, size, 0, 4);
  PIN(aph_http_responder, conn, 8, 8);
  PIN(aph_http_responder, add_header, 16, 8);
  PIN(aph_http_responder, send, 24, 8);
  PIN(aph_http_responder, stream_begin, 32, 8);
  PIN(aph_http_responder, stream_write, 40, 8);
  PIN(aph_http_responder, stream_end, 48, 8);
  PIN(aph_http_responder, client_gone, 56, 8);

  // aph_route (api.h)
  PIN(aph_route, size, 0, 4);
  PIN(aph_route, method, 8, 8);
  PIN(aph_route, path, 16, 8);
  PIN(aph_route, prefix_match, 24, 4);
  PIN(aph_route, auth, 28, 4);
  PIN(aph_route, handler_state, 32, 8);
  PIN(aph_route, handle, 40, 8);
  PIN(aph_route, send_error, 48, 8);

  // aph_buffer (api.h)
  PIN(aph_buffer, size, 0, 4);
  PIN(aph_buffer, data, 8, 8);
  PIN(aph_buffer, len, 16, 8);

  // aph_model_desc (api.h)
  PIN(aph_model_desc, size, 0, 4);
  PIN(aph_model_desc, served_model_name, 8, 8);
  PIN(aph_model_desc, model_path, 16, 8);
  PIN(aph_model_desc, max_model_len, 24, 8);
  PIN(aph_model_desc, vocab_size, 32, 8);
  PIN(aph_model_desc, bos_token_id, 40, 4);
  PIN(aph_model_desc, eos_token_id, 44, 4);
  PIN(aph_model_desc, add_bos, 48, 4);
  PIN(aph_model_desc, lora_names_json, 56, 8);
  PIN(aph_model_desc, ready, 64, 4);

  // aph_gen_event (api.h)
  PIN(aph_gen_event, size, 0, 4);
  PIN(aph_gen_event, kind, 4, 4);
  PIN(aph_gen_event, choice, 8, 4);
  PIN(aph_gen_event, text, 16, 8);
  PIN(aph_gen_event, text_len, 24, 8);
  PIN(aph_gen_event, token_ids, 32, 8);
  PIN(aph_gen_event, n_tokens, 40, 4);
  PIN(aph_gen_event, logprobs_json, 48, 8);
  PIN(aph_gen_event, finish_reason, 56, 8);
  PIN(aph_gen_event, stop_reason, 64, 8);
  PIN(aph_gen_event, prompt_tokens, 72, 8);
  PIN(aph_gen_event, completion_tokens, 80, 8);
  PIN(aph_gen_event, cached_prompt_tokens, 88, 8);

  // aph_engine_api (api.h)
  PIN(aph_engine_api, size, 0, 4);
  PIN(aph_engine_api, engine, 8, 8);
  PIN(aph_engine_api, model_info, 16, 8);
  PIN(aph_engine_api, tokenize, 24, 8);
  PIN(aph_engine_api, detokenize, 32, 8);
  PIN(aph_engine_api, apply_chat_template, 40, 8);
  PIN(aph_engine_api, free_buffer, 48, 8);
  PIN(aph_engine_api, submit, 56, 8);
  PIN(aph_engine_api, next_event, 64, 8);
  PIN(aph_engine_api, cancel, 72, 8);
  PIN(aph_engine_api, release, 80, 8);

  // aph_api_vtable (api.h)
  PIN(aph_api_vtable, size, 0, 4);
  PIN(aph_api_vtable, dialect, 8, 8);

  // aph_checkpoint_desc (quant.h)
  PIN(aph_checkpoint_desc, size, 0, 4);
  PIN(aph_checkpoint_desc, path, 8, 8);
  PIN(aph_checkpoint_desc, config_json, 16, 8);
  PIN(aph_checkpoint_desc, quantization, 24, 8);

  // aph_weight_info (quant.h)
  PIN(aph_weight_info, size, 0, 4);
  PIN(aph_weight_info, name, 8, 8);
  PIN(aph_weight_info, dtype, 16, 4);
  PIN(aph_weight_info, format_type, 20, 4);
  PIN(aph_weight_info, type_name, 24, 8);
  PIN(aph_weight_info, rank, 32, 4);
  PIN(aph_weight_info, shape, 40, 64);
  PIN(aph_weight_info, data, 104, 8);
  PIN(aph_weight_info, nbytes, 112, 8);

  // aph_linear_desc (quant.h)
  PIN(aph_linear_desc, size, 0, 4);
  PIN(aph_linear_desc, name, 8, 8);
  PIN(aph_linear_desc, in_features, 16, 8);
  PIN(aph_linear_desc, out_features, 24, 8);
  PIN(aph_linear_desc, device, 32, 4);
  PIN(aph_linear_desc, act_dtype, 36, 4);
  PIN(aph_linear_desc, n_parts, 40, 4);
  PIN(aph_linear_desc, parts, 48, 8);
  PIN(aph_linear_desc, bias, 56, 8);
  PIN(aph_linear_desc, quant_config_json, 64, 8);
  PIN(aph_linear_desc, stream, 72, 8);

  // aph_quant_vtable (quant.h)
  PIN(aph_quant_vtable, size, 0, 4);
  PIN(aph_quant_vtable, format_name, 8, 8);
  PIN(aph_quant_vtable, devices, 16, 8);
  PIN(aph_quant_vtable, probe, 24, 8);
  PIN(aph_quant_vtable, source_open, 32, 8);
  PIN(aph_quant_vtable, source_metadata_json, 40, 8);
  PIN(aph_quant_vtable, source_tensor_count, 48, 8);
  PIN(aph_quant_vtable, source_tensor, 56, 8);
  PIN(aph_quant_vtable, source_close, 64, 8);
  PIN(aph_quant_vtable, linear_create, 72, 8);
  PIN(aph_quant_vtable, linear_forward, 80, 8);
  PIN(aph_quant_vtable, linear_get_rows, 88, 8);
  PIN(aph_quant_vtable, linear_device_bytes, 96, 8);
  PIN(aph_quant_vtable, linear_destroy, 104, 8);
  PIN(aph_quant_vtable, linear_forward_shared, 112, 8);
  PIN(aph_quant_vtable, linear_forward_silu_mul, 120, 8);
  PIN(aph_quant_vtable, linear_forward_shared_rms_norm, 128, 8);
  PIN(aph_quant_vtable, linear_forward_qkv_rope_kv, 136, 8);

  // aph_rope_kv_store (quant.h)
  PIN(aph_rope_kv_store, size, 0, 4);
  PIN(aph_rope_kv_store, positions, 8, 8);
  PIN(aph_rope_kv_store, inv_freq, 16, 8);
  PIN(aph_rope_kv_store, head_dim, 24, 4);
  PIN(aph_rope_kv_store, rotary_dim, 28, 4);
  PIN(aph_rope_kv_store, mscale, 32, 4);
  PIN(aph_rope_kv_store, slot_mapping, 40, 8);
  PIN(aph_rope_kv_store, total_slots, 48, 8);
  PIN(aph_rope_kv_store, k_cache, 56, 8);
  PIN(aph_rope_kv_store, v_cache, 64, 8);
  PIN(aph_rope_kv_store, kv_dtype, 72, 4);
  PIN(aph_rope_kv_store, k_scale, 76, 4);
  PIN(aph_rope_kv_store, v_scale, 80, 4);

  // aph_sampler_field (sampler.h)
  PIN(aph_sampler_field, size, 0, 4);
  PIN(aph_sampler_field, name, 8, 8);
  PIN(aph_sampler_field, type, 16, 4);
  PIN(aph_sampler_field, default_number, 24, 8);
  PIN(aph_sampler_field, default_json, 32, 8);
  PIN(aph_sampler_field, min_value, 40, 8);
  PIN(aph_sampler_field, max_value, 48, 8);
  PIN(aph_sampler_field, description, 56, 8);

  // aph_sampler_row (sampler.h)
  PIN(aph_sampler_row, size, 0, 4);
  PIN(aph_sampler_row, params, 8, 8);
  PIN(aph_sampler_row, tokens, 16, 8);
  PIN(aph_sampler_row, n_prompt, 24, 8);
  PIN(aph_sampler_row, n_tokens, 32, 8);
  PIN(aph_sampler_row, tokens_device, 40, 8);
  PIN(aph_sampler_row, seed, 48, 8);
  PIN(aph_sampler_row, step, 56, 8);

  // aph_sampler_batch (sampler.h)
  PIN(aph_sampler_batch, size, 0, 4);
  PIN(aph_sampler_batch, logits, 8, 152);
  PIN(aph_sampler_batch, chosen, 160, 152);
  PIN(aph_sampler_batch, n_rows, 312, 4);
  PIN(aph_sampler_batch, rows, 320, 8);
  PIN(aph_sampler_batch, eos_token_id, 328, 4);
  PIN(aph_sampler_batch, run_id, 336, 8);

  // aph_sampler_stage (sampler.h)
  PIN(aph_sampler_stage, size, 0, 4);
  PIN(aph_sampler_stage, name, 8, 8);
  PIN(aph_sampler_stage, priority_aliases, 16, 8);
  PIN(aph_sampler_stage, kobold_id, 24, 4);
  PIN(aph_sampler_stage, default_position, 28, 4);
  PIN(aph_sampler_stage, flags, 32, 4);
  PIN(aph_sampler_stage, n_fields, 36, 4);
  PIN(aph_sampler_stage, fields, 40, 8);
  PIN(aph_sampler_stage, field_aliases, 48, 8);
  PIN(aph_sampler_stage, row_create, 56, 8);
  PIN(aph_sampler_stage, row_destroy, 64, 8);
  PIN(aph_sampler_stage, apply, 72, 8);

  // aph_sampler_vocab (sampler.h)
  PIN(aph_sampler_vocab, size, 0, 4);
  PIN(aph_sampler_vocab, n_tokens, 4, 4);
  PIN(aph_sampler_vocab, token_bytes, 8, 8);
  PIN(aph_sampler_vocab, token_lengths, 16, 8);
  PIN(aph_sampler_vocab, eos_token_id, 24, 4);
  PIN(aph_sampler_vocab, n_eog, 28, 4);
  PIN(aph_sampler_vocab, eog_token_ids, 32, 8);

  // aph_sampler_vtable (sampler.h)
  PIN(aph_sampler_vtable, size, 0, 4);
  PIN(aph_sampler_vtable, n_stages, 4, 4);
  PIN(aph_sampler_vtable, stages, 8, 8);
  PIN(aph_sampler_vtable, set_vocab, 16, 8);

  // aph_lora_vtable (lora.h)
  PIN(aph_lora_vtable, size, 0, 4);
  PIN(aph_lora_vtable, format_name, 8, 8);
  PIN(aph_lora_vtable, probe, 16, 8);
  PIN(aph_lora_vtable, open, 24, 8);
  PIN(aph_lora_vtable, info_json, 32, 8);
  PIN(aph_lora_vtable, tensor_count, 40, 8);
  PIN(aph_lora_vtable, tensor, 48, 8);
  PIN(aph_lora_vtable, close, 56, 8);
}

TEST(AbiLayout, VersionAndEntrySymbol) {
  EXPECT_EQ(APH_ABI_MAJOR, 1);
  EXPECT_STREQ(APH_PLUGIN_ENTRY_SYMBOL, "aph_plugin_entry");
  EXPECT_EQ(APH_ERROR_MESSAGE_CAPACITY, 1024);
  EXPECT_EQ(APH_MAX_RANK, 8);
  EXPECT_EQ(APH_DEVICE_CPU, -1);
  // Status codes and kinds are values on the wire too.
  EXPECT_EQ(APH_ERR_CANCELLED, 10);
  EXPECT_EQ(APH_KIND_API, 4);
  EXPECT_EQ(APH_ROUTE_AUTH_LEGACY, 1);
  EXPECT_EQ(APH_EVENT_DONE, 4);
  EXPECT_EQ(APH_FIELD_JSON, 6);
  EXPECT_EQ(APH_DTYPE_F64, 11);
}
