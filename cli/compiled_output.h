// What `stitchopt profile OUT` reads of how OUT was compiled: the device profile its
// plan was made for, and the ptxas register counts of its kernels (report.json, when
// compiled with --ptxas).
//
// OUT may come from elsewhere (DESIGN.md, Untrusted input). OUT/device.json is read
// as a regular file of at most 1 MiB reached without a link, and validated as any
// profile; report.json is read bounded (512 MiB) and streamed (a SAX reader that
// keeps only the few fields it needs, so a hostile report of millions of values costs
// no more memory than its text); report.json's device name is only ever looked up
// among the built-in profiles, never opened as a path.
#pragma once

#include <map>
#include <string>

#include "cost_model/device_profile.h"
#include "ir/core/status.h"

namespace stitch::cli {

struct CompiledFor {
  std::string device;  // report.json device.name ("" when unread)
  // report.json device.launch_mode; "" when unread or written before --launch-mode
  // existed (such outputs were planned for host launches).
  std::string launch_mode;
  std::map<std::string, int> registers;  // kernel -> ptxas registers
};

// report.json's device name and register counts; empty when report.json is missing
// or unreadable (profile then needs device.json or --device, and has no registers).
CompiledFor read_compiled_for(const std::string& out_dir);

// The device profile `profile` estimates with: `flag` (--device) when given; else the
// one the output was planned with, OUT/device.json; else, for an output written
// before device.json existed, the built-in profile report.json names.
Result<cost_model::DeviceProfile> profile_device(const std::string& out_dir,
                                                 const std::string& flag,
                                                 const CompiledFor& compiled_for);

}  // namespace stitch::cli
