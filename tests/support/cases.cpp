#include "support/cases.hpp"

namespace fctest {

using flashcore::DType;
using KvStore = Case::KvStore;

std::vector<Case> acceptance_set() {
  std::vector<Case> out;
  const int shapes[][4] = {{1, 8, 512, 64}, {1, 8, 128, 64}, {2, 4, 256, 64}, {1, 8, 1024, 64}, {4, 8, 64, 128}};
  for (auto& s : shapes)
    for (bool causal : {false, true}) {
      Case c;
      c.batch = s[0];
      c.heads_q = c.heads_kv = s[1];
      c.seqlen_q = c.seqlen_k = s[2];
      c.head_dim = s[3];
      c.dtype = DType::F16;
      c.causal = causal;
      out.push_back(c);
    }
  return out;
}

std::vector<Case> corner_set() {
  std::vector<Case> out;
  for (bool causal : {false, true}) {
    out.push_back(make_case(1, 2, 2, 1, 1, 64, DType::F16, causal));      // L = 1
    out.push_back(make_case(1, 2, 2, 1, 300, 64, DType::F16, causal));    // one query row, many keys
    out.push_back(make_case(1, 2, 2, 300, 1, 64, DType::F16, causal));    // one key: causal masks all but the last row
    out.push_back(make_case(2, 3, 3, 77, 77, 64, DType::F16, causal));    // odd length
    out.push_back(make_case(1, 2, 2, 113, 203, 64, DType::F16, causal));  // Lq < Lk
    out.push_back(make_case(1, 2, 2, 203, 113, 64, DType::F16, causal));  // Lq > Lk: fully masked rows
    out.push_back(make_case(1, 8, 1, 65, 97, 64, DType::F16, causal));    // MQA
    out.push_back(make_case(2, 8, 2, 64, 64, 64, DType::BF16, causal));   // GQA 4:1
    out.push_back(make_case(1, 16, 2, 50, 70, 64, DType::F16, causal));   // GQA 8:1
    for (int d : {1, 8, 32, 80, 96, 128, 256}) out.push_back(make_case(1, 2, 1, 33, 45, d, DType::F16, causal));
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      out.push_back(make_case(2, 4, 2, 70, 70, 64, dt, causal, Layout::BSHD));
      out.push_back(make_case(2, 4, 2, 70, 90, 64, dt, causal, Layout::BHSD));
      out.push_back(make_case(2, 4, 4, 31, 29, 48, dt, causal, Layout::Padded));
    }
    out.push_back(make_case(1, 2, 2, 40, 300, 64, DType::F32, causal));  // more keys than one chunk
  }
  return out;
}

Case with_variants(Case c, int window_left, int window_right, double softcap, bool alibi, bool sinks) {
  c.window_left = window_left, c.window_right = window_right, c.softcap = softcap, c.alibi = alibi, c.sinks = sinks;
  return c;
}

std::vector<Case> variant_set() {
  std::vector<Case> out;
  for (bool causal : {false, true}) {
    const Case sq = make_case(2, 4, 2, 77, 77, 64, DType::F16, causal);   // GQA 2:1, odd length
    const Case lq = make_case(1, 4, 1, 203, 113, 32, DType::BF16, causal);  // Lq > Lk: rows above the diagonal
    const Case lk = make_case(1, 2, 2, 40, 300, 48, DType::F32, causal);  // Lq < Lk, several chunks of keys
    for (const Case& base : {sq, lq, lk}) {
      out.push_back(with_variants(base, 16, causal ? -1 : 16));  // local band
      out.push_back(with_variants(base, 0, 0));                  // the diagonal key only
      out.push_back(with_variants(base, 130, -1));               // left bound only
      if (!causal) out.push_back(with_variants(base, -1, 5));    // right bound only
      out.push_back(with_variants(base, -1, -1, 5.0));           // soft-capping
      out.push_back(with_variants(base, -1, -1, 0, true));       // ALiBi
      out.push_back(with_variants(base, -1, -1, 0, false, true));  // sinks
      out.push_back(with_variants(base, 9, causal ? -1 : 2, 30.0, true, true));  // all of them
    }
    // Layouts and head dims.
    out.push_back(with_variants(make_case(2, 4, 2, 31, 29, 80, DType::F16, causal, Layout::Padded), 7, -1, 10.0, true, true));
    out.push_back(with_variants(make_case(1, 2, 1, 33, 45, 1, DType::F32, causal, Layout::BHSD), 3, causal ? 0 : 4, 0, true));
    out.push_back(with_variants(make_case(1, 2, 1, 33, 45, 256, DType::BF16, causal), 20, -1, 0, false, true));
  }
  return out;
}

std::vector<Case> sequence_set() {
  std::vector<Case> out;
  for (bool causal : {false, true}) {
    // varlen Q and K/V, packed: empty sequences (Lq 0; Lk 0 with queries: O = 0, LSE = -inf), Lq > Lk
    out.push_back(sequence_case(4, 2, 64, DType::F16, causal, {5, 0, 17, 1, 3}, {9, 4, 11, 0, 40}, KvStore::Packed));
    // varlen Q against a KV cache of capacity 130 with per-sequence lengths (length-1 and empty caches)
    out.push_back(sequence_case(4, 1, 32, DType::BF16, causal, {1, 3, 2, 4}, {100, 1, 0, 77}, KvStore::Batched, 0, 1, 30));
    // decode: one query per sequence against cache lengths, GQA 8:2
    out.push_back(sequence_case(8, 2, 128, DType::F16, causal, {}, {1, 64, 200, 129}, KvStore::Batched, 0, 1, 56));
    // several queries per sequence (speculative decode), fixed Lq 4
    out.push_back(sequence_case(4, 2, 64, DType::F32, causal, {}, {3, 4, 90}, KvStore::Batched, 0, 4, 10));
    // paged: pages of 16 with partly filled last pages and a length-1 cache
    out.push_back(sequence_case(4, 2, 64, DType::F16, causal, {}, {1, 16, 17, 50}, KvStore::Paged, 16));
    // paged pages of 32 with varlen Q (an empty one)
    out.push_back(sequence_case(2, 1, 48, DType::BF16, causal, {4, 1, 0, 7}, {33, 64, 5, 70}, KvStore::Paged, 32));
    // paged pages of 64, more keys than a page
    out.push_back(sequence_case(6, 3, 96, DType::F16, causal, {}, {130, 64, 0}, KvStore::Paged, 64, 2));
    // every sequence at the bound (no seqlens_k): the last page partly filled
    out.push_back(sequence_case(2, 2, 16, DType::F32, causal, {2, 5}, {}, KvStore::Paged, 16, 1, 0));
  }
  // Layouts: head-major (B,H,S,D)-like packed tensors and padded strides, packed and paged.
  out.push_back(sequence_case(4, 2, 40, DType::F16, true, {6, 0, 9}, {6, 3, 20}, KvStore::Packed, 0, 1, 0, Layout::BHSD));
  out.push_back(sequence_case(4, 2, 40, DType::F16, false, {6, 2, 9}, {30, 3, 20}, KvStore::Paged, 16, 1, 0, Layout::Padded));
  out.push_back(sequence_case(2, 1, 1, DType::F32, true, {3, 8}, {8, 2}, KvStore::Batched, 0, 1, 5, Layout::Padded));
  // With the variants: each sequence's diagonal.
  Case v = sequence_case(4, 2, 64, DType::F16, true, {5, 2, 12}, {40, 7, 12}, KvStore::Packed);
  v.window_left = 6, v.softcap = 20, v.alibi = true, v.sinks = true;
  out.push_back(v);
  Case w = sequence_case(4, 4, 32, DType::BF16, false, {}, {1, 33, 80}, KvStore::Paged, 16, 3);
  w.window_left = 10, w.window_right = 2, w.alibi = true;
  out.push_back(w);
  return out;
}

Case random_sequences(std::mt19937_64& rng, int max_len) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int batch = pick(1, 5);
  const bool varlen_q = pick(0, 1);
  std::vector<int> lq, lk;
  for (int b = 0; b < batch; ++b) {
    if (varlen_q) lq.push_back(pick(0, 3) == 0 ? 0 : pick(1, max_len / 4));
    lk.push_back(pick(0, 5) == 0 ? pick(0, 1) : pick(1, max_len));
  }
  const KvStore kv = static_cast<KvStore>(pick(0, 2));
  const int page = 16 << pick(0, 2);
  const int hkv = pick(1, 2);
  Case c = sequence_case(hkv * pick(1, 4), hkv, std::vector<int>{8, 32, 64, 128}[pick(0, 3)],
                    static_cast<DType>(pick(0, 2)), pick(0, 1) == 1, lq, lk, kv, page, pick(1, 8), pick(0, 9),
                    static_cast<Layout>(pick(0, 2)));
  return fctest::with_random_variants(c, rng);
}

}  // namespace fctest
