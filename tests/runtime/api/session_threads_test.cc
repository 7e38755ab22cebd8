// The C++ API (runtime_stub/api/stitchopt/session.hpp) under concurrency and over a
// session's lifetime:
//   - 8 threads share one session, each running its own inputs 4 times; every result
//     must equal that input's result computed alone (runs are serialized, so one
//     thread's run never sees another's tensors);
//   - two sessions of one directory in one process, each used from its own threads;
//   - opening, running and closing a session again and again leaves the heap where it
//     was (mallinfo2's bytes in use), on the reference and the emulated backend;
//   - a bad call throws stitchopt::Error with its code, and the session runs after it.
// Usage: session_threads_test OUT_DIR. Exit 0 when every check passes.
#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "stitchopt/session.hpp"

namespace {

int failures = 0;

void fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  ++failures;
}

// The inputs of set `k`: floats sin(0.37 i + k), integers and bools (i + k) % 2.
struct InputSet {
  std::vector<std::vector<char>> storage;
  std::vector<stitchopt::Input> inputs;
};

InputSet input_set(const std::vector<stitchopt::TensorInfo>& infos, int k) {
  InputSet set;
  for (const stitchopt::TensorInfo& info : infos) {
    std::vector<char> bytes(info.bytes);
    const size_t count = info.bytes / stitchopt_dtype_size(info.dtype);
    for (size_t i = 0; i < count; ++i) {
      const double x = std::sin(0.37 * static_cast<double>(i) + k);
      if (info.dtype == STITCHOPT_FLOAT32) {
        reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(x);
      } else if (info.dtype == STITCHOPT_INT64) {
        reinterpret_cast<int64_t*>(bytes.data())[i] = static_cast<int64_t>((i + k) % 2);
      } else if (info.dtype == STITCHOPT_INT32) {
        reinterpret_cast<int32_t*>(bytes.data())[i] = static_cast<int32_t>((i + k) % 2);
      } else if (stitchopt_dtype_size(info.dtype) == 1) {
        reinterpret_cast<uint8_t*>(bytes.data())[i] = static_cast<uint8_t>((i + k) % 2);
      }
    }
    set.storage.push_back(std::move(bytes));
  }
  for (size_t i = 0; i < infos.size(); ++i) {
    set.inputs.push_back({infos[i].name, infos[i].dtype, infos[i].shape, set.storage[i].data()});
  }
  return set;
}

size_t heap_in_use() { return mallinfo2().uordblks; }

void threads(const std::string& out_dir) {
  stitchopt::Session session(out_dir, stitchopt::Backend::kEmulated);
  stitchopt::Session second(out_dir, stitchopt::Backend::kEmulated);
  const std::vector<stitchopt::TensorInfo> infos = session.inputs();
  constexpr int kThreads = 8;
  std::vector<InputSet> sets;
  std::vector<std::map<std::string, stitchopt::Output>> alone;
  for (int k = 0; k < kThreads; ++k) {
    sets.push_back(input_set(infos, k));
    alone.push_back(session.run(sets.back().inputs));
  }
  if (alone[0].begin()->second.bytes == alone[1].begin()->second.bytes) {
    fail("two input sets gave the same output: the test would not see a mix-up");
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> workers;
  for (int k = 0; k < kThreads; ++k) {
    workers.emplace_back([&, k] {
      stitchopt::Session& used = k % 2 ? second : session;
      for (int round = 0; round < 4; ++round) {
        try {
          std::map<std::string, stitchopt::Output> outputs = used.run(sets[k].inputs);
          for (const auto& [name, output] : outputs) {
            if (output.bytes != alone[k].at(name).bytes) ++mismatches[k];
          }
        } catch (const stitchopt::Error& error) {
          ++mismatches[k];
        }
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (int k = 0; k < kThreads; ++k) {
    if (mismatches[k] != 0) fail("thread " + std::to_string(k) + ": results differ from alone");
  }

  // A bad call throws with its code; the session runs after it.
  try {
    std::vector<stitchopt::Input> renamed = sets[0].inputs;
    renamed[0].name = "no_such_input";
    session.run(renamed);
    fail("a run with an unknown input name did not throw");
  } catch (const stitchopt::Error& error) {
    if (error.code() != STITCHOPT_INVALID_INPUT) fail(std::string("code of: ") + error.what());
  }
  if (session.run(sets[0].inputs).begin()->second.bytes != alone[0].begin()->second.bytes) {
    fail("the session's result changed after an error");
  }
}

void lifetime(const std::string& out_dir, stitchopt::Backend backend, const char* name) {
  auto cycle = [&] {
    stitchopt::Session session(out_dir, backend);
    InputSet set = input_set(session.inputs(), 0);
    session.run(set.inputs);
  };
  for (int i = 0; i < 2; ++i) cycle();  // first-use caches (locale, dlopen) settle
  const size_t before = heap_in_use();
  for (int i = 0; i < 5; ++i) cycle();
  const size_t after = heap_in_use();
  std::printf("%s: heap in use %zu bytes before 5 open/run/close cycles, %zu after\n", name, before,
              after);
  if (after > before + 64 * 1024) {
    fail(std::string(name) + ": 5 sessions opened and closed left " +
         std::to_string(after - before) + " bytes allocated");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: session_threads_test OUT_DIR\n");
    return 2;
  }
  try {
    threads(argv[1]);
    lifetime(argv[1], stitchopt::Backend::kReference, "reference");
    lifetime(argv[1], stitchopt::Backend::kEmulated, "emulated");
  } catch (const stitchopt::Error& error) {
    fail(std::string("unexpected error: ") + error.what());
  }
  if (failures == 0) std::printf("session_threads_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
