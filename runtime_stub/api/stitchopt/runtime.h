/* stitchopt's runtime library, the C ABI (libstitchopt_runtime): open what
 * `stitchopt MODEL -o OUT` wrote once, then run it many times on your own tensors.
 * docs/runtime.md, "Using a compiled model from your program", has the whole story.
 *
 * Stable: only C types cross it, every object is an opaque handle created and
 * destroyed by this library, nothing throws across it, and a function added later
 * gets a new name (stitchopt_api_version() says which are there). A call that fails
 * returns a StitchoptStatus* the caller frees; NULL means success. A failed call
 * leaves the session usable.
 *
 *   StitchoptSession* session = NULL;
 *   StitchoptStatus* status = stitchopt_session_open("out", STITCHOPT_BACKEND_AUTO, &session);
 *   if (status) { fprintf(stderr, "%s\n", stitchopt_status_message(status));
 *                 stitchopt_status_free(status); return 1; }
 *   int64_t shape[2] = {32, 784};
 *   StitchoptTensor input = {"input", STITCHOPT_FLOAT32, 2, shape, pixels};
 *   StitchoptBuffer output = {"logits", logits, sizeof(logits)};
 *   status = stitchopt_session_run(session, &input, 1, &output, 1);
 *   ...
 *   stitchopt_session_close(session);
 *
 * Tensors are C order, the exact dtype and shape of the model's input or output
 * (stitchopt_session_input / _output say which), their data aligned to the element
 * size. stitchopt_session_run takes host memory; stitchopt_session_run_on (version 2)
 * also device memory of the session's GPU and a CUDA stream. On a GPU the steps are
 * captured into one CUDA graph at the first run and replayed after, unless turned off
 * (StitchoptSessionOptions.cuda_graphs) or impossible (stitchopt_session_launch_mode
 * says why). Calls on one session may come from several threads; they run one at a
 * time. */
#ifndef STITCHOPT_RUNTIME_H_
#define STITCHOPT_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI: 2 (1, plus session options, device memory, CUDA streams,
 * stitchopt_session_launch_mode and stitchopt_dtype_size). */
#define STITCHOPT_API_VERSION 2
int32_t stitchopt_api_version(void);
/* The library's version, "0.1.0". */
const char* stitchopt_version(void);

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum {
  STITCHOPT_FLOAT32 = 1,
  STITCHOPT_UINT8 = 2,
  STITCHOPT_INT8 = 3,
  STITCHOPT_UINT16 = 4,
  STITCHOPT_INT16 = 5,
  STITCHOPT_INT32 = 6,
  STITCHOPT_INT64 = 7,
  STITCHOPT_BOOL = 9,
  STITCHOPT_FLOAT16 = 10,
  STITCHOPT_FLOAT64 = 11,
  STITCHOPT_UINT32 = 12,
  STITCHOPT_UINT64 = 13,
  STITCHOPT_BFLOAT16 = 16
} StitchoptDType;

/* Version 2: the bytes of one element of `dtype`; 0 for a number that is no
 * StitchoptDType. */
size_t stitchopt_dtype_size(int32_t dtype);

/* Where the steps run; see stitchopt_session_backend for the one chosen. */
typedef enum {
  STITCHOPT_BACKEND_AUTO = 0,     /* the GPU when usable, else STITCHOPT_BACKEND_EMULATED */
  STITCHOPT_BACKEND_GPU = 1,      /* the GPU, or an error saying why there is none */
  STITCHOPT_BACKEND_EMULATED = 2, /* the generated kernels through the CUDA emulation (CPU) */
  STITCHOPT_BACKEND_REFERENCE = 3 /* the reference interpreter (CPU) */
} StitchoptBackend;

typedef enum {
  STITCHOPT_OK = 0,
  STITCHOPT_INTERNAL_ERROR = 1, /* a bug of stitchopt's: please report it */
  STITCHOPT_INVALID_INPUT = 2,  /* a wrong argument, tensor or output directory */
  STITCHOPT_NO_DEVICE = 4       /* STITCHOPT_BACKEND_GPU on a machine without a usable GPU */
} StitchoptCode;

typedef struct StitchoptStatus StitchoptStatus;
typedef struct StitchoptSession StitchoptSession;

/* A failed call's code and message (one line, says what to change). */
StitchoptCode stitchopt_status_code(const StitchoptStatus* status);
const char* stitchopt_status_message(const StitchoptStatus* status);
void stitchopt_status_free(StitchoptStatus* status);

/* Opens OUT (what `stitchopt MODEL -o OUT` wrote): reads and checks it, builds or
 * loads the kernels, plans the memory and uploads the weights. On success *session is
 * the new session; close it with stitchopt_session_close. */
StitchoptStatus* stitchopt_session_open(const char* out_dir, StitchoptBackend backend,
                                        StitchoptSession** session);
/* Version 2: options beyond the backend. Fill them with stitchopt_session_options_init
 * (which sets struct_size, so later versions can add fields), then change fields. */
typedef struct {
  size_t struct_size;       /* sizeof(StitchoptSessionOptions) */
  StitchoptBackend backend; /* default STITCHOPT_BACKEND_AUTO */
  int32_t cuda_device;      /* the GPU's ordinal, default 0 */
  int32_t cuda_graphs;      /* 1 (default): capture the steps at the first run, replay
                               them after; 0: one launch per step */
} StitchoptSessionOptions;
void stitchopt_session_options_init(StitchoptSessionOptions* options);
StitchoptStatus* stitchopt_session_open_with(const char* out_dir,
                                             const StitchoptSessionOptions* options,
                                             StitchoptSession** session);

/* Frees everything the session allocated. NULL is allowed. */
void stitchopt_session_close(StitchoptSession* session);

/* "CPU: emulated kernels", "CPU: reference interpreter", or the GPU's name. Valid
 * while the session is open. */
const char* stitchopt_session_backend(const StitchoptSession* session);

/* A model input or output: its name, dtype and shape. The pointers are valid while
 * the session is open. */
typedef struct {
  const char* name;
  int32_t dtype; /* a StitchoptDType */
  int32_t rank;
  const int64_t* shape;
  size_t bytes; /* the product of the dims times the element size */
} StitchoptTensorInfo;

size_t stitchopt_session_input_count(const StitchoptSession* session);
size_t stitchopt_session_output_count(const StitchoptSession* session);
/* index < the count, else STITCHOPT_INVALID_INPUT. */
StitchoptStatus* stitchopt_session_input(const StitchoptSession* session, size_t index,
                                         StitchoptTensorInfo* info);
StitchoptStatus* stitchopt_session_output(const StitchoptSession* session, size_t index,
                                          StitchoptTensorInfo* info);

/* An input: host memory holding `shape`'s elements of `dtype` in C order. */
typedef struct {
  const char* name;
  int32_t dtype; /* a StitchoptDType */
  int32_t rank;
  const int64_t* shape;
  const void* data;
} StitchoptTensor;

/* A buffer an output is written to: at least the output's bytes. */
typedef struct {
  const char* name;
  void* data;
  size_t capacity_bytes;
} StitchoptBuffer;

/* Runs the model on `inputs` (each model input once) and writes the outputs
 * `outputs` names (any of the model's outputs, each once). Every argument is checked
 * before anything runs. */
StitchoptStatus* stitchopt_session_run(StitchoptSession* session, const StitchoptTensor* inputs,
                                       size_t input_count, const StitchoptBuffer* outputs,
                                       size_t output_count);

/* Version 2: where a tensor's data is. */
typedef enum {
  STITCHOPT_MEMORY_HOST = 0,
  STITCHOPT_MEMORY_CUDA = 1 /* device memory of the session's GPU (GPU backend only) */
} StitchoptMemory;

/* An input, in host or device memory. */
typedef struct {
  const char* name;
  int32_t dtype; /* a StitchoptDType */
  int32_t rank;
  const int64_t* shape;
  const void* data;
  int32_t memory; /* a StitchoptMemory */
} StitchoptTensorRef;

/* A buffer an output is written to, in host or device memory. */
typedef struct {
  const char* name;
  void* data;
  size_t capacity_bytes;
  int32_t memory; /* a StitchoptMemory */
} StitchoptBufferRef;

/* stitchopt_session_run with host or device memory, ordered on `cuda_stream` (a
 * cudaStream_t of the session's GPU) when it is not NULL: the run waits for the work
 * already enqueued on it, and work enqueued on it later waits for the outputs. With a
 * stream and only device outputs the call returns once the work is enqueued;
 * otherwise it returns when the outputs are written. Device memory or a stream on a
 * session that runs on the CPU is STITCHOPT_INVALID_INPUT. */
StitchoptStatus* stitchopt_session_run_on(StitchoptSession* session, void* cuda_stream,
                                          const StitchoptTensorRef* inputs, size_t input_count,
                                          const StitchoptBufferRef* outputs, size_t output_count);

/* How the steps are launched, as one line: "CUDA graph replay (N steps in one graph)",
 * "CUDA graph capture at the first run", "one launch per step: <why>" or "one call
 * per step (CPU)". Writes at most `capacity` bytes, NUL included, into `text` (which
 * may be NULL when capacity is 0) and returns the length of the whole line. */
size_t stitchopt_session_launch_mode(const StitchoptSession* session, char* text, size_t capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STITCHOPT_RUNTIME_H_ */
