// Every composition's writer, for KernelWriter's dispatch (kernel_writer.cc). A new
// composition adds its writer header here.
#pragma once

#include "emit/compositions/attention/attention_writer.h"
#include "emit/compositions/global/global_writer.h"
#include "emit/compositions/packing/packing_writer.h"
#include "emit/compositions/rows/row_writer.h"
#include "emit/compositions/stencil/stencil_writer.h"
#include "emit/compositions/thread/thread_writer.h"
#include "emit/compositions/tiled_gemm/tiled_gemm_writer.h"
#include "emit/compositions/transpose/transpose_writer.h"
