// Minimal reader and writer of NumPy .npy files (format versions 1.0, 2.0 and 3.0), enough for
// the flashcore tool: little-endian numeric arrays in C order.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fcapp {

/// A malformed or unsupported file; what() names the file and says what is wrong.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NpyArray {
  std::string descr;  // e.g. "<f4", "<f2", "<u2"
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;  // raw element bytes, exactly elements() * itemsize

  std::int64_t elements() const;
};

/// Size in bytes of one element of a descriptor such as "<f4" (the digits after the type code).
int npy_itemsize(const std::string& descr);

/// Reads a whole .npy file. Checks the magic, version, header syntax, descriptor (little-endian
/// or byte-order-free), shape and that the data size matches the shape exactly (truncated files
/// and trailing bytes are errors). Fortran order is reported, not rejected: callers decide.
NpyArray read_npy(const std::string& path);

/// Writes a C-order array (format 1.0, or 2.0 when the header needs it). data must hold
/// product(shape) * itemsize(descr) bytes.
void write_npy(const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
               const void* data, std::size_t bytes);

/// "(1, 512, 8, 64)" as NumPy prints shapes.
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace fcapp
