// What every FlashCore CUDA kernel receives: the caller's FlashFwdParams plus what the plan derived
// (launch shape, split-KV workspace). Plain struct, passed by value as a __grid_constant__.
#pragma once

#include "backends/cuda/flash_fwd.h"

namespace flashcore::cuda::detail {

constexpr int kWarpRows = 16;   // query rows of one m16 accumulator tile (one warp's rows in most kernels)
constexpr int kMaxSplits = 8;   // split-KV pieces per query block (the merge keeps them in registers)

struct KernelArgs {
  FlashFwdParams p;
  float scale_log2;     // scale · log2(e): softmax runs in exp2
  int q_heads_per_kv;   // heads_q / heads_kv (GQA)
  int block_m;          // query rows per block
  int key_split_warps;  // G: warps per row warp, each on its own share of the key tiles (sm80 16-row kernel)
  int n_mblocks;        // ceil(seqlen_q / block_m)
  int stages;           // K/V ring depth
  int tiles_per_split;  // split-KV piece size in tiles (huge = no split)
  int max_splits;       // decode kernel: key splits of a (batch, kv head, row block) (1 = no split)
  int split_combine;    // decode kernel: 1 = its pieces are merged by the combine kernel (decode/combine.cuh)
  int work_slots;       // decode kernel: > 0 = the balanced schedule, this many blocks per wave (decode/schedule.cuh)
  int work_waves;       // its waves: 0 = one or two as the lengths need, else forced
  int work_fit;         // its one-wave fit: 0 = the schedule's rule, 1 = always, -1 = never
  int pair_groups;      // Hopper (persistent): groups of (batch, head) pairs of the schedule (common/work_list.h)
  int tail_items;       // Hopper: the last items run as tail_splits pieces each (common/tail_split.cuh; 0: none)
  int tail_splits;
  int tail_first;       // the first of them: items - tail_items
  int work_total;       // work indices: tail_first + tail_items · tail_splits (these two are parameters, not
                        // computed in the kernel: the Hopper producer's 24 registers hold no more)
  int tail_tiles, tail_extra;  // a piece's key tiles: key tiles / tail_splits, one more for the first tail_extra
  float* part_o;        // [split][batch][heads_q][seqlen_q][D] fp32 (split-KV scratch; decode: decode/config.cuh)
  float* part_lse;      // [split][batch][heads_q][seqlen_q]   log2 domain
  int* part_map;        // decode, the balanced schedule with the combine kernel: [batch][heads_kv][n_mblocks] x 2 ints,
                        // the item's first block and piece count, written by its first block (decode/combine.cuh)
  int* counters;        // [batch][heads_q][n_mblocks] tickets, zero between launches (decode: [batch][heads_kv][n_mblocks])
  int paged_gather;     // Hopper with paged K/V: 1 = V tiles gathered by the producer warpgroup's cp.async (small pages), 0 = TMA boxes
  int o_tma;            // Hopper: 1 = O stored by TMA (HopperMaps::o), 0 = by the consumer warps' 16-byte stores
};

}  // namespace flashcore::cuda::detail
