// The case sets every forward backend on host data is checked with against the fp64 oracle
// (test_reference.cpp, test_variants.cpp, test_sequences.cpp: the reference; test_portable.cpp:
// the portable tier), written once.
#pragma once

#include <random>
#include <vector>

#include "support/testing.hpp"

namespace fctest {

/// fp16 shapes of the issues' acceptance criteria, causal and not.
std::vector<Case> acceptance_set();
/// Lengths 1 and odd, Lq < Lk and Lq > Lk (fully masked rows), MQA and GQA, head dims 1..256,
/// every dtype in every layout.
std::vector<Case> corner_set();
/// The case with a window (left, right; -1 = unbounded), soft-capping, ALiBi, sinks.
Case with_variants(Case c, int window_left, int window_right, double softcap = 0, bool alibi = false,
                   bool sinks = false);
/// Each variant alone and all together on three shapes, causal and not, and on layouts and head dims.
std::vector<Case> variant_set();
/// Sequences of different lengths: varlen Q and K/V (empty sequences), KV caches, decode, paged
/// K/V of pages 16, 32, 64, layouts, variants on each sequence's diagonal.
std::vector<Case> sequence_set();
/// A random case of sequences: 1-5 sequences with lengths 0..max_len (some empty), random storage,
/// random variants.
Case random_sequences(std::mt19937_64& rng, int max_len);

}  // namespace fctest
