// The NCCL communicator (nccl_communicator): the application's ncclComm_t, send/recv grouped on a
// stream of its own so that the transfer of step s+1's K/V overlaps step s's attention. Ordering:
// shift_begin makes the communication stream wait for the caller's stream (the buffers are ready
// and the previous step is done reading the receive buffer); shift_end makes the caller's stream
// wait for the transfer.
#include <string>

#include "flashcore/context_parallel.hpp"

#if defined(FLASHCORE_HAVE_NCCL)
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace flashcore {

#if defined(FLASHCORE_HAVE_NCCL)
namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error("communicator", std::string("nccl communicator: ") + what + ": " + cudaGetErrorString(e));
}
void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error("communicator", std::string("nccl communicator: ") + what + ": " + ncclGetErrorString(r));
}

class NcclRing final : public Communicator {
 public:
  explicit NcclRing(ncclComm_t comm) : comm_(comm) {
    nccl_check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    nccl_check(ncclCommCount(comm_, &size_), "ncclCommCount");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the communication stream");
    cuda_check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "creating an event");
    cuda_check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "creating an event");
  }
  ~NcclRing() override {
    cudaStreamSynchronize(stream_);
    cudaEventDestroy(ready_);
    cudaEventDestroy(done_);
    cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool device_memory() const override { return true; }
  const char* name() const override { return "nccl"; }

  void shift_begin(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, void* stream) override {
    cuda_check(cudaEventRecord(ready_, static_cast<cudaStream_t>(stream)), "recording the compute stream");
    cuda_check(cudaStreamWaitEvent(stream_, ready_, 0), "ordering the communication stream");
    const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    if (send_bytes > 0) nccl_check(ncclSend(send, send_bytes, ncclChar, right, comm_, stream_), "ncclSend");
    if (recv_bytes > 0) nccl_check(ncclRecv(recv, recv_bytes, ncclChar, left, comm_, stream_), "ncclRecv");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    cuda_check(cudaEventRecord(done_, stream_), "recording the transfer");
  }
  void shift_end(void* stream) override {
    cuda_check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), done_, 0), "waiting for the transfer");
  }

 private:
  ncclComm_t comm_;
  int rank_ = 0, size_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> nccl_communicator(ncclComm* comm) {
  if (comm == nullptr) throw Error("communicator", "nccl_communicator: comm is null");
  return std::make_unique<NcclRing>(comm);
}
bool has_nccl() { return true; }

#else

std::unique_ptr<Communicator> nccl_communicator(ncclComm*) {
  throw Error("communicator", "nccl_communicator: this FlashCore was built without NCCL (nccl.h and libnccl were not found)");
}
bool has_nccl() { return false; }

#endif

}  // namespace flashcore
