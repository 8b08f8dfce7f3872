/* The C API from C: load the bundled MyNet, run it, check every value, and check that
 * errors come back as codes with messages, one message per thread. */
#include <pthread.h>
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

/* Two threads fail at once, each on its own path; each must read back its own message. */
static pthread_barrier_t both_failed;

static void* failInThread(void* path) {
  gkrt_model* model = NULL;
  if (gkrt_model_load((const char*)path, &model) != GKRT_NOT_FOUND) return (void*)"load did not fail";
  pthread_barrier_wait(&both_failed);
  return strstr(gkrt_last_error(), (const char*)path) ? NULL : (void*)gkrt_last_error();
}

static int lastErrorIsPerThread(void) {
  gkrt_model* model = NULL;
  if (gkrt_model_load("/nonexistent/main.gkm", &model) != GKRT_NOT_FOUND) return 0;
  pthread_barrier_init(&both_failed, NULL, 2);
  pthread_t threads[2];
  const char* paths[2] = {"/nonexistent/thread_a.gkm", "/nonexistent/thread_b.gkm"};
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, failInThread, (void*)paths[i]);
  int ok = 1;
  for (int i = 0; i < 2; ++i) {
    void* wrong = NULL;
    pthread_join(threads[i], &wrong);
    if (wrong) fprintf(stderr, "thread %d read '%s' as its last error\n", i, (const char*)wrong);
    ok = ok && !wrong;
  }
  pthread_barrier_destroy(&both_failed);
  return ok && strstr(gkrt_last_error(), "/nonexistent/main.gkm") != NULL;
}

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

  CHECK(lastErrorIsPerThread(), "gkrt_last_error() is per thread");
  CHECK(strcmp(gkrt_version(), GKRT_EXPECTED_VERSION) == 0, "gkrt_version() is the project version");

  gkrt_session_free(session);
  gkrt_model_free(model);
  printf("c api: 1 passed, 0 failed\n");
  return 0;
}
