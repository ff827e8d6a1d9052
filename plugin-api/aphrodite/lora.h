/* LoRA plugins: adapter formats (PEFT first). The plugin reads an adapter and
 * hands the host its low-rank pairs; the host applies them (FORMATS.md §8). */
#ifndef APHRODITE_LORA_H
#define APHRODITE_LORA_H

#include "aphrodite/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aph_lora_adapter aph_lora_adapter; /* opaque, plugin-owned */

typedef struct aph_lora_vtable {
  uint32_t size;
  const char* format_name; /* "peft", ... */

  /* Start-up or request thread. 0 = not this format, 1..100 = confidence. */
  aph_status (*probe)(void* state, const char* path, float* score, aph_error* err);
  /* Start-up or request thread. */
  aph_status (*open)(void* state, const char* path, aph_lora_adapter** out, aph_error* err);
  /* Any thread. JSON object text valid until close:
   * {"r":int,"lora_alpha":num,"use_rslora":bool,"target_modules":[str],
   *  "base_model_name_or_path":str|null} */
  const char* (*info_json)(aph_lora_adapter* adapter);
  /* Any thread. Tensors under HF module names with ".lora_A.weight" /
   * ".lora_B.weight" suffixes, prefix "base_model.model." removed. */
  uint64_t (*tensor_count)(aph_lora_adapter* adapter);
  aph_status (*tensor)(aph_lora_adapter* adapter, uint64_t index, aph_weight_info* out,
                       aph_error* err);
  void (*close)(aph_lora_adapter* adapter);
} aph_lora_vtable;

#ifdef __cplusplus
}
#endif

#endif /* APHRODITE_LORA_H */
