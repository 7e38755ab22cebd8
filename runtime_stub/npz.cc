// NumPy's .npz and .npy files (runtime_stub/npz.h).
#include "runtime_stub/npz.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include "ir/core/dtype.h"
#include "support/bounded_file.h"
#include "support/escape.h"

namespace stitch::runtime {
namespace {

// ---- Little-endian fields.

uint64_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

// Precondition: width <= 8.
void put_le(std::string& out, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// What a local header and a central directory entry share, from "version needed" to
// the extra field's length: version 2.0, no flags, stored, no time, the CRC-32, the
// sizes, the name's length, no extra field.
void put_entry(std::string& out, uint32_t crc, uint64_t size, uint64_t name_bytes) {
  put_le(out, 20, 2);
  put_le(out, 0, 8);  // flags, method, time, date
  put_le(out, crc, 4);
  put_le(out, size, 4);
  put_le(out, size, 4);
  put_le(out, name_bytes, 2);
  put_le(out, 0, 2);
}

uint32_t crc32_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  size_t done = 0;
  while (done < bytes.size()) {  // zlib takes uInt lengths
    const size_t chunk = std::min<size_t>(bytes.size() - done, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), static_cast<uInt>(chunk));
    done += chunk;
  }
  return static_cast<uint32_t>(crc);
}

// ---- .npy element types.

struct NpyType {
  std::string_view code;  // without the byte-order character
  ir::DType dtype;
};

constexpr std::array<NpyType, 12> kNpyTypes = {{
    {"f4", ir::DType::kFloat32},
    {"f8", ir::DType::kFloat64},
    {"f2", ir::DType::kFloat16},
    {"b1", ir::DType::kBool},
    {"i1", ir::DType::kInt8},
    {"u1", ir::DType::kUInt8},
    {"i2", ir::DType::kInt16},
    {"u2", ir::DType::kUInt16},
    {"i4", ir::DType::kInt32},
    {"u4", ir::DType::kUInt32},
    {"i8", ir::DType::kInt64},
    {"u8", ir::DType::kUInt64},
}};

Result<ir::DType> dtype_of_descr(const std::string& descr, const std::string& what) {
  if (descr.size() == 3) {
    const char order = descr[0];
    const std::string_view code = std::string_view(descr).substr(1);
    for (const NpyType& type : kNpyTypes) {
      if (type.code != code) continue;
      if (order == '<' || order == '=' || (order == '|' && ir::dtype_size(type.dtype) == 1)) {
        return type.dtype;
      }
      if (order == '>') {
        return Status::invalid_input(what + ": the array is big-endian ('" + descr +
                                     "'); save it little-endian (a.astype('<" + std::string(code) +
                                     "'))");
      }
    }
  }
  return Status::invalid_input(
      what + ": the array's element type '" + support::printable(descr) +
      "' is not one stitchopt runs (float16/32/64, bool, int8-64, uint8-64); convert it, "
      "e.g. a.astype(np.float32)");
}

std::string descr_of(ir::DType dtype) {
  for (const NpyType& type : kNpyTypes) {
    if (type.dtype == dtype)
      return (ir::dtype_size(dtype) == 1 ? "|" : "<") + std::string(type.code);
  }
  return "";
}

// ---- The .npy header: a Python dict literal of three keys, parsed strictly.

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string what) : text_(text), what_(std::move(what)) {}

  Status parse(std::string* descr, bool* fortran_order, std::vector<int64_t>* shape) {
    skip_space();
    STITCH_RETURN_IF_ERROR(expect('{'));
    std::set<std::string> seen;
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++at_;
        break;
      }
      STITCH_ASSIGN_OR_RETURN(std::string key, quoted());
      if (!seen.insert(key).second) return error("the key '" + key + "' appears twice");
      skip_space();
      STITCH_RETURN_IF_ERROR(expect(':'));
      skip_space();
      if (key == "descr") {
        STITCH_ASSIGN_OR_RETURN(*descr, quoted());
      } else if (key == "fortran_order") {
        STITCH_ASSIGN_OR_RETURN(*fortran_order, boolean());
      } else if (key == "shape") {
        STITCH_ASSIGN_OR_RETURN(*shape, tuple());
      } else {
        return error("an unknown key '" + support::printable(key) + "'");
      }
      skip_space();
      if (peek() == ',') ++at_;
    }
    skip_space();
    if (at_ != text_.size()) return error("text after the dict");
    if (seen.size() != 3) return error("not the three keys descr, fortran_order and shape");
    return Status::ok();
  }

 private:
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  Status error(const std::string& why) const {
    return Status::invalid_input(what_ + ": the .npy header is not numpy's (" + why + ")");
  }
  Status expect(char c) {
    if (peek() != c) return error(std::string("expected '") + c + "'");
    ++at_;
    return Status::ok();
  }
  Result<std::string> quoted() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return error("expected a quoted string");
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) return error("an unterminated string");
    std::string value(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return value;
  }
  Result<bool> boolean() {
    for (auto [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return value;
      }
    }
    return error("fortran_order is neither True nor False");
  }
  Result<std::vector<int64_t>> tuple() {
    STITCH_RETURN_IF_ERROR(expect('('));
    std::vector<int64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++at_;
        return dims;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) return error("a dim is not a number");
      int64_t dim = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (dim > (std::numeric_limits<int64_t>::max() - 9) / 10) return error("a dim overflows");
        dim = dim * 10 + (text_[at_++] - '0');
      }
      if (peek() == 'L') ++at_;  // Python 2's long literal
      dims.push_back(dim);
      if (dims.size() > 64) return error("more than 64 dims");
      skip_space();
      if (peek() == ',') {
        ++at_;
      } else if (peek() != ')') {
        return error("expected ',' or ')' in the shape");
      }
    }
  }

  std::string_view text_;
  std::string what_;
  size_t at_ = 0;
};

// ---- The ZIP archive (PKWARE's APPNOTE), read from its central directory.

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndOfDirectoryBytes = 22;

// A member as its central directory entry describes it (ZIP64 sizes applied).
struct Member {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

class Archive {
 public:
  Archive(std::string_view bytes, std::string path) : bytes_(bytes), path_(std::move(path)) {}

  Result<std::vector<Member>> members() {
    STITCH_ASSIGN_OR_RETURN(size_t end, find_end_of_directory());
    uint64_t count = read_le(bytes_, end + 10, 2);
    uint64_t directory_bytes = read_le(bytes_, end + 12, 4);
    uint64_t directory_offset = read_le(bytes_, end + 16, 4);
    if (read_le(bytes_, end + 4, 2) != 0 || read_le(bytes_, end + 6, 2) != 0) {
      return error("is split over several disks");
    }
    if (count == 0xffff || directory_bytes == 0xffffffff || directory_offset == 0xffffffff) {
      STITCH_RETURN_IF_ERROR(read_zip64_end(end, &count, &directory_bytes, &directory_offset));
    }
    if (directory_offset > bytes_.size() || directory_bytes > bytes_.size() - directory_offset) {
      return error("has a central directory outside the file");
    }
    std::vector<Member> members;
    size_t at = directory_offset;
    const size_t directory_end = directory_offset + directory_bytes;
    for (uint64_t i = 0; i < count; ++i) {
      if (directory_end - at < 46 || read_le(bytes_, at, 4) != kCentralHeader) {
        return error("has a damaged central directory");
      }
      Member member;
      member.flags = static_cast<uint16_t>(read_le(bytes_, at + 8, 2));
      member.method = static_cast<uint16_t>(read_le(bytes_, at + 10, 2));
      member.crc = static_cast<uint32_t>(read_le(bytes_, at + 16, 4));
      member.compressed = read_le(bytes_, at + 20, 4);
      member.uncompressed = read_le(bytes_, at + 24, 4);
      const size_t name_bytes = read_le(bytes_, at + 28, 2);
      const size_t extra_bytes = read_le(bytes_, at + 30, 2);
      const size_t comment_bytes = read_le(bytes_, at + 32, 2);
      member.local_offset = read_le(bytes_, at + 42, 4);
      if (directory_end - at - 46 < name_bytes + extra_bytes + comment_bytes) {
        return error("has a damaged central directory");
      }
      member.name = std::string(bytes_.substr(at + 46, name_bytes));
      STITCH_RETURN_IF_ERROR(
          read_zip64_extra(bytes_.substr(at + 46 + name_bytes, extra_bytes), &member));
      at += 46 + name_bytes + extra_bytes + comment_bytes;
      members.push_back(std::move(member));
    }
    return members;
  }

  // The member's bytes, inflated and checked.
  Result<std::string> contents(const Member& member, uint64_t* budget) {
    const std::string what = member_name(member);
    if (member.flags & 0x1) return Status::invalid_input(what + ": is encrypted");
    if (member.local_offset > bytes_.size() || bytes_.size() - member.local_offset < 30 ||
        read_le(bytes_, member.local_offset, 4) != kLocalHeader) {
      return Status::invalid_input(what + ": its local header is outside the file or damaged");
    }
    const uint64_t data = member.local_offset + 30 + read_le(bytes_, member.local_offset + 26, 2) +
                          read_le(bytes_, member.local_offset + 28, 2);
    if (data > bytes_.size() || member.compressed > bytes_.size() - data) {
      return Status::invalid_input(what + ": its data runs past the end of the file");
    }
    if (member.uncompressed > *budget) {
      return Status::invalid_input(what + ": holds " + std::to_string(member.uncompressed) +
                                   " bytes; the arrays of one .npz may have at most " +
                                   std::to_string(kMaxNpzBytes));
    }
    *budget -= member.uncompressed;
    const std::string_view stored = bytes_.substr(data, member.compressed);
    std::string out;
    if (member.method == 0) {
      if (member.compressed != member.uncompressed) {
        return Status::invalid_input(what + ": a stored member whose two sizes differ");
      }
      out.assign(stored);
    } else if (member.method == 8) {
      // Deflate expands a byte to at most 1032 (RFC 1951's longest match per bit
      // pair): a larger declared size is a lie, refused before it is allocated.
      if (member.uncompressed / 1032 > member.compressed + 1) {
        return Status::invalid_input(what + ": declares " + std::to_string(member.uncompressed) +
                                     " bytes, more than deflate expands its " +
                                     std::to_string(member.compressed) + " bytes to");
      }
      STITCH_ASSIGN_OR_RETURN(out, inflate_member(stored, member, what));
    } else {
      return Status::invalid_input(what + ": is compressed with method " +
                                   std::to_string(member.method) +
                                   "; numpy.savez and numpy.savez_compressed write stored or "
                                   "deflated members");
    }
    if (crc32_of(out) != member.crc) {
      return Status::invalid_input(what + ": its CRC-32 does not match (the file is damaged)");
    }
    return out;
  }

  std::string member_name(const Member& member) const {
    return path_ + ": member " + support::quote(support::valid_utf8(member.name));
  }

 private:
  Status error(const std::string& why) const {
    return Status::invalid_input(path_ + ": is not an .npz numpy can read: the ZIP archive " + why);
  }

  Result<size_t> find_end_of_directory() const {
    if (bytes_.size() < kEndOfDirectoryBytes) return error("is shorter than its end record");
    // The end record is last, followed by a comment of at most 64 KiB.
    const size_t lowest = bytes_.size() >= kEndOfDirectoryBytes + 0xffff
                              ? bytes_.size() - kEndOfDirectoryBytes - 0xffff
                              : 0;
    for (size_t at = bytes_.size() - kEndOfDirectoryBytes + 1; at-- > lowest;) {
      if (read_le(bytes_, at, 4) == kEndOfDirectory &&
          at + kEndOfDirectoryBytes + read_le(bytes_, at + 20, 2) == bytes_.size()) {
        return at;
      }
    }
    return error("has no end record (not a ZIP file)");
  }

  Status read_zip64_end(size_t end, uint64_t* count, uint64_t* directory_bytes,
                        uint64_t* directory_offset) const {
    if (end < 20 || read_le(bytes_, end - 20, 4) != kZip64Locator) {
      return error("has ZIP64 sizes but no ZIP64 locator");
    }
    const uint64_t record = read_le(bytes_, end - 20 + 8, 8);
    if (record > bytes_.size() || bytes_.size() - record < 56 ||
        read_le(bytes_, record, 4) != kZip64EndOfDirectory) {
      return error("has a damaged ZIP64 end record");
    }
    *count = read_le(bytes_, record + 32, 8);
    *directory_bytes = read_le(bytes_, record + 40, 8);
    *directory_offset = read_le(bytes_, record + 48, 8);
    // Each entry is at least 46 bytes: a count beyond that is a lie.
    if (*count > bytes_.size() / 46) return error("claims more members than it can hold");
    return Status::ok();
  }

  // The ZIP64 extra field (id 1) holds, in order, each of the sizes and the offset
  // whose 32-bit field is 0xffffffff.
  Status read_zip64_extra(std::string_view extra, Member* member) const {
    size_t at = 0;
    while (extra.size() - at >= 4) {
      const uint64_t id = read_le(extra, at, 2);
      const size_t size = read_le(extra, at + 2, 2);
      if (extra.size() - at - 4 < size) return error("has a damaged extra field");
      if (id == 1) {
        std::string_view field = extra.substr(at + 4, size);
        size_t next = 0;
        for (uint64_t* value :
             {&member->uncompressed, &member->compressed, &member->local_offset}) {
          if (*value != 0xffffffff) continue;
          if (field.size() - next < 8) return error("has a short ZIP64 extra field");
          *value = read_le(field, next, 8);
          next += 8;
        }
      }
      at += 4 + size;
    }
    return Status::ok();
  }

  static Result<std::string> inflate_member(std::string_view stored, const Member& member,
                                            const std::string& what) {
    std::string out(member.uncompressed, '\0');
    z_stream stream{};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) {
      return Status::internal(what + ": zlib's inflateInit2 failed");
    }
    size_t in_done = 0, out_done = 0;
    int code = Z_OK;
    while (code == Z_OK) {
      // zlib counts in uInt; feed and drain at most 1 GiB at a time.
      const size_t in_chunk = std::min<size_t>(stored.size() - in_done, 1u << 30);
      const size_t out_chunk = std::min<size_t>(out.size() - out_done, 1u << 30);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stored.data() + in_done));
      stream.avail_in = static_cast<uInt>(in_chunk);
      stream.next_out = reinterpret_cast<Bytef*>(out.data() + out_done);
      stream.avail_out = static_cast<uInt>(out_chunk);
      code = inflate(&stream, Z_NO_FLUSH);
      in_done += in_chunk - stream.avail_in;
      out_done += out_chunk - stream.avail_out;
      if (code == Z_OK && stream.avail_in == in_chunk && stream.avail_out == out_chunk) {
        code = Z_BUF_ERROR;  // no progress: the input ended early or the output is full
      }
    }
    inflateEnd(&stream);
    if (code != Z_STREAM_END || out_done != out.size() || in_done != stored.size()) {
      return Status::invalid_input(what + ": its deflated data does not inflate to the " +
                                   std::to_string(member.uncompressed) +
                                   " bytes its directory entry declares");
    }
    return out;
  }

  std::string_view bytes_;
  std::string path_;
};

// A member name: "x.npy" is the array "x".
std::optional<std::string> array_name(const std::string& member) {
  if (member.size() <= 4 || member.compare(member.size() - 4, 4, ".npy") != 0) return std::nullopt;
  return member.substr(0, member.size() - 4);
}

// The .npy header text for `tensor`, padded with spaces and a newline so the data
// starts at a multiple of 64 bytes.
std::string npy_file(const std::string& descr, const ir::Tensor& tensor) {
  // Python's tuple text: (), (5,), (2, 3).
  std::string shape = "(";
  for (size_t i = 0; i < tensor.dims.size(); ++i) {
    shape += (i ? ", " : "") + std::to_string(tensor.dims[i]);
  }
  shape += tensor.dims.size() == 1 ? ",)" : ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const bool wide = header.size() + 11 > 0xffff;  // version 2.0: a 4-byte length
  const size_t prefix = wide ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out.push_back(wide ? 2 : 1);
  out.push_back(0);
  put_le(out, header.size(), wide ? 4 : 2);
  out += header;
  out += tensor.bytes;
  return out;
}

}  // namespace

Result<ir::Tensor> parse_npy(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6)) {
    return Status::invalid_input(what + ": is not an .npy (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) {
    return Status::invalid_input(what + ": .npy version " + std::to_string(major) +
                                 " is not 1, 2 or 3");
  }
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_bytes) return Status::invalid_input(what + ": is truncated");
  const uint64_t header_bytes = read_le(bytes, 8, length_bytes);
  const size_t data = 8 + length_bytes + header_bytes;
  if (header_bytes > bytes.size() - 8 - length_bytes) {
    return Status::invalid_input(what + ": its header runs past the end");
  }
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  HeaderParser parser(bytes.substr(8 + length_bytes, header_bytes), what);
  STITCH_RETURN_IF_ERROR(parser.parse(&descr, &fortran_order, &shape));
  STITCH_ASSIGN_OR_RETURN(ir::DType dtype, dtype_of_descr(descr, what));
  int64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && elements > std::numeric_limits<int64_t>::max() / dim) {
      return Status::invalid_input(what + ": its shape's element count overflows");
    }
    elements *= dim;
  }
  if (fortran_order && shape.size() > 1 && elements > 1) {
    return Status::invalid_input(what +
                                 ": the array is in Fortran order; save it C-contiguous "
                                 "(np.ascontiguousarray(a))");
  }
  const uint64_t expected = static_cast<uint64_t>(elements) * ir::dtype_size(dtype);
  if (elements > std::numeric_limits<int64_t>::max() / ir::dtype_size(dtype) ||
      bytes.size() - data != expected) {
    return Status::invalid_input(what + ": its shape " + ir::dims_text(shape) + " of " +
                                 std::string(ir::dtype_name(dtype)) + " needs " +
                                 std::to_string(expected) + " bytes, the file holds " +
                                 std::to_string(bytes.size() - data));
  }
  ir::Tensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(shape);
  tensor.bytes.assign(bytes.substr(data));
  if (dtype == ir::DType::kBool) {
    for (char& byte : tensor.bytes) {
      if (byte != 0 && byte != 1) {
        return Status::invalid_input(what + ": a bool element is neither 0 nor 1");
      }
    }
  }
  return tensor;
}

Result<NamedTensors> parse_npz(std::string_view bytes, const std::string& path) {
  Archive archive(bytes, path);
  STITCH_ASSIGN_OR_RETURN(std::vector<Member> members, archive.members());
  NamedTensors tensors;
  std::set<std::string> names;
  uint64_t budget = kMaxNpzBytes;
  for (const Member& member : members) {
    const std::string what = archive.member_name(member);
    std::optional<std::string> name = array_name(member.name);
    if (!name) {
      return Status::invalid_input(what +
                                   ": is not an .npy array (numpy.savez names each "
                                   "<name>.npy)");
    }
    if (!names.insert(*name).second) {
      return Status::invalid_input(what + ": a second array named " + support::quote(*name));
    }
    STITCH_ASSIGN_OR_RETURN(std::string contents, archive.contents(member, &budget));
    STITCH_ASSIGN_OR_RETURN(ir::Tensor tensor, parse_npy(contents, what));
    tensors.emplace_back(std::move(*name), std::move(tensor));
  }
  return tensors;
}

Result<NamedTensors> read_npz(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string bytes,
                          support::read_regular_file(path, kMaxNpzBytes, ".npz file"));
  return parse_npz(bytes, path.string());
}

Result<std::string> render_npz(const NamedTensors& tensors) {
  std::string out, directory;
  for (const auto& [name, tensor] : tensors) {
    const std::string descr = descr_of(tensor.dtype);
    if (descr.empty()) {
      return Status::invalid_input("output " + support::quote(name) + " is " +
                                   std::string(ir::dtype_onnx_name(tensor.dtype)) +
                                   ", which an .npy cannot hold");
    }
    const std::string member = name + ".npy";
    const std::string npy = npy_file(descr, tensor);
    const uint32_t crc = crc32_of(npy);
    const uint64_t offset = out.size();
    if (npy.size() >= 0xffffffffu || offset >= 0xffffffffu || member.size() > 0xffff) {
      return Status::invalid_input(
          "the outputs need an .npz over 4 GiB, which stitchopt does "
          "not write; save fewer outputs");
    }
    put_le(out, kLocalHeader, 4);
    put_entry(out, crc, npy.size(), member.size());
    out += member;
    out += npy;
    put_le(directory, kCentralHeader, 4);
    put_le(directory, 20, 2);  // made by: version 2.0
    put_entry(directory, crc, npy.size(), member.size());
    put_le(directory, 0, 6);  // comment length, disk, internal attributes
    put_le(directory, 0, 4);  // external attributes
    put_le(directory, offset, 4);
    directory += member;
  }
  if (tensors.size() >= 0xffff || out.size() + directory.size() >= 0xffffffffu) {
    return Status::invalid_input(
        "the outputs need an .npz over 4 GiB or 65535 arrays, which "
        "stitchopt does not write; save fewer outputs");
  }
  const uint64_t directory_offset = out.size();
  out += directory;
  put_le(out, kEndOfDirectory, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, tensors.size(), 2);
  put_le(out, tensors.size(), 2);
  put_le(out, directory.size(), 4);
  put_le(out, directory_offset, 4);
  put_le(out, 0, 2);
  return out;
}

Status write_npz(const std::filesystem::path& path, const NamedTensors& tensors) {
  STITCH_ASSIGN_OR_RETURN(std::string bytes, render_npz(tensors));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return Status::invalid_input(path.string() + ": cannot write the .npz");
  return Status::ok();
}

}  // namespace stitch::runtime
