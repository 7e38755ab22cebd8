// Reading a file stitchopt did not write (DESIGN.md, Untrusted input): a device
// profile, OUT/kernels/kernels.json, OUT/model.fused.onnx. A path can name a FIFO (a
// plain open blocks until a writer comes), a device such as /dev/zero (a read never
// ends), a directory, or a file far larger than anything stitchopt writes; a symbolic
// link planted inside an output directory can lead anywhere.
//
// So these functions open with O_NONBLOCK (opening a FIFO returns at once), fstat the
// opened descriptor (what is read is what was checked, no race with a rename) and
// read only a regular file, and only up to `max_bytes`: a larger file is refused from
// its size before a byte is read, and a file that grows while it is read is refused
// after at most max_bytes + 1 bytes.
//
//   read_regular_file(path, ...): for a path the user typed (`--device my_gpu.json`):
//     symbolic links are followed, as the user may have made one on purpose.
//   read_regular_file_under(root, relative, ...): for a file inside a directory that
//     may have been prepared by someone else (OUT/kernels/kernels.json): `root` is
//     followed (the user named it), every component of `relative` is opened with
//     O_NOFOLLOW, so a link planted at OUT/kernels or at kernels.json is refused.
//
// `what` names the file in errors ("device profile", "kernels.json"). Every error is
// Status::invalid_input and starts with the path, e.g.
//   dev/fifo.json: the device profile is a FIFO, not a regular file
//   out/kernels/kernels.json: the kernels.json is 73400320 bytes, more than the 64 MiB
//     (67108864 bytes) a kernels.json may have
//   out/kernels/kernels.json: the kernels.json is a symbolic link; stitchopt does not
//     follow links inside an output directory
//   gpu.json: cannot open the device profile: No such file or directory
// Callers that treat a missing file specially check for it first.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "ir/core/status.h"

namespace stitch::support {

Result<std::string> read_regular_file(const std::filesystem::path& path, size_t max_bytes,
                                      std::string_view what);

// Precondition: `relative` is relative and has no ".." component (callers pass fixed
// names such as "kernels/kernels.json").
Result<std::string> read_regular_file_under(const std::filesystem::path& root,
                                            const std::filesystem::path& relative, size_t max_bytes,
                                            std::string_view what);

}  // namespace stitch::support
