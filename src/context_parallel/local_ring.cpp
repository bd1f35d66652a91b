// A ring of threads in one process (local_ring): host memory, the same protocol as NCCL's
// send/recv. Rank r publishes its send buffer in shift_begin; in shift_end it copies its left
// neighbour's published buffer into its own receive buffer, then waits until its right neighbour
// has copied r's buffer (so that the caller may overwrite it afterwards). Every rank publishes
// before it waits: no cycle of waits.
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "flashcore/context_parallel.hpp"

namespace flashcore {
namespace {

struct Slot {
  const void* send = nullptr;
  std::size_t bytes = 0;
  long published = 0;  // shifts published
  long consumed = 0;   // shifts the right neighbour has copied
};

struct RingState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Slot> slots;
};

class LocalRing final : public Communicator {
 public:
  LocalRing(std::shared_ptr<RingState> s, int rank, int size) : s_(std::move(s)), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool device_memory() const override { return false; }
  const char* name() const override { return "local-threads"; }

  void shift_begin(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, void*) override {
    if (pending_) throw Error("communicator", "local_ring: shift_begin while a shift is in flight");
    std::lock_guard<std::mutex> lock(s_->mu);
    Slot& me = s_->slots[rank_];
    me.send = send;
    me.bytes = send_bytes;
    ++me.published;
    recv_ = recv;
    recv_bytes_ = recv_bytes;
    pending_ = true;
    s_->cv.notify_all();
  }

  void shift_end(void*) override {
    if (!pending_) throw Error("communicator", "local_ring: shift_end without shift_begin");
    pending_ = false;
    ++shifts_;
    const int left = (rank_ + size_ - 1) % size_;
    std::unique_lock<std::mutex> lock(s_->mu);
    Slot& l = s_->slots[left];
    s_->cv.wait(lock, [&] { return l.published >= shifts_; });
    const std::size_t sent = l.bytes;
    if (sent == recv_bytes_ && sent > 0) std::memcpy(recv_, l.send, sent);
    l.consumed = shifts_;  // also on a mismatch: the neighbour does not wait forever
    s_->cv.notify_all();
    Slot& me = s_->slots[rank_];
    s_->cv.wait(lock, [&] { return me.consumed >= shifts_; });
    if (sent != recv_bytes_)
      throw Error("communicator", "local_ring: rank " + std::to_string(rank_) + " expects " + std::to_string(recv_bytes_) +
                                      " bytes, rank " + std::to_string(left) + " sends " + std::to_string(sent));
  }

 private:
  std::shared_ptr<RingState> s_;
  int rank_, size_;
  void* recv_ = nullptr;
  std::size_t recv_bytes_ = 0;
  bool pending_ = false;
  long shifts_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> local_ring(int size) {
  if (size <= 0) throw Error("ranks", "local_ring: size = " + std::to_string(size) + ": a ring needs at least one rank");
  auto state = std::make_shared<RingState>();
  state->slots.resize(size);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<LocalRing>(state, r, size));
  return out;
}

}  // namespace flashcore
