/* The seeds' two sample networks through gkrt's C API, as an application links gkrt:
 * load a bundled .gkm, fill its inputs, run on the cpu backend, print the outputs the
 * way the seeds print them.
 *
 *   mynet_c [MODELS_DIR]     (default: the installed package's share/gkrt/examples)  */
#include <gkrt/gkrt_c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GKRT_EXAMPLE_MODELS_DIR
#define GKRT_EXAMPLE_MODELS_DIR "."
#endif

/* One float as numpy prints it: up to 8 decimals, trailing zeros dropped ("2.", "-0.015104"). */
static void format_float(float v, char* out, size_t size) {
  snprintf(out, size, "%.8f", (double)v);
  size_t n = strlen(out);
  while (n > 0 && out[n - 1] == '0') out[--n] = '\0';
}

/* A float32 tensor numpy-style: "[[a b]\n [c d]]", every number right-aligned to one width. */
static void print_tensor(const float* values, const int64_t* dims, size_t rank) {
  size_t count = 1, width = 0;
  char text[64];
  for (size_t d = 0; d < rank; ++d) count *= (size_t)dims[d];
  for (size_t i = 0; i < count; ++i) {
    format_float(values[i], text, sizeof text);
    if (strlen(text) > width) width = strlen(text);
  }
  for (size_t i = 0; i < count; ++i) {
    size_t opened = 0, stride = 1; /* how many dims start a new row at element i */
    for (size_t d = rank; d-- > 0;) {
      stride *= (size_t)dims[d];
      if (i % stride == 0) ++opened;
    }
    if (i > 0 && opened > 0) printf("%.*s%*s", (int)opened, "\n\n\n\n\n\n\n\n", (int)(rank - opened), "");
    else if (i > 0) printf(" ");
    printf("%.*s", (int)(i == 0 ? rank : opened), "[[[[[[[[");
    format_float(values[i], text, sizeof text);
    printf("%*s", (int)width, text);
    size_t closed = 0;
    stride = 1;
    for (size_t d = rank; d-- > 0;) {
      stride *= (size_t)dims[d];
      if ((i + 1) % stride == 0) ++closed;
    }
    printf("%.*s", (int)closed, "]]]]]]]]");
  }
  printf("\n");
}

/* Loads DIR/FILE, sets input i to values[i] everywhere, runs and prints every output. */
static int run_model(const char* dir, const char* file, size_t input_count, const float* values) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  gkrt_model* model = NULL;
  gkrt_session* session = NULL;
  if (gkrt_model_load(path, &model) != GKRT_OK || gkrt_session_create(model, "cpu", &session) != GKRT_OK) {
    fprintf(stderr, "mynet_c: %s\n", gkrt_last_error());
    gkrt_model_free(model);
    return 1;
  }
  int failed = gkrt_session_input_count(session) != input_count;
  if (failed) fprintf(stderr, "mynet_c: %s has %zu inputs, expected %zu\n", path, gkrt_session_input_count(session), input_count);
  for (size_t i = 0; i < input_count && !failed; ++i) {
    int64_t dims[8];
    size_t rank = 0, count = 1;
    failed = gkrt_session_input_shape(session, i, dims, 8, &rank) != GKRT_OK;
    for (size_t d = 0; d < rank && !failed; ++d) count *= (size_t)dims[d];
    float* data = failed ? NULL : malloc(count * sizeof(float));
    for (size_t k = 0; data && k < count; ++k) data[k] = values[i];
    failed = failed || !data ||
             gkrt_session_set_input(session, gkrt_session_input_name(session, i), GKRT_FLOAT32, dims, rank, data,
                                    count * sizeof(float)) != GKRT_OK;
    free(data);
  }
  failed = failed || gkrt_session_run(session) != GKRT_OK;
  for (size_t i = 0; i < gkrt_session_output_count(session) && !failed; ++i) {
    const char* name = gkrt_session_output_name(session, i);
    const void* data = NULL;
    size_t bytes = 0, rank = 0;
    gkrt_dtype dtype;
    const int64_t* dims = NULL;
    failed = gkrt_session_output(session, name, &data, &bytes, &dtype, &dims, &rank) != GKRT_OK;
    if (!failed && dtype == GKRT_FLOAT32) {
      printf("%s: ", name);
      print_tensor((const float*)data, dims, rank);
    }
  }
  if (failed && *gkrt_last_error()) fprintf(stderr, "mynet_c: %s: %s\n", path, gkrt_last_error());
  gkrt_session_free(session);
  gkrt_model_free(model);
  return failed;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : GKRT_EXAMPLE_MODELS_DIR;
  printf("gkrt %s, C API, models from %s\n", gkrt_version(), dir);
  const float mynet_x[1] = {0.5f};         /* the seeds: x = ones(4, 4) * 0.5 */
  const float mynet_myop_xy[2] = {0.2f, 0.3f}; /* x = ones * 0.2, y = ones * 0.3 */
  int failed = run_model(dir, "mynet.gkm", 1, mynet_x);
  failed |= run_model(dir, "mynet_myop.gkm", 2, mynet_myop_xy);
  return failed ? 1 : 0;
}
