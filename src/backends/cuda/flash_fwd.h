// FlashCore: fused attention forward, O = softmax(Q·Kᵀ·scale + mask)·V, on NVIDIA tensor cores.
//
// Plain C++ interface (no Kokkos) of the tuned CUDA kernels, in two steps (cudnn-frontend style):
//   flash_fwd_plan()  checks the problem once, for one device, and decides everything a launch needs:
//                     the kernel, its launch shape, the split-KV workspace, the Hopper TMA descriptors;
//   flash_fwd_run()   launches a plan, with no further checks or choices.
// flash_fwd() does both. Folder map: README.md beside this file.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

namespace flashcore::cuda {

// Development/tuning override of the launch table (plan.cu, kLaunchTable). 0 = use the table.
struct FlashFwdLaunchOverride {
  int block_m = 0;             // query rows per block: 16 x (row warps), one of {16, 32, 64, 128}
  int key_split_warps = 0;     // compute warps per row warp, each on every key_split_warps-th key tile (1..8)
  int stages = 0;              // K/V shared-memory ring depth, 2..4
  int kv_tiles_per_split = 0;  // split-KV: 64-key tiles per split; -1 = never split
  int splits = 0;              // decode kernel: key splits per (batch, kv head, row block), 1..kMaxDecodeCombineSplits
                               // (with sequence arrays too: the fixed grid instead of the balanced schedule)
  int work_waves = 0;          // decode kernel with sequence arrays: waves of blocks the balanced schedule fills, 1..8
                               // (0: one, or two when the pieces of one do not fit in it)
  int work_fit = 0;            // decode kernel, the balanced schedule: 1 = one wave of the same piece count for every
                               // (b, kv head, row block) whatever the lengths, where the items fit one wave and
                               // work_waves is 0; -1 = never (0: where one wave's pieces overflow it and the lengths
                               // are near equal, decode/schedule.cuh)
  int combine = 0;             // decode kernel: 1 = split pieces merged by the combine kernel whatever their count
                               // (the fixed grid; 0: the plan's choice, FlashFwdPlan::split_combine)
  int split_cluster = 0;       // decode kernel, the fixed grid: -1 = pieces merged by tickets (or the combine kernel)
                               // where the plan would make them a thread block cluster (0: the plan's choice,
                               // FlashFwdPlan::split_cluster)
  int paged_copies = 0;        // Hopper kernel with paged K/V: 1 = TMA boxes, 2 = K in TMA boxes and V gathered by
                               // the producer warpgroup's cp.async (0: the plan's choice, FlashFwdPlan::paged_gather)
  int o_stores = 0;            // Hopper kernel: 1 = O by the consumer warps' 16-byte stores, 2 = by TMA where the plan
                               // can (0: the plan's choice, FlashFwdPlan::o_tma)
  int hopper_wgs = 0;          // Hopper kernel, its D = 64 instance (head_dim 40..64, 16-bit): consumer warpgroups, 2 or
                               // 3 (0: the plan's choice, sm90/plan_sm90.cu hopper_instance); 3 is built without pages and
                               // variants. A plan on another instance, or without 3 where 3 is asked, is declined
};

struct FlashFwdParams {
  const void* q; const void* k; const void* v; void* o;
  float* lse;                 // nullable; fp32, contiguous [batch][heads_q][seqlen_q] ([heads_q][total_q] with cu_seqlens_q)
  int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
  long long q_batch_stride, q_seq_stride, q_head_stride;   // element strides; dim stride is 1
  long long k_batch_stride, k_seq_stride, k_head_stride;
  long long v_batch_stride, v_seq_stride, v_head_stride;
  long long o_batch_stride, o_seq_stride, o_head_stride;
  float scale;                // already resolved (e.g. 1/sqrt(head_dim))
  bool causal;                // bottom-right aligned: query i sees key j iff j <= i + seqlen_k - seqlen_q
  bool bf16;                  // false: fp16 (with fp8: O's type)
  // FP8 (e4m3) Q, K, V (flashcore.hpp, DType::E4M3): stored values stand for descale_q·q, descale_k·k,
  // descale_v·v; O is bf16 or fp16 (bf16 above). Only the Hopper kernel reads them (fixed-length
  // layouts, no variants); it transposes V into a per-call workspace first (sm90/fp8.cuh).
  bool fp8 = false;
  float descale_q = 1.f, descale_k = 1.f, descale_v = 1.f;
  // Variants (flashcore.hpp): sliding window (-1 = unbounded side), soft-capping (0 = none), and
  // per-head ALiBi slopes and sink logits (heads_q device floats, or nullptr).
  int window_left = -1, window_right = -1;
  float softcap = 0.f;
  const float* alibi_slopes = nullptr;
  const float* sinks = nullptr;
  // Sequences (flashcore.hpp, "Sequences"): device int32 arrays or nullptr; with any of them seqlen_q
  // and seqlen_k are upper bounds of the per-sequence lengths. cu_seqlens_q: Q and O packed (rows
  // cu[b] .., batch strides unused), LSE (heads_q, total_q). cu_seqlens_k: K and V packed (total_k
  // rows: the Hopper kernel's TMA maps span them). seqlens_k: keys per sequence (cache lengths).
  // block_table (batch x pages_per_seq): K and V are pools of num_pages pages of page_size rows, the
  // batch strides step between pages (the entries are the registry's to check; num_pages sizes the
  // Hopper kernel's TMA maps of the pools). core/sequences.hpp (numeric::Sequences) says where each
  // row is. Every kernel reads them except block_table, which the decode and Hopper kernels read.
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_k = nullptr;
  const int* seqlens_k = nullptr;
  const int* block_table = nullptr;
  int total_q = 0, total_k = 0;
  int page_size = 0, pages_per_seq = 0, num_pages = 0;
  // Optional: nullptr = launch table. For development and tuning only. With an override, Auto never
  // picks the Hopper kernel (but for paged prefill, which only it runs), nor the decode kernel for problems
  // without sequence arrays; the Hopper kernel itself has a fixed shape and takes only paged_copies and o_stores. The
  // decode kernel takes block_m (16, 32, 64), stages (2..8) and splits.
  const FlashFwdLaunchOverride* launch_override = nullptr;
};

// AllWarps: every warp loads its share of each K/V tile (cp.async) and computes.
// WarpSpecialized: one producer warp fills the K/V ring, the consumer warps only compute.
// Hopper: the TMA + wgmma kernel (sm90/), compute capability 9.0 only, built when sm_90 is among the
// CUDA architectures; Q, K, V strides must be positive multiples of 16 bytes (TMA).
// Decode: the split-KV decode kernel (decode/): all query heads of a KV head packed into the MMA rows,
// seqlen_q <= 64; every sequence layout, and the one kernel that reads paged K/V. The other kernels
// run varlen Q and K/V and cache lengths (varlen prefill).
// Auto: the launch table's choice (measured, see perf/dev/NOTES.md), the Hopper and decode kernels included.
enum class FlashVariant { Auto, AllWarps, WarpSpecialized, Hopper, Decode };

// The kernels a plan can launch (folders: sm80/ for the mma.sync family, sm90/ for Hopper).
enum class FlashKernel {
  Rows16,                 // sm80/flash_fwd_rows16.cuh, all warps load
  Rows16WarpSpecialized,  // the same kernel with a producer warp
  Wide,                   // sm80/flash_fwd_wide.cuh, 32 rows per warp
  Hopper,                 // sm90/flash_fwd_sm90.cuh, TMA + wgmma
  Decode,                 // decode/flash_decode.cuh, GQA-packed rows, split-KV over the keys
};
// "sm80-rows16", "sm80-rows16-warpspec", "sm80-wide", "sm90-tma-wgmma", "decode-splitkv"
const char* to_string(FlashKernel kernel);

// What the kernels need to know of a device. device_limits() fills it from the library's device
// cache (src/platform); tests make one up to ask about devices they do not have.
struct DeviceLimits {
  int index = -1;                 // CUDA device index (-1: hypothetical device)
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 132;
  size_t smem_optin_per_block = 0;
  bool hopper_kernel_loads = false;  // the sm_90a image of the Hopper kernel loads on this device
};
// Whether this build's decode kernel has a compute capability 9.0 image, so that a plan may merge its pieces
// through a thread block cluster (FlashFwdPlan::split_cluster).
bool decode_cluster_merge_built();
// The current device; false (and *why) when there is none.
bool device_limits(DeviceLimits* out, std::string* why);

// Everything one call decided. Valid for the params and device it was made for; FlashFwdParams
// pointers may not change between plan and run when the kernel is Hopper (the TMA descriptors hold them).
struct FlashFwdPlan {
  FlashKernel kernel = FlashKernel::Rows16;
  int device = -1;
  int block_m = 64;            // query rows per block (Decode: packed (query, head) rows of one KV head)
  int key_split_warps = 1;     // Rows16*, Decode: warps sharing a row block's key tiles
  int stages = 2;              // K/V ring depth
  int n_mblocks = 1;           // query blocks per (batch, head) (Decode: row blocks per (batch, kv head))
  int tiles_per_split = 1 << 30;  // split-KV piece size in 64-key tiles; 1 << 30 = no split (not Decode)
  int max_splits = 1;          // pieces of the longest query block (Decode: of every (batch, kv head, row block))
  bool split_combine = false;  // Decode: pieces merged by the combine kernel (decode/combine.cuh), not by their last
                               // block: more than kMaxDecodeSplits pieces, or launch_override.combine
  bool combine_when_captured = false;  // Decode: a captured call merges by the combine kernel too (flash_fwd_run; splits
                                       // of up to 16 packed rows a KV head, on the fixed grid, or on the balanced
                                       // schedule with at most 4 packed rows an SM in all), without tickets
  int split_cluster = 0;       // Decode, the fixed grid on compute capability 9.0: the pieces of a (b, kv head, row
                               // block) (max_splits of them) launched as one thread block cluster and merged by piece
                               // 0 from its peers' shared memory (decode/merge.cuh): no tickets, workspace or combine
                               // kernel. 0: tickets or the combine kernel
  bool dependent_launch = false;  // Decode: the combine kernel launched as a programmatic dependent launch
                                  // (compute capability 9.0+; common/dependent_launch.cuh)
  // Decode with sequence arrays: the balanced schedule (decode/schedule.cuh). work_slots: blocks of one
  // wave (0: the fixed grid); work_waves: 0 = one or two waves as the lengths need, else forced;
  // work_fit: the one-wave fit (launch_override.work_fit: 0 the schedule's rule, 1 always, -1 never);
  // work_blocks: the grid, an upper bound of the work items (blocks past the last return at once).
  // Hopper: the persistent grid (at most one block per SM), work_blocks blocks walking the work items
  // in pair_groups groups of (batch, head) pairs (common/work_list.h); item_tickets: with more items
  // than blocks, the blocks draw them from a counter (flash_fwd_run; the static order where there is none).
  int work_slots = 0, work_waves = 0, work_blocks = 0, work_fit = 0;
  int pair_groups = 1;
  bool item_tickets = false;
  bool static_when_captured = false;  // Hopper: equal items in few key tiles a block; a captured launch takes
                                      // them in the static order, without tickets (flash_fwd_run)
  // Hopper: the schedule's last, partial round split along the keys (common/tail_split.cuh): the last
  // tail_items items run as tail_splits pieces each, merged by the last piece (sm90/plan_sm90.cu, hopper_schedule);
  // its scratch: split_counter_bytes, split_partial_bytes, split_lse_offset. A piece's key tiles: tail_tiles,
  // one more for the first tail_extra pieces (every item has the same tiles).
  int tail_items = 0, tail_splits = 1;
  int tail_tiles = 0, tail_extra = 0;
  int threads = 0;             // per block
  size_t smem = 0;             // dynamic shared memory per block
  size_t split_counter_bytes = 0, split_partial_bytes = 0;  // split-KV workspace (0 without): tickets, partials
  size_t split_lse_offset = 0;  // where the LSE partials start in the partials buffer (after the O partials)
  size_t split_map_offset = 0;  // Decode, the balanced schedule merged by the combine kernel (a captured call): where
                                // each (b, kv head, row block)'s first block and piece count start (after the LSEs)
  alignas(128) unsigned char tensor_maps[4 * 128] = {};     // Hopper: CUtensorMap of Q, K, V (FP8: Q, K; Vᵀ's per run), O (o_tma)
  // Hopper with FP8 inputs: Vᵀ's keys per row (seqlen_k rounded up to 32) and its workspace, allocated by
  // flash_fwd_run on the stream (cudaMallocAsync) and released there after the kernels.
  int fp8_keys_pad = 0;
  size_t fp8_vt_bytes = 0;
  // Hopper: the instance that runs (hopper_instance; sm90/config.h): its compiled head dim and consumer
  // warpgroups (64 query rows each).
  int hopper_dim = 0;
  int hopper_wgs = 0;
  // Hopper with paged K/V in pages of fewer than kHopperGatherPageRows rows (sm90/config.h): the V tiles gathered by
  // the producer warpgroup's cp.async instead of TMA boxes (K stays in boxes).
  bool paged_gather = false;
  // Hopper: O written by TMA stores of the staged rows (tensor_maps' fourth map; sm90/tensor_maps.cpp says where),
  // else by the consumer warps' 16-byte stores.
  bool o_tma = false;
  // Hopper: the Q, K, V and O the plan's maps were made for (V: none with FP8, whose Vᵀ map is made per run; O
  // whether or not it has a map). flash_fwd_run declines a run of the plan with other Q, K or V (a plan reused)
  // instead of reading the old ones; a run into another O stores it by the warps (the map writes the plan's O).
  const void* map_inputs[4] = {};
  // e.g. "sm80-rows16 block_m=64 key_split_warps=2 stages=2 splits=3"
  std::string describe() const;
};

// "" and *plan filled when `variant` can run p on `dev`, else why not (naming the field and value).
// Checks every limit of the kernels once (head dim, grid limits, alignment, strides, shared memory,
// the Hopper kernel's TMA layout); nothing is checked again at run time.
std::string flash_fwd_plan(const FlashFwdParams& p, const DeviceLimits& dev, FlashVariant variant,
                           FlashFwdPlan* plan);

// The Hopper instance that runs p on dev (FlashFwdPlan::hopper_dim, hopper_wgs): the compiled head dim
// next up from head_dim with its consumer warpgroups (3 at D = 32, else 2), and two exceptions by shape
// (sm90/plan_sm90.cu): Auto runs D <= 32 on the D = 64 instance where the D = 32 one's 192-row blocks would be fewer
// than the SMs; D = 64 runs on its three-warpgroup instance where that was measured faster. FP8: the FP8
// instance's (128, 2).
struct HopperInstance {
  int dim = 0;  // compiled head dim
  int wgs = 0;  // consumer warpgroups
};
HopperInstance hopper_instance(const FlashFwdParams& p, const DeviceLimits& dev, FlashVariant variant);
// Whether the plan asks for O by TMA stores on instance `in` (sm90/plan_sm90.cu): the D = 64 instances with 16-bit
// inputs can, and take them on causal problems and on the two-warpgroup instance (not the three-warpgroup
// one without causal masking: run 48g), or as launch_override.o_stores forces. O's map decides the rest
// (sm90/tensor_maps.cpp): packed queries or a layout TMA cannot write keep the warps' stores.
bool hopper_o_tma_wanted(const FlashFwdParams& p, const HopperInstance& in);

// The Hopper kernel's persistent schedule of p on dev (sm90/plan_sm90.cu): work_blocks, item_tickets, pair_groups,
// and the tail split (tail_items, tail_splits, its scratch bytes), from plan->n_mblocks, block_m and hopper_dim.
void hopper_schedule(const FlashFwdParams& p, const DeviceLimits& dev, FlashFwdPlan* plan);

// Launches a plan on `stream` (asynchronous); returns the launch status.
//
// Tickets and split-KV partials (launch_scratch.h): an eager launch uses a buffer cached per (device,
// stream) for the process lifetime; a launch captured into a CUDA graph gets a buffer the graph
// allocates, zeroes and frees, so graphs captured on one stream may be replayed at once on others
// (two captured launches take no tickets, with the eager call's bits: a decode split on the fixed grid,
// whose pieces the combine kernel merges; the Hopper kernel on equal items in few tiles a block without a
// tail split, in the static order). Where neither can be had, the launch runs without (the static order; un-split): correct, maybe slower.
cudaError_t flash_fwd_run(const FlashFwdParams& p, const FlashFwdPlan& plan, cudaStream_t stream);

// Plan for the current device, then run. cudaErrorInvalidValue when the problem is not supported.
cudaError_t flash_fwd(const FlashFwdParams& p, cudaStream_t stream, FlashVariant variant = FlashVariant::Auto);

// flash_fwd_plan's answer for a device of this compute capability and opt-in shared memory per block
// ("" = supported). For variant Hopper on compute capability 9.0 it asks whether the kernel image
// loads on the current device.
std::string flash_fwd_unsupported_reason(const FlashFwdParams& p, int cc_major, int cc_minor,
                                         size_t smem_optin_per_block, FlashVariant variant = FlashVariant::Auto);

}  // namespace flashcore::cuda
