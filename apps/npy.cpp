#include "npy.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace fcapp {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw NpyError(path + ": " + what); }

// Parser of the header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  void parse(NpyArray* out) {
    bool have_descr = false, have_order = false, have_shape = false;
    ws();
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = string_literal();
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (peek() == '[') bad("structured dtypes (a list as 'descr') are not supported");
        out->descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        out->fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        out->shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "' in the header");
      }
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      expect('}');
      break;
    }
    ws();
    if (i_ != s_.size()) bad("unexpected text after the header dictionary");
    if (!have_descr) bad("the header has no 'descr'");
    if (!have_order) bad("the header has no 'fortran_order'");
    if (!have_shape) bad("the header has no 'shape'");
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(path_, "bad .npy header: " + what); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) {
      std::string got = i_ < s_.size() ? std::string("'") + s_[i_] + "'" : std::string("the end of the header");
      bad(std::string("expected '") + c + "' at offset " + std::to_string(i_) + ", found " + got);
    }
    ++i_;
  }
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string at offset " + std::to_string(i_));
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') bad("escape sequences in header strings are not supported");
      out += s_[i_++];
    }
    if (i_ >= s_.size()) bad("unterminated string");
    ++i_;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    bad("'fortran_order' must be True or False");
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> dims;
    for (;;) {
      ws();
      if (peek() == ')') {
        ++i_;
        break;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("shape entries must be non-negative integers");
      std::int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int digit = s_[i_++] - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - digit) / 10) bad("shape entry too large");
        v = v * 10 + digit;
      }
      if (peek() == 'L') ++i_;  // Python 2 long suffix
      dims.push_back(v);
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      expect(')');
      break;
    }
    return dims;
  }

  std::string path_;
  const std::string& s_;
  std::size_t i_ = 0;
};

void check_descr(const std::string& path, const std::string& descr) {
  if (descr.size() < 3) fail(path, "unsupported dtype descriptor '" + descr + "'");
  const char order = descr[0];
  if (order == '>') fail(path, "big-endian data ('" + descr + "') is not supported; save it little-endian");
  if (order != '<' && order != '|' && order != '=')
    fail(path, "unsupported dtype descriptor '" + descr + "'");
  for (std::size_t i = 2; i < descr.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(descr[i])))
      fail(path, "unsupported dtype descriptor '" + descr + "'");
}

}  // namespace

std::int64_t NpyArray::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

int npy_itemsize(const std::string& descr) {
  if (descr.size() < 3 || descr.size() > 6) return 0;
  int v = 0;
  for (std::size_t i = 2; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i]))) return 0;
    v = v * 10 + (descr[i] - '0');
  }
  return v;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open for reading: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff file_size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (file_size < 0) fail(path, "cannot determine the file size");

  unsigned char pre[kMagicLen + 2];
  if (file_size < static_cast<std::streamoff>(sizeof pre) || !in.read(reinterpret_cast<char*>(pre), sizeof pre))
    fail(path, "not a .npy file (too short for the magic string and version: " + std::to_string(file_size) +
                   " bytes)");
  if (std::memcmp(pre, kMagic, kMagicLen) != 0) fail(path, "not a .npy file (the magic string \\x93NUMPY is missing)");
  const int major = pre[kMagicLen], minor = pre[kMagicLen + 1];
  if (major < 1 || major > 3 || minor != 0)
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (1.0, 2.0 and 3.0 are supported)");
  std::uint64_t header_len = 0;
  std::streamoff prefix = sizeof pre;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated .npy header (no header length)");
    header_len = b[0] | (b[1] << 8);
    prefix += 2;
  } else {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated .npy header (no header length)");
    header_len = b[0] | (b[1] << 8) | (static_cast<std::uint64_t>(b[2]) << 16) | (static_cast<std::uint64_t>(b[3]) << 24);
    prefix += 4;
  }
  if (header_len > (1u << 24)) fail(path, "bad .npy header: length " + std::to_string(header_len) + " is implausible");
  if (static_cast<std::uint64_t>(file_size - prefix) < header_len)
    fail(path, "truncated .npy header: it announces " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(file_size - prefix) + " after the prefix");
  std::string header(header_len, '\0');
  if (header_len > 0 && !in.read(&header[0], static_cast<std::streamsize>(header_len)))
    fail(path, "cannot read the .npy header");
  for (char c : header)
    if (c == '\0' || (static_cast<unsigned char>(c) >= 0x80 && major < 3))
      fail(path, "bad .npy header: it contains non-ASCII bytes");

  NpyArray a;
  HeaderParser(path, header).parse(&a);
  check_descr(path, a.descr);
  const int itemsize = npy_itemsize(a.descr);
  if (itemsize <= 0) fail(path, "unsupported dtype descriptor '" + a.descr + "'");

  // Element count with overflow checks, then the data size against the file size.
  std::uint64_t n = 1;
  for (std::int64_t d : a.shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / 2 / static_cast<std::uint64_t>(d) / itemsize)
      fail(path, "shape " + shape_string(a.shape) + " is too large");
    n *= static_cast<std::uint64_t>(d);
  }
  const std::uint64_t want = n * itemsize;
  const std::uint64_t have = static_cast<std::uint64_t>(file_size - prefix - static_cast<std::streamoff>(header_len));
  if (have < want)
    fail(path, "truncated data: shape " + shape_string(a.shape) + " of '" + a.descr + "' needs " + std::to_string(want) +
                   " bytes, the file holds " + std::to_string(have));
  if (have > want)
    fail(path, "unexpected " + std::to_string(have - want) + " trailing bytes after the data of shape " +
                   shape_string(a.shape));
  a.data.resize(want);
  if (want > 0 && !in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(want)))
    fail(path, "cannot read the data");
  return a;
}

void write_npy(const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
               const void* data, std::size_t bytes) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes; the header ends with \n.
  auto padded = [&](std::size_t prefix) {
    std::string h = dict;
    const std::size_t total = prefix + h.size() + 1;
    h.append((64 - total % 64) % 64, ' ');
    h += '\n';
    return h;
  };
  std::string header = padded(kMagicLen + 2 + 2);
  int major = 1;
  if (header.size() > 65535) {
    major = 2;
    header = padded(kMagicLen + 2 + 4);
  }
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major == 2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (bytes > 0) f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  f.close();
  if (!f) fail(path, "write failed");
}

}  // namespace fcapp
