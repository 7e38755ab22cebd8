// Tests for runtime_stub/npz: .npy and .npz written and read back, and each damaged or
// unsupported file refused with its message (numpy's own files are read in
// tests/runtime/run_data_cli.py).
#include "runtime_stub/npz.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ir/core/dtype.h"

namespace stitch::runtime {
namespace {

ir::Tensor tensor(ir::DType dtype, std::vector<int64_t> dims) {
  ir::Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.assign(static_cast<size_t>(t.num_elements() * ir::dtype_size(dtype)), '\0');
  for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<char>(i * 7 % 251);
  if (dtype == ir::DType::kBool) {
    for (char& byte : t.bytes) byte = static_cast<char>(byte & 1);
  }
  return t;
}

std::string error_of(std::string_view bytes) {
  Result<NamedTensors> parsed = parse_npz(bytes, "f.npz");
  return parsed.is_ok() ? "ok" : parsed.status().message();
}

// The .npy of one array with `header` as its dict.
std::string npy(const std::string& header, const std::string& data) {
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string npy_error(const std::string& header, const std::string& data) {
  Result<ir::Tensor> parsed = parse_npy(npy(header, data), "x");
  return parsed.is_ok() ? "ok" : parsed.status().message();
}

TEST(NpzTest, WrittenArraysReadBack) {
  NamedTensors arrays = {
      {"scalar", tensor(ir::DType::kFloat32, {})},      {"vector", tensor(ir::DType::kInt64, {5})},
      {"cube", tensor(ir::DType::kFloat16, {2, 3, 4})}, {"mask", tensor(ir::DType::kBool, {3, 1})},
      {"bytes", tensor(ir::DType::kUInt8, {0, 4})},     {"wide", tensor(ir::DType::kUInt64, {2})}};
  Result<std::string> archive = render_npz(arrays);
  ASSERT_TRUE(archive.is_ok()) << archive.status().message();
  Result<NamedTensors> read = parse_npz(*archive, "f.npz");
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, arrays);
}

TEST(NpzTest, HeadersAreNumpys) {
  Result<std::string> archive = render_npz({{"x", tensor(ir::DType::kFloat32, {2, 3})},
                                            {"y", tensor(ir::DType::kInt8, {7})},
                                            {"s", tensor(ir::DType::kFloat64, {})}});
  ASSERT_TRUE(archive.is_ok());
  EXPECT_NE(archive->find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_NE(archive->find("{'descr': '|i1', 'fortran_order': False, 'shape': (7,), }"),
            std::string::npos);
  EXPECT_NE(archive->find("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
  // The data starts 64-byte aligned within its member (magic + header = 64k bytes).
  const size_t magic = archive->find("\x93NUMPY");
  const size_t newline = archive->find('\n', magic);
  EXPECT_EQ((newline + 1 - magic) % 64, 0u);
}

TEST(NpzTest, RefusesDamagedArchives) {
  Result<std::string> archive = render_npz(
      {{"a", tensor(ir::DType::kFloat32, {4})}, {"b", tensor(ir::DType::kFloat32, {4})}});
  ASSERT_TRUE(archive.is_ok());
  EXPECT_EQ(error_of(*archive), "ok");
  EXPECT_NE(error_of(archive->substr(0, archive->size() - 5)).find("has no end record"),
            std::string::npos);
  EXPECT_NE(error_of("PK").find("is shorter than its end record"), std::string::npos);
  std::string flipped = *archive;
  flipped[flipped.find("\x93NUMPY") + 70] ^= 0x40;  // a data byte of "a"
  EXPECT_NE(error_of(flipped).find("member \"a.npy\": its CRC-32 does not match"),
            std::string::npos);
  std::string twice = *archive;
  for (size_t at = twice.find("b.npy"); at != std::string::npos; at = twice.find("b.npy", at)) {
    twice[at] = 'a';
  }
  EXPECT_NE(error_of(twice).find("a second array named \"a\""), std::string::npos);
  // The central directory's offset (the end record's bytes 16-19) past the file.
  std::string moved = *archive;
  moved[moved.size() - 3] = '\x7f';
  EXPECT_NE(error_of(moved).find("central directory outside the file"), std::string::npos);
}

TEST(NpzTest, RefusesArraysStitchoptDoesNotRun) {
  const std::string four(16, '\0');
  EXPECT_EQ(npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four), "ok");
  EXPECT_NE(npy_error("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four)
                .find("big-endian ('>f4'); save it little-endian (a.astype('<f4'))"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four)
                .find("Fortran order"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four)
                .find("element type '<c8' is not one stitchopt runs"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four)
                .find("needs 20 bytes, the file holds 16"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", four)
                .find("an unknown key 'x'"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '<f4', 'shape': (4,)}", four).find("not the three keys"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '<f4, 'fortran_order': False}", four).find("not numpy's"),
            std::string::npos);
  EXPECT_NE(npy_error("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }",
                      std::string("\x00\x01\x02\x00", 4))
                .find("neither 0 nor 1"),
            std::string::npos);
  Result<ir::Tensor> bad = parse_npy("NUMPY", "x");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("no \\x93NUMPY magic"), std::string::npos);
}

}  // namespace
}  // namespace stitch::runtime
