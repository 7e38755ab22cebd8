/* The C ABI (runtime_stub/api/stitchopt/runtime.h) from C, as a C program uses it:
 * open an output directory with the emulated kernels and with the reference
 * interpreter, run both on the same inputs and compare every output; then every bad
 * argument, each with its code and message, after which the session still runs.
 * Usage: c_api_test OUT_DIR. Exit 0 when every check passes; one line per failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitchopt/runtime.h"

static int failures = 0;

static void fail(const char* what, const char* detail) {
  printf("FAIL %s: %s\n", what, detail);
  ++failures;
}

/* Expects `status` to be an error of `code` whose message contains `needle`. */
static void expect_error(const char* what, StitchoptStatus* status, StitchoptCode code,
                         const char* needle) {
  if (status == NULL) {
    fail(what, "succeeded");
    return;
  }
  if (stitchopt_status_code(status) != code) fail(what, stitchopt_status_message(status));
  if (strstr(stitchopt_status_message(status), needle) == NULL) {
    fail(what, stitchopt_status_message(status));
  }
  stitchopt_status_free(status);
}

static int ok(const char* what, StitchoptStatus* status) {
  if (status == NULL) return 1;
  fail(what, stitchopt_status_message(status));
  stitchopt_status_free(status);
  return 0;
}

/* Deterministic inputs: floats in [-1, 1), integers 0 or 1 (valid indices), bools. */
static void fill(const StitchoptTensorInfo* info, void* data) {
  size_t count = info->bytes / stitchopt_dtype_size(info->dtype);
  for (size_t i = 0; i < count; ++i) {
    double x = sin(0.37 * (double)i + 0.1 * (double)info->rank);
    switch (info->dtype) {
      case STITCHOPT_FLOAT32:
        ((float*)data)[i] = (float)x;
        break;
      case STITCHOPT_FLOAT64:
        ((double*)data)[i] = x;
        break;
      case STITCHOPT_INT64:
        ((int64_t*)data)[i] = (int64_t)(i % 2);
        break;
      case STITCHOPT_INT32:
        ((int32_t*)data)[i] = (int32_t)(i % 2);
        break;
      default:
        ((uint8_t*)data)[i] = (uint8_t)(i % 2);
        break;
    }
  }
}

/* max |a - b| / max(|b|, 1) over float32 outputs; bytes equal otherwise. */
static double difference(const StitchoptTensorInfo* info, const void* a, const void* b) {
  if (info->dtype != STITCHOPT_FLOAT32) return memcmp(a, b, info->bytes) == 0 ? 0.0 : 1.0;
  double worst = 0;
  for (size_t i = 0; i < info->bytes / 4; ++i) {
    double x = ((const float*)a)[i], y = ((const float*)b)[i];
    double e = fabs(x - y) / (fabs(y) > 1.0 ? fabs(y) : 1.0);
    if (e > worst || e != e) worst = e;
  }
  return worst;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test OUT_DIR\n");
    return 2;
  }
  if (stitchopt_api_version() != STITCHOPT_API_VERSION) fail("api version", "differs");
  if (strlen(stitchopt_version()) == 0) fail("version", "empty");
  if (stitchopt_dtype_size(STITCHOPT_FLOAT32) != 4 ||
      stitchopt_dtype_size(STITCHOPT_BFLOAT16) != 2 || stitchopt_dtype_size(STITCHOPT_BOOL) != 1 ||
      stitchopt_dtype_size(99) != 0) {
    fail("dtype sizes", "stitchopt_dtype_size is wrong");
  }

  StitchoptSession* emulated = NULL;
  StitchoptSession* reference = NULL;
  if (!ok("open emulated",
          stitchopt_session_open(argv[1], STITCHOPT_BACKEND_EMULATED, &emulated)) ||
      !ok("open reference",
          stitchopt_session_open(argv[1], STITCHOPT_BACKEND_REFERENCE, &reference))) {
    return 1;
  }
  if (strstr(stitchopt_session_backend(emulated), "emulated") == NULL) {
    fail("backend name", stitchopt_session_backend(emulated));
  }
  size_t n_in = stitchopt_session_input_count(emulated);
  size_t n_out = stitchopt_session_output_count(emulated);
  if (n_in == 0 || n_out == 0 || n_in != stitchopt_session_input_count(reference)) {
    fail("counts", "no inputs or outputs, or the two sessions differ");
    return 1;
  }
  StitchoptTensor* inputs = calloc(n_in, sizeof(StitchoptTensor));
  StitchoptBuffer* got = calloc(n_out, sizeof(StitchoptBuffer));
  StitchoptBuffer* want = calloc(n_out, sizeof(StitchoptBuffer));
  StitchoptTensorInfo* out_info = calloc(n_out, sizeof(StitchoptTensorInfo));
  for (size_t i = 0; i < n_in; ++i) {
    StitchoptTensorInfo info;
    if (!ok("input info", stitchopt_session_input(emulated, i, &info))) return 1;
    void* data = malloc(info.bytes ? info.bytes : 1);
    fill(&info, data);
    StitchoptTensor tensor = {info.name, info.dtype, info.rank, info.shape, data};
    inputs[i] = tensor;
  }
  for (size_t i = 0; i < n_out; ++i) {
    if (!ok("output info", stitchopt_session_output(emulated, i, &out_info[i]))) return 1;
    StitchoptBuffer a = {out_info[i].name, malloc(out_info[i].bytes + 1), out_info[i].bytes};
    StitchoptBuffer b = {out_info[i].name, malloc(out_info[i].bytes + 1), out_info[i].bytes};
    got[i] = a;
    want[i] = b;
  }
  if (ok("run emulated", stitchopt_session_run(emulated, inputs, n_in, got, n_out)) &&
      ok("run reference", stitchopt_session_run(reference, inputs, n_in, want, n_out))) {
    for (size_t i = 0; i < n_out; ++i) {
      double e = difference(&out_info[i], got[i].data, want[i].data);
      if (!(e <= 1e-5)) {
        char detail[256];
        snprintf(detail, sizeof(detail), "%s differs by %g from the reference", out_info[i].name,
                 e);
        fail("emulated against reference", detail);
      }
    }
  }

  /* Bad arguments: each an error with its code and message, the session still usable. */
  StitchoptTensor renamed = inputs[0];
  renamed.name = "no_such_input";
  StitchoptTensor* bad = calloc(n_in, sizeof(StitchoptTensor));
  memcpy(bad, inputs, n_in * sizeof(StitchoptTensor));
  bad[0] = renamed;
  expect_error("unknown input", stitchopt_session_run(emulated, bad, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "the model has no input \"no_such_input\"");
  expect_error("missing input", stitchopt_session_run(emulated, inputs + 1, n_in - 1, got, n_out),
               STITCHOPT_INVALID_INPUT, "no array for the model's input");
  int64_t wrong_shape[1] = {7};
  memcpy(bad, inputs, n_in * sizeof(StitchoptTensor));
  bad[0].rank = 1;
  bad[0].shape = wrong_shape;
  expect_error("wrong shape", stitchopt_session_run(emulated, bad, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "the model takes");
  memcpy(bad, inputs, n_in * sizeof(StitchoptTensor));
  bad[0].dtype = bad[0].dtype == STITCHOPT_FLOAT64 ? STITCHOPT_FLOAT32 : STITCHOPT_FLOAT64;
  expect_error("wrong dtype", stitchopt_session_run(emulated, bad, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "the model takes");
  memcpy(bad, inputs, n_in * sizeof(StitchoptTensor));
  bad[0].dtype = 99;
  expect_error("unknown dtype", stitchopt_session_run(emulated, bad, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "no StitchoptDType");
  memcpy(bad, inputs, n_in * sizeof(StitchoptTensor));
  bad[0].data = NULL;
  expect_error("null data", stitchopt_session_run(emulated, bad, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "its data is null");
  StitchoptBuffer small = got[0];
  small.capacity_bytes = got[0].capacity_bytes - 1;
  expect_error("small buffer", stitchopt_session_run(emulated, inputs, n_in, &small, 1),
               STITCHOPT_INVALID_INPUT, "needs");
  StitchoptBuffer stranger = got[0];
  stranger.name = "no_such_output";
  expect_error("unknown output", stitchopt_session_run(emulated, inputs, n_in, &stranger, 1),
               STITCHOPT_INVALID_INPUT, "the model has no output \"no_such_output\"");
  StitchoptTensorInfo info;
  expect_error("input index", stitchopt_session_input(emulated, n_in, &info),
               STITCHOPT_INVALID_INPUT, "is past the model's");
  expect_error("null session", stitchopt_session_run(NULL, inputs, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "session is NULL");
  /* Version 2: bound memory and streams. */
  StitchoptTensorRef* refs = calloc(n_in, sizeof(StitchoptTensorRef));
  for (size_t i = 0; i < n_in; ++i) {
    StitchoptTensorRef ref = {inputs[i].name,  inputs[i].dtype, inputs[i].rank,
                              inputs[i].shape, inputs[i].data,  STITCHOPT_MEMORY_HOST};
    refs[i] = ref;
  }
  StitchoptBufferRef out_ref = {got[0].name, got[0].data, got[0].capacity_bytes,
                                STITCHOPT_MEMORY_HOST};
  ok("run_on with host memory", stitchopt_session_run_on(emulated, NULL, refs, n_in, &out_ref, 1));
  refs[0].memory = STITCHOPT_MEMORY_CUDA;
  expect_error("device memory on the CPU",
               stitchopt_session_run_on(emulated, NULL, refs, n_in, &out_ref, 1),
               STITCHOPT_INVALID_INPUT, "it is device memory, but this session runs on CPU");
  refs[0].memory = 5;
  expect_error("memory number", stitchopt_session_run_on(emulated, NULL, refs, n_in, &out_ref, 1),
               STITCHOPT_INVALID_INPUT, "which is no StitchoptMemory");
  refs[0].memory = STITCHOPT_MEMORY_HOST;
  out_ref.memory = STITCHOPT_MEMORY_CUDA;
  expect_error("device output on the CPU",
               stitchopt_session_run_on(emulated, NULL, refs, n_in, &out_ref, 1),
               STITCHOPT_INVALID_INPUT, "the buffer for output");
  out_ref.memory = STITCHOPT_MEMORY_HOST;
  int dummy_stream = 0;
  expect_error("stream on the CPU",
               stitchopt_session_run_on(emulated, &dummy_stream, refs, n_in, &out_ref, 1),
               STITCHOPT_INVALID_INPUT, "a CUDA stream was given");
  /* An element-misaligned input (every input here has elements of 4 or 8 bytes). */
  StitchoptTensorInfo first;
  if (!ok("input info", stitchopt_session_input(emulated, 0, &first))) return 1;
  char* shifted = malloc(first.bytes + 8);
  bad[0] = inputs[0];
  bad[0].data = shifted + 1;
  memcpy(bad + 1, inputs + 1, (n_in - 1) * sizeof(StitchoptTensor));
  expect_error("misaligned input", stitchopt_session_run(emulated, bad, n_in, got, n_out),
               STITCHOPT_INVALID_INPUT, "is not aligned");
  free(shifted);
  free(refs);
  char mode[128];
  size_t mode_length = stitchopt_session_launch_mode(emulated, mode, sizeof(mode));
  if (mode_length != strlen(mode) || strcmp(mode, "one call per step (CPU)") != 0) {
    fail("launch mode", mode);
  }
  if (stitchopt_session_launch_mode(emulated, mode, 4) != mode_length || strlen(mode) != 3) {
    fail("launch mode", "not cut to the capacity");
  }

  StitchoptSession* none = NULL;
  StitchoptSessionOptions options;
  memset(&options, 0, sizeof(options));
  expect_error("options not initialized", stitchopt_session_open_with(argv[1], &options, &none),
               STITCHOPT_INVALID_INPUT, "stitchopt_session_options_init");
  stitchopt_session_options_init(&options);
  if (options.cuda_graphs != 1 || options.backend != STITCHOPT_BACKEND_AUTO) {
    fail("options defaults", "cuda_graphs is not 1 or backend not AUTO");
  }
  options.backend = STITCHOPT_BACKEND_REFERENCE;
  options.cuda_graphs = 0;
  if (ok("open_with reference", stitchopt_session_open_with(argv[1], &options, &none))) {
    stitchopt_session_close(none);
    none = NULL;
  }
  options.cuda_device = -1;
  expect_error("negative device", stitchopt_session_open_with(argv[1], &options, &none),
               STITCHOPT_INVALID_INPUT, "is negative");
  expect_error(
      "missing directory",
      stitchopt_session_open("/nonexistent/stitchopt-out", STITCHOPT_BACKEND_EMULATED, &none),
      STITCHOPT_INVALID_INPUT, "no model.fused.onnx");
  expect_error("backend number", stitchopt_session_open(argv[1], (StitchoptBackend)7, &none),
               STITCHOPT_INVALID_INPUT, "is none of 0-3");
  StitchoptStatus* gpu = stitchopt_session_open(argv[1], STITCHOPT_BACKEND_GPU, &none);
  if (gpu != NULL) {
    expect_error("GPU asked for without one", gpu, STITCHOPT_NO_DEVICE, "no usable GPU");
  } else {
    stitchopt_session_close(none);
  }
  /* After every error, the session still runs and gives the same outputs. */
  if (ok("run after errors", stitchopt_session_run(emulated, inputs, n_in, want, n_out))) {
    for (size_t i = 0; i < n_out; ++i) {
      if (memcmp(got[i].data, want[i].data, out_info[i].bytes) != 0) {
        fail("run after errors", "the outputs changed");
      }
    }
  }

  stitchopt_session_close(emulated);
  stitchopt_session_close(reference);
  stitchopt_session_close(NULL);
  for (size_t i = 0; i < n_in; ++i) free((void*)inputs[i].data);
  for (size_t i = 0; i < n_out; ++i) {
    free(got[i].data);
    free(want[i].data);
  }
  free(inputs);
  free(got);
  free(want);
  free(out_info);
  free(bad);
  if (failures == 0) printf("c_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
