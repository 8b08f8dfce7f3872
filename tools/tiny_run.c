/* The smallest useful gkrt program: load a .gkm, fill every float32 input with one
 * value, run on the cpu backend, print each output's first values. Used to report the
 * size of an application on a board (tools/size_report.sh).
 *
 *   tiny_run model.gkm [value]                                                      */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gkrt_c.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tiny_run model.gkm [value]\n");
    return 2;
  }
  const float value = argc > 2 ? (float)atof(argv[2]) : 0.5f;
  gkrt_model* model = NULL;
  gkrt_session* session = NULL;
  if (gkrt_model_load(argv[1], &model) || gkrt_session_create(model, "cpu", &session)) {
    fprintf(stderr, "tiny_run: %s\n", gkrt_last_error());
    gkrt_model_free(model);
    return 1;
  }
  int status = 0;
  for (size_t i = 0; i < gkrt_session_input_count(session) && !status; ++i) {
    const char* name = gkrt_session_input_name(session, i);
    int64_t dims[8];
    size_t rank = 0;
    if (gkrt_session_input_shape(session, i, dims, 8, &rank)) { status = 1; break; }
    size_t count = 1;
    for (size_t d = 0; d < rank; ++d) count *= (size_t)dims[d];
    float* data = malloc(count * sizeof(float) + 1);
    for (size_t k = 0; k < count; ++k) data[k] = value;
    status = gkrt_session_set_input(session, name, GKRT_FLOAT32, dims, rank, data, count * sizeof(float));
    free(data);
  }
  if (!status) status = gkrt_session_run(session);
  for (size_t i = 0; i < gkrt_session_output_count(session) && !status; ++i) {
    const void* out = NULL;
    size_t bytes = 0;
    gkrt_dtype dtype;
    status = gkrt_session_output(session, gkrt_session_output_name(session, i), &out, &bytes, &dtype, NULL, NULL);
    if (status || dtype != GKRT_FLOAT32) break;
    printf("%s:", gkrt_session_output_name(session, i));
    for (size_t k = 0; k < bytes / sizeof(float) && k < 4; ++k) printf(" %g", ((const float*)out)[k]);
    printf("\n");
  }
  if (status) fprintf(stderr, "tiny_run: %s\n", gkrt_last_error());
  gkrt_session_free(session);
  gkrt_model_free(model);
  return status ? 1 : 0;
}
