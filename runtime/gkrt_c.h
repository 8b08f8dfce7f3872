/* gkrt C API: load a .gkm model, compile it for a backend, run it.
 *
 *   gkrt_model* m; gkrt_session* s;
 *   if (gkrt_model_load("mynet.gkm", &m)) { puts(gkrt_last_error()); return 1; }
 *   if (gkrt_session_create(m, "cpu", &s)) { ... }
 *   int64_t dims[2] = {4, 4};
 *   gkrt_session_set_input(s, "x", GKRT_FLOAT32, dims, 2, data, sizeof data);
 *   gkrt_session_run(s);
 *   const void* out; size_t bytes;
 *   gkrt_session_output(s, "result", &out, &bytes, NULL, NULL, NULL);
 *   gkrt_session_free(s); gkrt_model_free(m);
 *
 * Every call returns 0 on success or a gkrt_status code; gkrt_last_error() then holds
 * the message for this thread (each thread has its own). Output pointers stay valid
 * until the next run. This API is the stable one: opaque handles, plain C types only. */
#ifndef GKRT_C_H_
#define GKRT_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gkrt_model gkrt_model;
typedef struct gkrt_session gkrt_session;

typedef enum {
  GKRT_FLOAT32 = 0, GKRT_FLOAT16, GKRT_INT8, GKRT_UINT8, GKRT_INT32, GKRT_INT64, GKRT_BOOL,
  GKRT_FLOAT64, GKRT_INT16, GKRT_UINT16, GKRT_UINT32, GKRT_UINT64, GKRT_BFLOAT16
} gkrt_dtype;

typedef enum {
  GKRT_OK = 0, GKRT_INVALID_ARGUMENT, GKRT_INVALID_MODEL, GKRT_UNSUPPORTED, GKRT_NOT_FOUND,
  GKRT_IO_ERROR, GKRT_DEVICE_ERROR, GKRT_INTERNAL
} gkrt_status;

const char* gkrt_last_error(void);
/* The library's version, "MAJOR.MINOR.PATCH"; the shared library's SONAME carries MAJOR. */
const char* gkrt_version(void);

gkrt_status gkrt_model_load(const char* path, gkrt_model** out);
gkrt_status gkrt_model_load_buffer(const void* data, size_t size, gkrt_model** out);
void gkrt_model_free(gkrt_model* model);

gkrt_status gkrt_session_create(const gkrt_model* model, const char* backend, gkrt_session** out);
void gkrt_session_free(gkrt_session* session);

size_t gkrt_session_input_count(const gkrt_session* session);
const char* gkrt_session_input_name(const gkrt_session* session, size_t index);
/* The input's shape as compiled: up to `capacity` dims into `dims`, the rank into *rank. */
gkrt_status gkrt_session_input_shape(const gkrt_session* session, size_t index, int64_t* dims, size_t capacity,
                                     size_t* rank);
size_t gkrt_session_output_count(const gkrt_session* session);
const char* gkrt_session_output_name(const gkrt_session* session, size_t index);

gkrt_status gkrt_session_resize_input(gkrt_session* session, const char* name, const int64_t* dims, size_t rank);
gkrt_status gkrt_session_set_input(gkrt_session* session, const char* name, gkrt_dtype dtype, const int64_t* dims,
                                   size_t rank, const void* data, size_t bytes);
gkrt_status gkrt_session_run(gkrt_session* session);
/* Any of dtype/dims/rank may be NULL. */
gkrt_status gkrt_session_output(gkrt_session* session, const char* name, const void** data, size_t* bytes,
                                gkrt_dtype* dtype, const int64_t** dims, size_t* rank);


/* Generation with a decoder LLM and its KV cache (runtime/generator.h):
 *
 *   gkrt_generator* g;
 *   if (gkrt_generator_create(m, "cpu", 0, 2048, &g)) { ... }
 *   gkrt_generate_options o;  gkrt_generate_options_init(&o);  o.max_new_tokens = 32;
 *   gkrt_generate(g, prompt, prompt_len, &o, on_token, user);   // on_token(id, user): 0 stops
 *   gkrt_generator_free(g);
 *
 * gkrt_generator_append() runs tokens at the current position (a prompt, or one chosen
 * token) and gkrt_generator_logits() reads the last one's logits, for callers that pick
 * tokens themselves. A sequence past max_context is an error, not a crash. */
typedef struct gkrt_generator gkrt_generator;
typedef struct {
  int64_t max_new_tokens;    /* default 32 */
  float temperature;         /* 0 (default): greedy */
  int32_t top_k;             /* 0: all tokens */
  float top_p;               /* 1: all tokens */
  float repetition_penalty;  /* 1: off */
  uint64_t seed;
  const int64_t* stop_ids;   /* generation ends after one of these */
  size_t stop_count;
} gkrt_generate_options;
typedef int (*gkrt_token_callback)(int64_t id, void* user);
void gkrt_generate_options_init(gkrt_generate_options* options);
/* num_threads 0: every core; max_context: cache positions (prompt + generated). */
gkrt_status gkrt_generator_create(const gkrt_model* model, const char* backend, int32_t num_threads, int64_t max_context,
                                  gkrt_generator** out);
void gkrt_generator_free(gkrt_generator* generator);
gkrt_status gkrt_generator_reset(gkrt_generator* generator);
gkrt_status gkrt_generator_append(gkrt_generator* generator, const int64_t* ids, size_t count);
/* The last appended token's logits, valid until the next append. */
gkrt_status gkrt_generator_logits(const gkrt_generator* generator, const float** logits, size_t* vocab_size);
int64_t gkrt_generator_position(const gkrt_generator* generator);
/* Resets, runs the prompt, then generates; `on_token` (may be NULL) sees each id as it comes. */
gkrt_status gkrt_generate(gkrt_generator* generator, const int64_t* prompt, size_t prompt_count,
                          const gkrt_generate_options* options, gkrt_token_callback on_token, void* user);

#ifdef __cplusplus
}
#endif

#endif /* GKRT_C_H_ */
