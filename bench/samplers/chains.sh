# The sampling requests (JSON) that price_chain.sh prices and
# scripts/device-run.sh profiles: Aphrodite's default chain with the samplers
# people turn on (DRY, penalties, XTC, min-p, temperature), and every stage
# that runs beside the others (mirostat replaces selection, so it is left out).
DEFAULT_CHAIN='{"dry_multiplier":0.8,"dry_base":1.75,"dry_allowed_length":2,"repetition_penalty":1.1,
 "frequency_penalty":0.1,"presence_penalty":0.1,"xtc_threshold":0.1,"xtc_probability":1.0,"min_p":0.05,
 "temperature":0.8,"seed":1}'
EVERY_STAGE='{"dry_multiplier":0.8,"repetition_penalty":1.1,"frequency_penalty":0.1,"presence_penalty":0.1,
 "rep_pen_range":1024,"no_repeat_ngram_size":4,"temperature":0.9,"dynatemp_min":0.5,"dynatemp_max":1.5,
 "nsigma":3.0,"top_k":100,"top_p":0.95,"top_a":0.05,"min_p":0.02,"tfs":0.98,"eta_cutoff":3.0,
 "epsilon_cutoff":3.0,"typical_p":0.98,"smoothing_factor":0.2,"skew":0.1,"xtc_threshold":0.1,
 "xtc_probability":0.5,"seed":1}'
