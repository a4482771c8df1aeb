// The watch of an MPI world (native/src/mpi.cc): every rank keeps one TCP connection to every
// other rank, beside MPI, and sends a one-byte heartbeat on each a few times a second from a
// native thread of its own (so a rank whose JavaScript is busy still beats). A rank learns at
// once that a peer is gone when its connection closes (the kernel closes a dead process's
// sockets, on any host), and within `silence` seconds when its heartbeats stop (its host or
// its network link went down, or the process is stopped). A rank that fails says so first
// ('f' + why), one that finishes says goodbye ('b' + how many collectives it took part in).
//
// Frames, after a 16-byte hello each way ("TSPW", the job's nonce, the sender's rank):
//   'h'                      heartbeat
//   'f' u16 length, text     the sender is failing (why); it will not join another collective
//   'b' u32 collectives      the sender leaves the world cleanly after that many collectives
// A peer whose watch cannot be reached (a firewall) is only unwatched, never declared lost.
// Where it listens: see Listen (the addresses Open MPI's TCP traffic is limited to, a port of
// TSPTO_MPI_WATCH_PORTS); a rank whose watch cannot listen fails init on every rank.
#ifndef TSPTO_NATIVE_MPI_WATCH_H
#define TSPTO_NATIVE_MPI_WATCH_H

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tspto {

// The most addresses a watch listens on and publishes.
constexpr size_t kMaxWatchAddrs = 8;

// How to reach one rank's watch.
struct WatchEndpoint {
  uint16_t port = 0;             // 0: that rank has no watch
  std::vector<uint32_t> addrs;   // IPv4, network byte order, in the order to try
};

struct WatchLoss {
  int rank = -1;
  std::string why;  // "its process exited", "no heartbeat from it for 3.0 s ...", "it failed: ..."
};

class Watch {
 public:
  Watch() = default;
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  ~Watch();  // closes the listening sockets of a watch that was never started

  // Opens the listening sockets, on the addresses Open MPI's TCP traffic is limited to
  // (OMPI_MCA_btl_tcp_if_include, else OMPI_MCA_oob_tcp_if_include: interface names or IPv4
  // CIDRs; at most kMaxWatchAddrs), one socket each, else on every interface; on an ephemeral
  // port, or on the first port of TSPTO_MPI_WATCH_PORTS="min-max" that listens on every one of
  // them: a port whose bind() or listen() fails (another process, or another rank of this host,
  // has it) is passed over for the next one. Returns "" or why it could not listen (then this
  // rank has no watch: the caller fails).
  // `test_taken` (tests only, the watchTest binding): on each of the first `test_taken`
  // candidate ports, another socket binds the same address and port after this one did and
  // listens before it, as another rank of this host can (kept open until this watch closes).
  std::string Listen(int test_taken = 0);
  uint16_t port() const { return port_; }
  // True when the watch listens on every interface (no include list).
  bool listens_any() const { return !listen_fds_.empty() && listen_addrs_.empty(); }

  // This host's IPv4 addresses for peers, at most `max`: those the watch listens on, else (it
  // listens on every interface) every non-loopback one not in OMPI_MCA_btl_tcp_if_exclude.
  std::vector<uint32_t> Addresses(size_t max) const;

  // Starts the thread: connects to the peers above `rank`, accepts those below. `peers[r]` for
  // every rank (this one's ignored); `silence_s` 0 turns the heartbeat rule off.
  void Start(int rank, uint64_t nonce, std::vector<WatchEndpoint> peers, double silence_s);
  bool started() const { return started_; }

  // Waits until every watched peer is connected or `timeout_s` passed; returns those that are not.
  std::vector<int> WaitConnected(double timeout_s);

  // Peers lost so far, in the order found.
  bool HasLoss() const { return has_loss_.load(std::memory_order_acquire); }
  std::vector<WatchLoss> Losses();

  // The first peer that said goodbye after fewer than `collective` collectives (so it will
  // never join collective number `collective`), or -1; `*left_after` is its count.
  int LeftBefore(uint32_t collective, uint32_t* left_after);

  // Tells every peer this rank is failing (once; from any thread, written at once).
  void SayFailing(const std::string& why);
  // Tells every peer goodbye after `collectives` collectives, then stops the thread (a watch
  // never started only closes its listening sockets).
  void SayBye(uint32_t collectives);

 private:
  struct Slot;
  void Run();
  void WriteAll(const std::string& frame);  // mu_ held

  void CloseListening();

  std::vector<int> listen_fds_;
  std::vector<uint32_t> listen_addrs_;  // network order; empty: every interface
  std::vector<int> test_taken_fds_;  // Listen's test_taken sockets
  uint16_t port_ = 0;
  int wake_[2] = {-1, -1};
  bool started_ = false;
  int rank_ = 0;
  uint64_t nonce_ = 0;
  double silence_s_ = 0;
  std::vector<WatchEndpoint> peers_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> has_loss_{false};
  std::mutex mu_;  // slots_, losses_, left_, failing_said_
  std::vector<Slot*> slots_;
  std::vector<WatchLoss> losses_;
  std::vector<int64_t> left_;  // per rank: collectives at goodbye, -1 = not left
  bool failing_said_ = false;
};

}  // namespace tspto

#endif  // TSPTO_NATIVE_MPI_WATCH_H
