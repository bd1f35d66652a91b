// The README C++ example as a program: B=2, 16 query heads over 4 KV heads (GQA), 100 rows, D=128, bf16, causal.
#include <flashcore/flashcore.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <vector>

int main() {
  flashcore::initialize();
  auto p = flashcore::Problem::make(/*batch*/ 2, /*heads_q*/ 16, /*heads_kv*/ 4, /*seqlen_q*/ 100, /*seqlen_k*/ 100,
                                    /*head_dim*/ 128, flashcore::DType::BF16, /*causal*/ true);
  // bf16 bit patterns of small values (1.0 = 0x3f80, 0.5 = 0x3f00, ...), never zeros
  std::vector<std::uint16_t> q(2 * 100 * 16 * 128), k(2 * 100 * 4 * 128), v(k.size()), o(q.size(), 0xffff);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = 0x3c00 + (i * 7919) % 0x300;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = 0x3c00 + (i * 104729) % 0x300, v[i] = 0x3f00 + (i % 0x7f);
  std::vector<float> lse(2 * 16 * 100);
  flashcore::Tensors t{q.data(), k.data(), v.data(), o.data(), lse.data()};
  const flashcore::Report r = flashcore::run(p, t);
  std::cout << r.to_string() << "\n";
  for (std::uint16_t x : o)
    if (x == 0xffff) return 1;  // unwritten
  for (float x : lse)
    if (!std::isfinite(x)) return 2;
  flashcore::finalize();
  std::printf("consumer_cpp: ok\n");
  return 0;
}
