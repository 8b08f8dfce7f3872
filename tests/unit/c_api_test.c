/* The C API from C: load the bundled MyNet, run it, check every value, and check that
 * errors come back as codes with messages. */
#include <stdio.h>
#include <string.h>

#include "runtime/gkrt_c.h"

#define CHECK(cond, what)                                        \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "FAILED: %s (%s)\n", what, gkrt_last_error()); \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(int argc, char** argv) {
  gkrt_model* model = NULL;
  gkrt_session* session = NULL;
  CHECK(argc == 2, "usage: c_api_test mynet.gkm");
  CHECK(gkrt_model_load(argv[1], &model) == GKRT_OK, "load");
  CHECK(gkrt_session_create(model, "cpu", &session) == GKRT_OK, "create");
  CHECK(gkrt_session_input_count(session) == 1, "one input");
  CHECK(strcmp(gkrt_session_input_name(session, 0), "x") == 0, "input name");
  CHECK(strcmp(gkrt_session_output_name(session, 0), "result") == 0, "output name");

  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = 0.5f;
  int64_t dims[2] = {4, 4};
  CHECK(gkrt_session_set_input(session, "x", GKRT_FLOAT32, dims, 2, x, sizeof x) == GKRT_OK, "set input");
  CHECK(gkrt_session_run(session) == GKRT_OK, "run");
  const void* out = NULL;
  size_t bytes = 0, rank = 0;
  const int64_t* out_dims = NULL;
  gkrt_dtype dtype;
  CHECK(gkrt_session_output(session, "result", &out, &bytes, &dtype, &out_dims, &rank) == GKRT_OK, "output");
  CHECK(bytes == 64 && rank == 2 && out_dims[0] == 4 && dtype == GKRT_FLOAT32, "output shape");
  for (int i = 0; i < 16; ++i) CHECK(((const float*)out)[i] == 2.0f, "value 2.0");

  CHECK(gkrt_session_set_input(session, "x", GKRT_FLOAT32, dims, 2, x, 8) == GKRT_INVALID_ARGUMENT, "short buffer");
  CHECK(strstr(gkrt_last_error(), "8 bytes given, shape and dtype need 64") != NULL, "short buffer message");
  CHECK(gkrt_session_set_input(session, "nope", GKRT_FLOAT32, dims, 2, x, sizeof x) == GKRT_NOT_FOUND, "bad name");
  gkrt_model* bad = NULL;
  CHECK(gkrt_model_load("/nonexistent.gkm", &bad) == GKRT_NOT_FOUND && bad == NULL, "missing file");
  CHECK(gkrt_model_load_buffer("GARBAGE_GARBAGE", 15, &bad) == GKRT_INVALID_MODEL, "garbage buffer");
  CHECK(strstr(gkrt_last_error(), "not a gkrt model") != NULL, "garbage message");

  gkrt_session_free(session);
  gkrt_model_free(model);
  printf("c api: 1 passed, 0 failed\n");
  return 0;
}
