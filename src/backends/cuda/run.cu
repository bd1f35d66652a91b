// The launch of a forward plan (flash_fwd_run): the kernel's arguments from the plan, the tickets and
// split-KV partials of the stream (or of a captured launch), and the kernel family's launch function
// (kernels.h). Also the launch helpers every family shares: the shared-memory limit raised once per
// kernel and device, and whether a kernel may use dependent launches.
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "backends/cuda/common/kernel_args.h"
#include "backends/cuda/flash_fwd.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/launch_scratch.h"

namespace flashcore::cuda {

namespace detail {
cudaError_t raise_smem_limit(const void* kernel, int device, size_t bytes) {
  static std::mutex m;
  static std::map<std::pair<const void*, int>, size_t> raised;
  std::lock_guard<std::mutex> lock(m);
  size_t& cur = raised[{kernel, device}];
  if (bytes > cur) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess) return e;
    cur = bytes;
  }
  return cudaSuccess;
}

bool dependent_launch_loads(const void* kernel, int device) {
#if CUDART_VERSION >= 12030
  static const bool driver_ok = [] {
    int v = 0;
    return cudaDriverGetVersion(&v) == cudaSuccess && v >= 12030;  // no device work: nothing to clear
  }();
  if (!driver_ok) return false;
  static std::mutex m;
  static std::map<std::pair<const void*, int>, bool> known;
  std::lock_guard<std::mutex> lock(m);
  const auto it = known.find({kernel, device});
  if (it != known.end()) return it->second;
  cudaFuncAttributes fa{};
  const cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
  if (e != cudaSuccess) cudaGetLastError();  // its own error only (an ordinary launch follows)
  const bool ok = e == cudaSuccess && fa.ptxVersion >= 90;
  known[{kernel, device}] = ok;
  return ok;
#else
  (void)kernel, (void)device;
  return false;
#endif
}

#ifndef FLASHCORE_HAVE_HOPPER_KERNELS  // the Hopper kernel is not in this build: nothing to load or launch
bool sm90_kernel_loads(int) { return false; }
cudaError_t launch_sm90(const FlashFwdPlan&, const KernelArgs&, cudaStream_t) { return cudaErrorInvalidDeviceFunction; }
#endif
}  // namespace detail

cudaError_t flash_fwd_run(const FlashFwdParams& p, const FlashFwdPlan& plan, cudaStream_t stream) {
  // The Hopper kernel reads Q, K and V through the plan's maps: a plan reused with other inputs is an error,
  // not a read of the old ones (the output may differ: O's map below).
  if (plan.kernel == FlashKernel::Hopper && (p.q != plan.map_inputs[0] || p.k != plan.map_inputs[1] ||
                                             (!p.fp8 && p.v != plan.map_inputs[2])))
    return cudaErrorInvalidValue;
  detail::KernelArgs args{};
  args.p = p;
  args.p.launch_override = nullptr;
  args.scale_log2 = p.scale * (p.fp8 ? p.descale_q * p.descale_k : 1.f) * 1.4426950408889634f;
  args.q_heads_per_kv = p.heads_q / p.heads_kv;
  args.block_m = plan.block_m;
  args.key_split_warps = plan.key_split_warps;
  args.n_mblocks = plan.n_mblocks;
  args.stages = plan.stages;
  args.tiles_per_split = plan.tiles_per_split;
  args.max_splits = plan.max_splits;
  args.split_combine = plan.split_combine ? 1 : 0;
  args.work_slots = plan.work_slots;
  args.work_waves = plan.work_waves;
  args.work_fit = plan.work_fit;
  args.pair_groups = plan.pair_groups;
  args.tail_items = plan.tail_items;
  args.tail_splits = plan.tail_splits;
  const int n_items = p.batch * p.heads_q * plan.n_mblocks;  // the Hopper kernel's work items
  args.tail_first = n_items - args.tail_items;
  args.work_total = args.tail_first + args.tail_items * plan.tail_splits;
  args.tail_tiles = plan.tail_tiles;
  args.paged_gather = plan.kernel == FlashKernel::Hopper && plan.paged_gather ? 1 : 0;
  // O's map holds the output the plan was made for: a run into another (a plan reused) stores by the warps.
  args.o_tma = plan.kernel == FlashKernel::Hopper && plan.o_tma && p.o == plan.map_inputs[3] ? 1 : 0;
  args.tail_extra = plan.tail_extra;
  auto launch = [&](const FlashFwdPlan& pl) {
    switch (pl.kernel) {
      case FlashKernel::Hopper: return detail::launch_sm90(pl, args, stream);
      case FlashKernel::Decode: return detail::launch_decode(pl, args, stream);
      default: return detail::launch_sm80(pl, args, stream);
    }
  };
  // Tickets and split-KV partials (launch_scratch.h): the stream's buffer for an eager launch, a buffer
  // of its own for a captured one, so graphs captured on one stream may be replayed at once. The Hopper
  // kernel's tickets are 2 ints (a captured graph's three extra nodes cost 2.4-3.4 µs a replay on an
  // H100, run 63m; the memset node 1.6-1.9 µs of it on an H200, run 43a), followed by the tail split's
  // counters and partials where the plan has one.
  const bool hopper = plan.kernel == FlashKernel::Hopper;
  if (hopper ? !plan.item_tickets : plan.max_splits <= 1 || plan.split_cluster) return launch(plan);
  const bool captured = (plan.combine_when_captured || plan.static_when_captured) && detail::stream_capturing(stream);
  // A captured decode split of few rows (plan.combine_when_captured: on the fixed grid, or on the balanced schedule
  // where the call's rows fit one wave of the combine kernel, which then finds the pieces in args.part_map) is merged
  // by the combine kernel, which needs no tickets, so the graph gets no memset node (1.6-1.9 us a replay on an H200;
  // the second kernel 0.3-0.5 us; run 43a, perf/dev/NOTES.md, forty-third session). Its merge is the last
  // block's, operation for operation (decode/combine.cuh): a captured call gives the eager call's bits.
  size_t counter_bytes = plan.split_counter_bytes;
  if (plan.combine_when_captured && captured) args.split_combine = 1, counter_bytes = 0;
  const bool tail = hopper && plan.tail_items > 0;
  // A captured Hopper launch of equal items in few tiles a block, without a tail split, takes them in the
  // static order (plan.static_when_captured; no tickets, so no allocation, memset and free nodes; the same
  // items computed the same way, the same bits): H200, graph-timed, (4,16,1024,64) 49.2 -> 47.3 us,
  // (16,16,512,64) 57.7 -> 56.3 (run 43f). Causal items keep the tickets: in the static order (4,16,2048,64)
  // ran 104 -> 116 us, (8,16,1024,128) 94 -> 102 (run 43e).
  if (hopper && !tail && plan.static_when_captured && captured) return launch(plan);
  detail::LaunchScratch scratch;
  const cudaError_t had = detail::acquire_launch_scratch(
      plan.device, stream, hopper && !tail ? 2 * sizeof(int) : counter_bytes, hopper && !tail ? 0 : plan.split_partial_bytes, &scratch);
  if (had != cudaSuccess) return had;  // the stream's earlier error: nothing launched
  if (!scratch.have()) {
    args.tail_items = 0, args.tail_first = args.work_total = n_items;  // no scratch: no tail split either
    if (hopper) return launch(plan);  // no tickets: the static order
    FlashFwdPlan unsplit = plan;      // no partials: un-split
    unsplit.max_splits = args.max_splits = 1;
    unsplit.split_combine = false, args.split_combine = 0;
    unsplit.work_slots = args.work_slots = 0;
    unsplit.tiles_per_split = args.tiles_per_split = 1 << 30;
    return launch(unsplit);
  }
  args.counters = scratch.counters;
  if (!hopper || tail) {
    args.part_o = reinterpret_cast<float*>(scratch.partial);
    args.part_lse = reinterpret_cast<float*>(scratch.partial + plan.split_lse_offset);
    if (plan.split_map_offset) args.part_map = reinterpret_cast<int*>(scratch.partial + plan.split_map_offset);
  }
  const cudaError_t e = launch(plan);
  const cudaError_t f = detail::release_launch_scratch(scratch, stream);
  return e != cudaSuccess ? e : f;
}

cudaError_t flash_fwd(const FlashFwdParams& p, cudaStream_t stream, FlashVariant variant) {
  DeviceLimits dev;
  if (!device_limits(&dev, nullptr)) return cudaErrorInvalidDevice;
  FlashFwdPlan plan;
  if (!flash_fwd_plan(p, dev, variant, &plan).empty()) return cudaErrorInvalidValue;
  return flash_fwd_run(p, plan, stream);
}

}  // namespace flashcore::cuda
