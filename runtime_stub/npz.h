// NumPy's .npz and .npy files as named ir::Tensors: what `stitchopt run --inputs`
// reads and `--save-outputs` writes (docs/runtime.md, "Running on your own data").
//
// An .npz is a ZIP archive of .npy members, one per array, as numpy.savez (stored) and
// numpy.savez_compressed (deflate) write it; a member "x.npy" is the array "x". A .npy
// is the magic "\x93NUMPY", a version (1.0, 2.0 or 3.0), a header length, a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and the
// C-order element bytes.
//
// Element types (descr): <f4 <f8 <f2 |b1 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 (and '=' or
// '|' for the native little-endian order), as ir::DType's float32 ... uint64. A
// big-endian array, a Fortran-order one, a structured or object array, or another type
// (complex, strings, datetime) is refused with what to do instead.
//
// The file is the user's, but nothing in it is trusted (DESIGN.md, Untrusted input):
// it is read only as a regular file of at most kMaxNpzBytes; the archive is read
// from its central directory (ZIP64 too, as numpy writes members over 4 GiB), each
// member's sizes are checked against the file before anything is allocated, a
// deflated member inflates to exactly the size its directory entry declares (no
// more: a "zip bomb" stops there) and at most kMaxNpzBytes in total, each member's
// CRC-32 is checked, and the .npy header's shape must describe exactly the bytes that
// follow it. An encrypted, multi-disk or otherwise compressed member, two members of
// one name, or a member that is not an .npy is refused. Every error is
// Status::invalid_input and starts with the path, e.g.
//   feeds.npz: member "x.npy": the array is big-endian ('>f4'); save it little-endian
//     (a.astype('<f4'))
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::runtime {

// Inputs are held in memory as they are read: 16 GiB is more than any model's inputs
// stitchopt runs, and keeps a mistaken path (a disk image) from exhausting memory.
inline constexpr uint64_t kMaxNpzBytes = uint64_t{16} << 30;

using NamedTensors = std::vector<std::pair<std::string, ir::Tensor>>;

// The arrays of `bytes`, an .npz's contents, in the archive's order. `path` names the
// file in errors.
Result<NamedTensors> parse_npz(std::string_view bytes, const std::string& path);

// The same from the file at `path` (support::read_regular_file).
Result<NamedTensors> read_npz(const std::filesystem::path& path);

// One .npy: its array. `what` names it in errors ("feeds.npz: member \"x.npy\"").
Result<ir::Tensor> parse_npy(std::string_view bytes, const std::string& what);

// `tensors` as an .npz numpy.load reads (stored members, .npy version 1.0, or 2.0
// when a header needs it, each header padded so the data starts 64-byte aligned).
// Precondition: the names are distinct. Errors: a dtype .npy has no code for
// (string tensors), an archive that would need ZIP64 (over 4 GiB).
Result<std::string> render_npz(const NamedTensors& tensors);

// render_npz written to `path` (replaced if it exists).
Status write_npz(const std::filesystem::path& path, const NamedTensors& tensors);

}  // namespace stitch::runtime
