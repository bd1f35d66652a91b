// Test data on host buffers (part of the verification library, src/verify): random inputs in
// logical order and NaN-poisoned outputs, for the tests and the flashcore tool.
#pragma once

#include <cstdint>
#include <limits>

#include "flashcore/flashcore.hpp"
#include "verify/elements.hpp"

namespace flashcore::verify {

/// Fills the elements of a (batch, seq, heads, head_dim) tensor of dtype dt with strides s by
/// calling draw() in logical (b, s, h, d) order, so that a seed gives the same values in every
/// layout. Values are rounded to dt and never zero: a draw that rounds to zero is replaced by the
/// next one. Gaps between rows and heads are left as they are. (E4M3: rounded to e4m3, saturating at
/// +-448; the problem's descales are not applied here.)
template <class Draw>
void fill_random(DType dt, void* buf, const Strides& s, int batch, int seq, int heads, int head_dim, Draw&& draw) {
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq; ++i)
      for (int h = 0; h < heads; ++h)
        for (int d = 0; d < head_dim; ++d) {
          double x = draw();
          while (round_to(dt, x) == 0.0) x = draw();
          store_element(dt, buf, element_offset(s, b, i, h, d), x);
        }
}

/// Writes NaN into every element of a (batch, seq, heads, head_dim) tensor, so that an element a
/// backend does not write fails any comparison. Gaps between rows and heads are left as they are.
/// (For O pass Problem::o_dtype(): fp16 or bf16 with fp8 inputs.)
inline void poison(DType dt, void* buf, const Strides& s, int batch, int seq, int heads, int head_dim) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq; ++i)
      for (int h = 0; h < heads; ++h)
        for (int d = 0; d < head_dim; ++d) store_element(dt, buf, element_offset(s, b, i, h, d), nan);
}

}  // namespace flashcore::verify
