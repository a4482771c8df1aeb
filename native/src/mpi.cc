// MPI for the distributed runtime (src/distributed), on Open MPI's libmpi loaded at run time.
//
// Nothing here links against MPI: libmpi is dlopen'd (RTLD_NOW | RTLD_GLOBAL, because Open
// MPI's own plugins resolve libmpi's symbols globally) on first use, so the addon builds and
// loads on machines without MPI and only a distributed run needs it. Open MPI's handles
// (MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler) are pointers to global objects of libmpi
// (`ompi_mpi_comm_world`, `ompi_mpi_float`, `ompi_mpi_op_sum`, ...), which dlsym finds; MPICH's
// are integers, so another MPI is recognised and refused with a clear message.
//
// Threads. Every MPI call runs on one native thread, the MPI thread, which also called
// MPI_Init_thread (MPI_THREAD_FUNNELED is all it needs). The JS thread hands it one call at a
// time and waits; while it waits it watches the world:
//  - a peer rank on this host whose process is gone (pids and hosts are exchanged at init) is
//    reported at once as lost ("MPI rank 1 (pid 123 on host a) was lost during allReduce");
//  - the watch (mpi_watch.h: a TCP connection to every peer with heartbeats, on a thread of its
//    own) reports a peer on any host whose process exited, that said it is failing, or whose
//    heartbeats stopped (host or link down), and a peer that left the world cleanly before
//    the collective this rank waits in;
//  - SIGTERM while waiting (mpirun tears the job down when one rank dies) triggers the same
//    scans before the process goes, so the surviving ranks say which rank was lost;
//  - a timeout (setTimeout; JS gives 300 s unless told otherwise) ends a wait that never completes.
//
// Agreement. A collective may carry a check: a 64-bit hash of what this rank asked for (the
// collective, its number, shape, dtype, op, root). Before the data moves, one MPI_Allreduce
// (MAX) of [h, ~h] gives every rank [max h, ~min h]: all equal to its own exactly when every
// rank passed the same hash. Otherwise no data moves and every rank gets TSPTO_MPI_DISAGREE
// (the world stays usable; JS then exchanges the descriptions to say who differs).
// After a peer is lost the world is broken: the MPI thread may be stuck inside libmpi for
// good, so it is detached and every later call fails at once with the same message, and
// MPI_Finalize is skipped at exit.
//
// Buffers: a host ArrayBufferView, or [Device, address]: a device range resolved through the
// device arena's allocation records (DeviceCore::Resolve), so MPI reads and writes device
// memory in place and a freed or out-of-range address is refused before MPI sees it.
#include "mpi.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "errors.h"
#include "mpi_watch.h"

namespace tspto {
namespace {

using Handle = void*;

constexpr int kThreadFunneled = 1;  // MPI_THREAD_FUNNELED (the same in every MPI)
constexpr const char* kInstallHint =
    "install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev; "
    "Fedora: dnf install openmpi openmpi-devel) and start the program with mpirun, "
    "or set TSPTO_LIBMPI to the path of Open MPI's libmpi.so";

// Datatype codes of the JS side (src/distributed/mpi.ts) and Open MPI's globals.
const char* const kTypeSymbols[] = {"ompi_mpi_byte",    "ompi_mpi_float",   "ompi_mpi_int8_t",
                                    "ompi_mpi_int16_t", "ompi_mpi_int32_t", "ompi_mpi_int64_t",
                                    "ompi_mpi_uint8_t", "ompi_mpi_uint16_t", "ompi_mpi_double"};
const int kTypeBytes[] = {1, 4, 1, 2, 4, 8, 1, 2, 8};
constexpr int kNumTypes = 9;
const char* const kOpSymbols[] = {"ompi_mpi_op_sum", "ompi_mpi_op_max", "ompi_mpi_op_min",
                                  "ompi_mpi_op_prod"};
constexpr int kNumOps = 4;

struct Api {
  int (*Init_thread)(int*, char***, int, int*);
  int (*Finalize)();
  int (*Abort)(Handle, int);
  int (*Comm_rank)(Handle, int*);
  int (*Comm_size)(Handle, int*);
  int (*Comm_set_errhandler)(Handle, Handle);
  int (*Error_string)(int, char*, int*);
  int (*Allreduce)(const void*, void*, int, Handle, Handle, Handle);
  int (*Bcast)(void*, int, Handle, int, Handle);
  int (*Allgather)(const void*, int, Handle, void*, int, Handle, Handle);
  int (*Reduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle);
  int (*Allgatherv)(const void*, int, Handle, void*, const int*, const int*, Handle, Handle);
  int (*Reduce_scatter)(const void*, void*, const int*, Handle, Handle, Handle);
  int (*Barrier)(Handle);
  int (*Get_library_version)(char*, int*);
  Handle comm_world, errors_return, in_place;
  Handle types[kNumTypes];
  Handle ops[kNumOps];
};

enum class State { kUnloaded, kLoaded, kInitialized, kFinalized, kBroken };

struct Peer {
  int pid = 0;
  std::string host;
};

// Process-wide (MPI is process-wide); used from the thread that loaded the addon first.
struct World {
  std::mutex mu;
  State state = State::kUnloaded;
  std::string load_error;  // when loading failed
  std::string broken;      // why the world is broken
  const char* broken_code = "TSPTO_MPI_PEER_LOST";
  std::string library;     // the path that loaded
  Api api{};
  int rank = 0, size = 1;
  std::vector<Peer> peers;
  std::string my_host;
  double timeout_s = 0;  // 0 = wait forever
  bool skip_finalize = false;
  Watch watch;
  uint32_t last_collective = 0;  // the number of the last collective JS passed (for the goodbye)

  // The MPI thread and its one-slot job queue.
  std::thread thread;
  std::mutex job_mu;
  std::condition_variable job_cv;
  std::function<int()> job;  // returns an MPI error code
  bool job_pending = false, job_done = false;
  int job_rc = 0;
};

World& W() {
  static World* w = new World();  // never destroyed: a detached MPI thread may still use it
  return *w;
}

class MpiError : public DeviceError {
 public:
  MpiError(const std::string& message, const char* code, int lost_rank = -1)
      : DeviceError(message, code), lost_rank_(lost_rank) {}
  int lost_rank() const { return lost_rank_; }

 private:
  int lost_rank_;
};

constexpr const char* kCodeMissing = "TSPTO_MPI_MISSING";
constexpr const char* kCodePeerLost = "TSPTO_MPI_PEER_LOST";
constexpr const char* kCodeMpi = "TSPTO_MPI_ERROR";
constexpr const char* kCodeTimeout = "TSPTO_MPI_TIMEOUT";
constexpr const char* kCodeState = "TSPTO_MPI_STATE";
constexpr const char* kCodeDisagree = "TSPTO_MPI_DISAGREE";
constexpr const char* kCodeLeft = "TSPTO_MPI_LEFT";
constexpr const char* kCodeWatch = "TSPTO_MPI_WATCH";
constexpr int kTypeInt64 = 5, kOpMax = 1;  // indices into kTypeSymbols / kOpSymbols

template <typename T>
bool Sym(void* lib, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(lib, name));
  return *out != nullptr;
}

// Loads libmpi once; returns "" or why it cannot be used.
std::string LoadLocked(World& w) {
  if (w.state != State::kUnloaded) return w.load_error;
  std::vector<std::string> names;
  if (const char* env = std::getenv("TSPTO_LIBMPI"); env != nullptr && *env != '\0') {
    names.push_back(env);
  } else {
    names = {"libmpi.so.40", "libmpi.so"};
  }
  void* lib = nullptr;
  std::string tried;
  for (const auto& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lib != nullptr) {
      w.library = n;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + n + ": " + (why ? why : "not found");
  }
  w.state = State::kLoaded;
  if (lib == nullptr) {
    w.load_error = "MPI is needed for a run over several processes, but libmpi could not be loaded (" +
                   tried + "): " + kInstallHint;
    return w.load_error;
  }
  Api& a = w.api;
  if (!Sym(lib, "ompi_mpi_comm_world", &a.comm_world)) {
    w.load_error = "the MPI library '" + w.library +
                   "' is not Open MPI (no ompi_mpi_comm_world); tspto supports Open MPI 4.x: " +
                   kInstallHint;
    return w.load_error;
  }
  bool ok = Sym(lib, "MPI_Init_thread", &a.Init_thread) && Sym(lib, "MPI_Finalize", &a.Finalize) &&
            Sym(lib, "MPI_Abort", &a.Abort) && Sym(lib, "MPI_Comm_rank", &a.Comm_rank) &&
            Sym(lib, "MPI_Comm_size", &a.Comm_size) &&
            Sym(lib, "MPI_Comm_set_errhandler", &a.Comm_set_errhandler) &&
            Sym(lib, "MPI_Error_string", &a.Error_string) && Sym(lib, "MPI_Allreduce", &a.Allreduce) &&
            Sym(lib, "MPI_Bcast", &a.Bcast) && Sym(lib, "MPI_Allgather", &a.Allgather) &&
            Sym(lib, "MPI_Reduce_scatter_block", &a.Reduce_scatter_block) &&
            Sym(lib, "MPI_Allgatherv", &a.Allgatherv) && Sym(lib, "MPI_Reduce_scatter", &a.Reduce_scatter) &&
            Sym(lib, "MPI_Barrier", &a.Barrier) &&
            Sym(lib, "MPI_Get_library_version", &a.Get_library_version) &&
            Sym(lib, "ompi_mpi_errors_return", &a.errors_return);
  for (int i = 0; ok && i < kNumTypes; i++) ok = Sym(lib, kTypeSymbols[i], &a.types[i]);
  for (int i = 0; ok && i < kNumOps; i++) ok = Sym(lib, kOpSymbols[i], &a.ops[i]);
  if (!ok) {
    const char* why = dlerror();
    w.load_error = "the MPI library '" + w.library + "' lacks a symbol tspto needs (" +
                   (why ? why : "unknown") + "); tspto supports Open MPI 4.x: " + kInstallHint;
    return w.load_error;
  }
  a.in_place = reinterpret_cast<Handle>(1);  // MPI_IN_PLACE in Open MPI
  w.load_error.clear();
  return "";
}

std::string ErrorString(World& w, int rc) {
  char buf[512];
  int len = 0;
  if (w.api.Error_string != nullptr && w.api.Error_string(rc, buf, &len) == 0) {
    return std::string(buf, static_cast<size_t>(len));
  }
  return "MPI error " + std::to_string(rc);
}

// ---------------------------------------------------------------------------------------
// Watching peers while waiting

std::atomic<int> g_sigterm{0};
void OnSigterm(int) { g_sigterm.store(1); }

// True when process `pid` on this host has exited (gone, or a zombie not yet reaped).
bool ProcessGone(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

// The first peer rank on this host whose process is gone, or -1.
int LostPeer(World& w) {
  for (int r = 0; r < static_cast<int>(w.peers.size()); r++) {
    if (r == w.rank || w.peers[r].host != w.my_host) continue;
    if (ProcessGone(w.peers[r].pid)) return r;
  }
  return -1;
}

std::string RankName(World& w, int r) {
  return "rank " + std::to_string(r) + " (pid " + std::to_string(w.peers[r].pid) + " on host " + w.peers[r].host + ")";
}

std::string LostMessage(World& w, int r, const std::string& op, const std::string& why = "its process exited",
                        const std::vector<int>& also = {}) {
  std::string m = "MPI " + RankName(w, r) + " was lost during " + op + ": " + why + "; rank " +
                  std::to_string(w.rank) + " stops here instead of waiting for it";
  if (!also.empty()) {
    m += " (also lost:";
    for (size_t i = 0; i < also.size(); i++) m += (i ? ", " : " ") + RankName(w, also[i]);
    m += ")";
  }
  return m;
}

// The watch's losses as one message (the first found, then the others), or "" when none.
std::string WatchLostMessage(World& w, const std::string& op, int* first) {
  if (!w.watch.HasLoss()) return "";
  const std::vector<WatchLoss> losses = w.watch.Losses();
  std::vector<int> also;
  for (size_t i = 1; i < losses.size(); i++) also.push_back(losses[i].rank);
  *first = losses[0].rank;
  return LostMessage(w, losses[0].rank, op, losses[0].why, also);
}

// A peer that said goodbye before collective `seq` (it will never join it), as a message, or "".
std::string LeftMessage(World& w, const std::string& op, uint32_t seq) {
  if (seq == 0) return "";
  uint32_t after = 0;
  const int r = w.watch.LeftBefore(seq, &after);
  if (r < 0) return "";
  return "MPI " + RankName(w, r) + " left the job (closed its DistributedWorker) after " + std::to_string(after) +
         " collective" + (after == 1 ? "" : "s") + ", but rank " + std::to_string(w.rank) + " waits in collective #" +
         std::to_string(seq) + " (" + op + "), which it will never join: every rank must call the same collectives in the same order";
}

void MpiThreadMain(World* w) {
  for (;;) {
    std::function<int()> job;
    {
      std::unique_lock<std::mutex> lock(w->job_mu);
      w->job_cv.wait(lock, [&] { return w->job_pending; });
      job = std::move(w->job);
      w->job_pending = false;
    }
    const int rc = job();
    {
      std::lock_guard<std::mutex> lock(w->job_mu);
      w->job_rc = rc;
      w->job_done = true;
    }
    w->job_cv.notify_all();
  }
}

// Marks the world broken (the MPI thread may be stuck in libmpi for good: it is let go).
void Break(World& w, const std::string& why, const char* code) {
  w.state = State::kBroken;
  w.broken = why;
  w.broken_code = code;
  w.skip_finalize = true;
  if (w.thread.joinable()) w.thread.detach();
}

void CheckUsable(World& w, const std::string& op) {
  if (w.state == State::kInitialized) {
    // A peer found lost between collectives: this collective would wait for it.
    int first = -1;
    const std::string lost = WatchLostMessage(w, op, &first);
    if (!lost.empty()) {
      Break(w, lost, kCodePeerLost);
      throw MpiError(lost, kCodePeerLost, first);
    }
  }
  if (w.state == State::kBroken) throw MpiError(w.broken, w.broken_code);
  if (w.state == State::kFinalized) {
    throw MpiError(op + ": MPI was finalized (DistributedWorker.close()); MPI cannot be started again in this process", kCodeState);
  }
  if (w.state != State::kInitialized) throw MpiError(op + ": MPI is not initialized", kCodeState);
}

// Runs `job` on the MPI thread and waits, watching the world (see the header comment).
// `watch` is false for MPI_Init (no peers known yet); `seq` is the collective's number (0: none).
void RunOnMpiThread(World& w, const std::string& op, std::function<int()> job, bool watch = true, uint32_t seq = 0) {
  if (seq > w.last_collective) w.last_collective = seq;
  {
    std::lock_guard<std::mutex> lock(w.job_mu);
    w.job = std::move(job);
    w.job_pending = true;
    w.job_done = false;
  }
  w.job_cv.notify_all();

  struct sigaction act {}, old {};
  act.sa_handler = OnSigterm;
  sigemptyset(&act.sa_mask);
  g_sigterm.store(0);
  sigaction(SIGTERM, &act, &old);
  auto restore = [&] { sigaction(SIGTERM, &old, nullptr); };

  const auto start = std::chrono::steady_clock::now();
  auto fail_lost = [&](int r) {
    restore();
    Break(w, LostMessage(w, r, op), kCodePeerLost);
    throw MpiError(w.broken, kCodePeerLost, r);
  };
  // The watch: a peer lost on any host, or one that left before this collective.
  auto check_watch = [&] {
    int first = -1;
    std::string lost = WatchLostMessage(w, op, &first);
    if (!lost.empty()) {
      restore();
      Break(w, lost, kCodePeerLost);
      throw MpiError(lost, kCodePeerLost, first);
    }
    std::string left = LeftMessage(w, op, seq);
    if (!left.empty()) {
      restore();
      Break(w, left, kCodeLeft);
      throw MpiError(left, kCodeLeft);
    }
  };
  int rc = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(w.job_mu);
      if (w.job_cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return w.job_done; })) {
        rc = w.job_rc;
        break;
      }
    }
    if (!watch) continue;
    check_watch();  // first: a peer that said why it failed says more than its pid being gone
    if (int r = LostPeer(w); r >= 0) fail_lost(r);
    if (g_sigterm.load() != 0) {
      // mpirun tears the job down: find the rank that went (it may take a moment to exit).
      for (int i = 0; i < 25; i++) {
        check_watch();
        if (int r = LostPeer(w); r >= 0) fail_lost(r);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      restore();
      Break(w, "rank " + std::to_string(w.rank) + " was terminated (SIGTERM) during " + op +
                   ": mpirun is ending the job, most likely because a rank on another host was lost "
                   "(mpirun's own message names it)",
            kCodePeerLost);
      throw MpiError(w.broken, kCodePeerLost);
    }
    if (w.timeout_s > 0) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > w.timeout_s) {
        restore();
        std::ostringstream m;
        m << op << " did not complete within " << w.timeout_s
          << " s (TSPTO_MPI_TIMEOUT): a rank did not join it (it is stuck, or was lost where this rank cannot see it)";
        Break(w, m.str(), kCodeTimeout);
        throw MpiError(w.broken, kCodeTimeout);
      }
    }
  }
  restore();
  if (g_sigterm.load() != 0) raise(SIGTERM);  // arrived as the call completed: die as asked
  if (rc != 0) {
    // A peer's death can surface as an MPI error (its TCP connection reset) a moment before
    // the watch reports it: give the watch a moment, and name the lost rank when it does.
    if (watch) {
      for (int i = 0; i < 50; i++) {
        check_watch();
        if (int r = LostPeer(w); r >= 0) fail_lost(r);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    throw MpiError(op + " failed: " + ErrorString(w, rc), kCodeMpi);
  }
}

// The agreement check of a collective: JS's hash of what this rank asked for, and the
// collective's number. `on` false: no check (one process, or checks turned off).
struct Check {
  bool on = false;
  int64_t hash = 0;
  uint32_t seq = 0;
};

// Runs on the MPI thread before the data moves: false (and *rc 0) when the ranks disagree.
bool Agree(World& w, const Check& c, int* rc) {
  *rc = 0;
  if (!c.on) return true;
  int64_t v[2] = {c.hash, ~c.hash};
  *rc = w.api.Allreduce(w.api.in_place, v, 2, w.api.types[kTypeInt64], w.api.ops[kOpMax], w.api.comm_world);
  return *rc != 0 || (v[0] == c.hash && v[1] == ~c.hash);
}

// Runs a checked collective: the agreement, then `data` unless the ranks disagree.
void RunChecked(World& w, const std::string& op, const Check& c, std::function<int()> data) {
  bool same = true;
  RunOnMpiThread(w, op, [&] {
    int rc = 0;
    same = Agree(w, c, &rc);
    if (rc != 0 || !same) return rc;
    return data();
  }, true, c.seq);
  if (!same) {
    throw MpiError(op + " (collective #" + std::to_string(c.seq) + "): the ranks passed different arguments", kCodeDisagree);
  }
}

// ---------------------------------------------------------------------------------------
// Bindings

Napi::Error ToJs(Napi::Env env, const MpiError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", Napi::String::New(env, e.code()));
  if (e.lost_rank() >= 0) err.Set("lostRank", Napi::Number::New(env, e.lost_rank()));
  return err;
}

template <typename Body>
auto Guarded(Napi::Env env, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const MpiError& e) {
    throw ToJs(env, e);
  } catch (const DeviceError& e) {
    Napi::Error err = Napi::Error::New(env, e.what());
    if (*e.code() != '\0') err.Set("code", Napi::String::New(env, e.code()));
    throw err;
  }
}

int IntArg(const Napi::CallbackInfo& info, size_t i, const char* what, int lo, int hi) {
  Napi::Value v = info[i];
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!(d == static_cast<double>(static_cast<int64_t>(d)) && d >= lo && d <= hi)) {
    throw Napi::RangeError::New(info.Env(), std::string("mpi: ") + what + " must be an integer in [" +
                                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int>(d);
}

// A buffer argument: an ArrayBufferView or [Device, address]; at least nbytes long.
void* BufferArg(const Napi::CallbackInfo& info, size_t i, uint64_t nbytes, const char* op) {
  Napi::Env env = info.Env();
  Napi::Value v = info[i];
  if (v.IsTypedArray()) {
    auto t = v.As<Napi::TypedArray>();
    if (t.ByteLength() < nbytes) {
      throw Napi::RangeError::New(env, std::string(op) + ": host buffer has " + std::to_string(t.ByteLength()) +
                                           " bytes, " + std::to_string(nbytes) + " needed");
    }
    return static_cast<uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
  }
  if (v.IsDataView()) {
    auto t = v.As<Napi::DataView>();
    if (t.ByteLength() < nbytes) throw Napi::RangeError::New(env, std::string(op) + ": host buffer too small");
    return static_cast<uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
  }
  if (v.IsArray() && v.As<Napi::Array>().Length() == 2) {
    auto a = v.As<Napi::Array>();
    auto core = DeviceCoreOf(env, a.Get(0u), op);
    Napi::Value addr_v = a.Get(1u);
    if (!addr_v.IsBigInt()) throw Napi::TypeError::New(env, std::string(op) + ": device address must be a bigint");
    bool lossless = false;
    const uint64_t addr = addr_v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(env, std::string(op) + ": device address out of range");
    // The device stays open for the call: JS is blocked in it, and close() runs on JS.
    return Guarded(env, [&] { return core->Resolve(op, addr, nbytes); });
  }
  throw Napi::TypeError::New(env, std::string(op) + ": buffer must be an ArrayBufferView or [Device, address]");
}

// The optional trailing check of a collective binding: (hash: bigint, seq: number) at `i`.
// (null, seq): no agreement, but the collective's number still counts (for the goodbye).
Check CheckArg(const Napi::CallbackInfo& info, size_t i) {
  Check c;
  if (info.Length() > i + 1 && !info[i + 1].IsUndefined()) c.seq = static_cast<uint32_t>(IntArg(info, i + 1, "seq", 1, INT_MAX));
  if (info.Length() <= i || info[i].IsUndefined() || info[i].IsNull()) return c;
  if (!info[i].IsBigInt()) throw Napi::TypeError::New(info.Env(), "mpi: check must be a bigint");
  bool lossless = false;
  c.hash = info[i].As<Napi::BigInt>().Int64Value(&lossless);
  if (!lossless) throw Napi::RangeError::New(info.Env(), "mpi: check must fit in 64 bits (signed)");
  if (c.seq == 0) throw Napi::TypeError::New(info.Env(), "mpi: a check needs its collective's number (seq >= 1)");
  c.on = true;
  return c;
}

// An Int32Array of one count per rank (MPI's counts and displacements), checked >= 0.
std::vector<int> CountsArg(const Napi::CallbackInfo& info, size_t i, int size, const char* what) {
  Napi::Value v = info[i];
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    throw Napi::TypeError::New(info.Env(), std::string("mpi: ") + what + " must be an Int32Array");
  }
  auto a = v.As<Napi::Int32Array>();
  if (static_cast<int>(a.ElementLength()) != size) {
    throw Napi::RangeError::New(info.Env(), std::string("mpi: ") + what + " must hold one value per rank (" + std::to_string(size) + ")");
  }
  std::vector<int> out(a.Data(), a.Data() + a.ElementLength());
  for (int x : out) {
    if (x < 0) throw Napi::RangeError::New(info.Env(), std::string("mpi: ") + what + " must be >= 0");
  }
  return out;
}

Napi::Value Load(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  const std::string err = LoadLocked(w);
  if (!err.empty()) return Napi::String::New(info.Env(), err);
  return info.Env().Null();
}

// init({ heartbeatS, watch }): MPI_Init_thread, then the exchange of pids, host names and
// watch endpoints, and the watch's connections (waited for up to 5 s). `watch: false` (no
// caller passes it: DistributedWorker always asks for one) is the only way to run a rank
// without a watch; a rank whose watch cannot listen fails every rank's init (TSPTO_MPI_WATCH).
Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  double heartbeat_s = 3;
  bool want_watch = true;
  if (info.Length() > 0 && info[0].IsObject()) {
    Napi::Object o = info[0].As<Napi::Object>();
    if (o.Has("heartbeatS") && o.Get("heartbeatS").IsNumber()) heartbeat_s = o.Get("heartbeatS").As<Napi::Number>().DoubleValue();
    if (o.Has("watch") && o.Get("watch").IsBoolean()) want_watch = o.Get("watch").As<Napi::Boolean>().Value();
  }
  Guarded(env, [&] {
    const std::string err = LoadLocked(w);
    if (!err.empty()) throw MpiError(err, kCodeMissing);
    if (w.state != State::kLoaded) CheckUsable(w, "MPI init");
  });
  if (w.state == State::kLoaded) {
    w.thread = std::thread(MpiThreadMain, &w);
    Api& a = w.api;
    int provided = 0;
    // A failed init leaves the world broken (MPI cannot be initialized twice in a process).
    auto init_failed = [&](const std::string& why) {
      w.state = State::kBroken;
      w.broken = why;
      w.broken_code = kCodeMpi;
      w.skip_finalize = true;
      if (w.thread.joinable()) w.thread.detach();
    };
    Guarded(env, [&] {
      try {
      RunOnMpiThread(w, "MPI_Init_thread", [&] {
        int rc = a.Init_thread(nullptr, nullptr, kThreadFunneled, &provided);
        if (rc != 0) return rc;
        rc = a.Comm_set_errhandler(a.comm_world, a.errors_return);
        if (rc != 0) return rc;
        rc = a.Comm_rank(a.comm_world, &w.rank);
        if (rc != 0) return rc;
        return a.Comm_size(a.comm_world, &w.size);
      }, false);
      } catch (const MpiError& e) {
        init_failed(e.what());
        throw;
      }
    });
    w.state = State::kInitialized;
    // Exchange pids, host names and watch endpoints: the watches need them.
    struct Rec {
      int32_t pid;
      char host[124];
      uint64_t nonce;  // rank 0's is the job's
      uint16_t port;   // 0: no watch
      uint16_t naddr;
      uint32_t addrs[kMaxWatchAddrs];  // the watch's (network order)
      uint8_t watch_any;               // it listens on every interface (else on addrs only)
      char watch_failed[240];  // why this rank's watch cannot listen ("": it listens, or was not asked for)
    };
    Rec mine{};
    mine.pid = static_cast<int32_t>(getpid());
    gethostname(mine.host, sizeof mine.host - 1);
    if (want_watch) {
      const std::string why = w.watch.Listen();
      if (why.empty()) {
        mine.port = w.watch.port();
        mine.watch_any = w.watch.listens_any() ? 1 : 0;
        const std::vector<uint32_t> addrs = w.watch.Addresses(kMaxWatchAddrs);
        mine.naddr = static_cast<uint16_t>(addrs.size());
        std::copy(addrs.begin(), addrs.end(), mine.addrs);
      } else {
        std::snprintf(mine.watch_failed, sizeof mine.watch_failed, "%s", why.c_str());
      }
    }
    std::random_device rd;
    mine.nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    std::vector<Rec> all(static_cast<size_t>(w.size));
    Guarded(env, [&] {
      try {
        RunOnMpiThread(w, "MPI_Allgather (init)", [&] {
          return a.Allgather(&mine, sizeof(Rec), a.types[0], all.data(), sizeof(Rec), a.types[0], a.comm_world);
        }, false);
      } catch (const MpiError& e) {
        init_failed(e.what());
        throw;
      }
    });
    w.my_host = mine.host;
    w.peers.clear();
    for (const Rec& r : all) w.peers.push_back(Peer{r.pid, std::string(r.host, strnlen(r.host, sizeof r.host))});
    // A rank without the watch it was asked for: every rank fails here, together (they all
    // see the same records), rather than run where a rank lost on another host would be found
    // only by the timeout. MPI itself is fine: it is finalized, so the processes end cleanly.
    std::vector<int> unwatched;
    for (size_t r = 0; r < all.size(); r++) {
      if (all[r].watch_failed[0] != '\0') unwatched.push_back(static_cast<int>(r));
    }
    if (!unwatched.empty()) {
      const Rec& first = all[static_cast<size_t>(unwatched[0])];
      std::string m = "MPI init: the watch of " + RankName(w, unwatched[0]) + " cannot listen: " +
                      std::string(first.watch_failed, strnlen(first.watch_failed, sizeof first.watch_failed));
      if (unwatched.size() > 1) {
        m += " (nor can the watch of";
        for (size_t i = 1; i < unwatched.size(); i++) m += (i > 1 ? ", " : " ") + RankName(w, unwatched[i]);
        m += ")";
      }
      m += "; every rank needs its watch (it finds a rank lost on another host), so rank " + std::to_string(w.rank) + " stops here";
      w.watch.SayBye(0);
      Guarded(env, [&] {
        try {
          RunOnMpiThread(w, "MPI_Finalize", [&] { return a.Finalize(); }, false);
        } catch (const MpiError&) {
        }
        Break(w, m, kCodeWatch);
        throw MpiError(m, kCodeWatch);
      });
    }
    if (mine.port != 0) {
      // A peer on this host whose watch listens on every interface is tried on the loopback
      // first; then every peer on the addresses it published (the loopback only on this host).
      std::vector<WatchEndpoint> ends(all.size());
      for (size_t r = 0; r < all.size(); r++) {
        const bool here = w.peers[r].host == w.my_host;
        ends[r].port = all[r].port;
        if (here && all[r].watch_any) ends[r].addrs.push_back(htonl(INADDR_LOOPBACK));
        for (size_t k = 0; k < all[r].naddr && k < kMaxWatchAddrs; k++) {
          const uint32_t a = all[r].addrs[k];
          if ((a == htonl(INADDR_LOOPBACK) && !here) || std::find(ends[r].addrs.begin(), ends[r].addrs.end(), a) != ends[r].addrs.end()) continue;
          ends[r].addrs.push_back(a);
        }
      }
      w.watch.Start(w.rank, all[0].nonce, std::move(ends), heartbeat_s);
      const std::vector<int> missing = w.watch.WaitConnected(5.0);
      if (!missing.empty()) {
        std::string list;
        for (int r : missing) list += (list.empty() ? "" : ", ") + RankName(w, r);
        std::fprintf(stderr, "tspto: rank %d: the watch could not connect to %s within 5 s (a firewall? see TSPTO_MPI_WATCH_PORTS): "
                     "it keeps trying; until then their loss is found by TSPTO_MPI_TIMEOUT only\n", w.rank, list.c_str());
      }
    }
  }
  Guarded(env, [&] { CheckUsable(w, "MPI init"); });
  Napi::Object o = Napi::Object::New(env);
  o.Set("rank", w.rank);
  o.Set("size", w.size);
  Napi::Array pids = Napi::Array::New(env, w.peers.size());
  Napi::Array hosts = Napi::Array::New(env, w.peers.size());
  for (uint32_t i = 0; i < w.peers.size(); i++) {
    pids.Set(i, w.peers[i].pid);
    hosts.Set(i, w.peers[i].host);
  }
  o.Set("pids", pids);
  o.Set("hosts", hosts);
  o.Set("library", w.library);
  char ver[4096];
  int len = 0;
  if (w.api.Get_library_version(ver, &len) == 0) o.Set("version", std::string(ver, static_cast<size_t>(len)));
  return o;
}

Napi::Value StateName(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  const char* s = "unloaded";
  switch (w.state) {
    case State::kUnloaded: s = "unloaded"; break;
    case State::kLoaded: s = w.load_error.empty() ? "loaded" : "missing"; break;
    case State::kInitialized: s = "initialized"; break;
    case State::kFinalized: s = "finalized"; break;
    case State::kBroken: s = "broken"; break;
  }
  return Napi::String::New(info.Env(), s);
}

void SetTimeout(const Napi::CallbackInfo& info) {
  const double s = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(s >= 0)) throw Napi::RangeError::New(info.Env(), "mpi.setTimeout: seconds must be a number >= 0");
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.timeout_s = s;
}

// Every collective binding takes a trailing optional check: (hash: bigint, seq: number); see
// the header comment ("Agreement").

// allreduce(buf, count, type, op, check?, seq?): in place.
void Allreduce(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "allReduce"); });
  const int count = IntArg(info, 1, "count", 0, INT_MAX);
  const int type = IntArg(info, 2, "type", 0, kNumTypes - 1);
  const int op = IntArg(info, 3, "op", 0, kNumOps - 1);
  const Check check = CheckArg(info, 4);
  void* buf = BufferArg(info, 0, static_cast<uint64_t>(count) * kTypeBytes[type], "allReduce");
  Api& a = w.api;
  Guarded(env, [&] {
    RunChecked(w, "allReduce", check, [&] { return a.Allreduce(a.in_place, buf, count, a.types[type], a.ops[op], a.comm_world); });
  });
}

// bcast(buf, count, type, root, check?, seq?).
void Bcast(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "broadcast"); });
  const int count = IntArg(info, 1, "count", 0, INT_MAX);
  const int type = IntArg(info, 2, "type", 0, kNumTypes - 1);
  const int root = IntArg(info, 3, "root", 0, w.size - 1);
  const Check check = CheckArg(info, 4);
  void* buf = BufferArg(info, 0, static_cast<uint64_t>(count) * kTypeBytes[type], "broadcast");
  Api& a = w.api;
  Guarded(env, [&] {
    RunChecked(w, "broadcast", check, [&] { return a.Bcast(buf, count, a.types[type], root, a.comm_world); });
  });
}

// allgather(send, recv, count, type, check?, seq?): count elements per rank; recv holds size * count.
void Allgather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "allGather"); });
  const int count = IntArg(info, 2, "count", 0, INT_MAX);
  const int type = IntArg(info, 3, "type", 0, kNumTypes - 1);
  const Check check = CheckArg(info, 4);
  const uint64_t bytes = static_cast<uint64_t>(count) * kTypeBytes[type];
  void* send = BufferArg(info, 0, bytes, "allGather");
  void* recv = BufferArg(info, 1, bytes * static_cast<uint64_t>(w.size), "allGather");
  Api& a = w.api;
  Guarded(env, [&] {
    RunChecked(w, "allGather", check, [&] { return a.Allgather(send, count, a.types[type], recv, count, a.types[type], a.comm_world); });
  });
}

// allgatherv(send, recv, counts, displs, type, check?, seq?): rank r sends counts[r] elements,
// which land at recv + displs[r] elements on every rank.
void Allgatherv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "allGather"); });
  const std::vector<int> counts = CountsArg(info, 2, w.size, "counts");
  const std::vector<int> displs = CountsArg(info, 3, w.size, "displs");
  const int type = IntArg(info, 4, "type", 0, kNumTypes - 1);
  const Check check = CheckArg(info, 5);
  uint64_t end = 0;
  for (int r = 0; r < w.size; r++) end = std::max<uint64_t>(end, static_cast<uint64_t>(displs[r]) + counts[r]);
  void* send = BufferArg(info, 0, static_cast<uint64_t>(counts[w.rank]) * kTypeBytes[type], "allGather");
  void* recv = BufferArg(info, 1, end * kTypeBytes[type], "allGather");
  Api& a = w.api;
  Guarded(env, [&] {
    RunChecked(w, "allGather", check, [&] {
      return a.Allgatherv(send, counts[w.rank], a.types[type], recv, counts.data(), displs.data(), a.types[type], a.comm_world);
    });
  });
}

// reduceScatter(send, recv, count, type, op, check?, seq?): send holds size * count, recv count elements.
void ReduceScatter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "reduceScatter"); });
  const int count = IntArg(info, 2, "count", 0, INT_MAX);
  const int type = IntArg(info, 3, "type", 0, kNumTypes - 1);
  const int op = IntArg(info, 4, "op", 0, kNumOps - 1);
  const Check check = CheckArg(info, 5);
  const uint64_t bytes = static_cast<uint64_t>(count) * kTypeBytes[type];
  void* send = BufferArg(info, 0, bytes * static_cast<uint64_t>(w.size), "reduceScatter");
  void* recv = BufferArg(info, 1, bytes, "reduceScatter");
  Api& a = w.api;
  Guarded(env, [&] {
    RunChecked(w, "reduceScatter", check, [&] { return a.Reduce_scatter_block(send, recv, count, a.types[type], a.ops[op], a.comm_world); });
  });
}

// reduceScatterv(send, recv, counts, type, op, check?, seq?): send holds sum(counts) elements;
// rank r keeps the reduction of block r (counts[r] elements, blocks in rank order).
void ReduceScatterv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "reduceScatter"); });
  const std::vector<int> counts = CountsArg(info, 2, w.size, "counts");
  const int type = IntArg(info, 3, "type", 0, kNumTypes - 1);
  const int op = IntArg(info, 4, "op", 0, kNumOps - 1);
  const Check check = CheckArg(info, 5);
  uint64_t total = 0;
  for (int c : counts) total += static_cast<uint64_t>(c);
  void* send = BufferArg(info, 0, total * kTypeBytes[type], "reduceScatter");
  void* recv = BufferArg(info, 1, static_cast<uint64_t>(counts[w.rank]) * kTypeBytes[type], "reduceScatter");
  Api& a = w.api;
  Guarded(env, [&] {
    RunChecked(w, "reduceScatter", check, [&] { return a.Reduce_scatter(send, recv, counts.data(), a.types[type], a.ops[op], a.comm_world); });
  });
}

void Barrier(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "barrier"); });
  const Check check = CheckArg(info, 0);  // (null, seq): MPI_Barrier itself; a check goes through agree()
  Api& a = w.api;
  Guarded(env, [&] { RunOnMpiThread(w, "barrier", [&] { return a.Barrier(a.comm_world); }, true, check.seq); });
}

// agree(hash, seq, op): the agreement check alone (a barrier too: no rank leaves an allreduce
// before every rank entered it). True when every rank passed the same hash.
Napi::Value AgreeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  const std::string op = info.Length() > 2 && info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "barrier";
  Guarded(env, [&] { CheckUsable(w, op); });
  const Check check = CheckArg(info, 0);
  if (!check.on) throw Napi::TypeError::New(env, "mpi.agree: hash (bigint) and seq are needed");
  bool same = true;
  Guarded(env, [&] {
    RunOnMpiThread(w, op, [&] {
      int rc = 0;
      same = Agree(w, check, &rc);
      return rc;
    }, true, check.seq);
  });
  return Napi::Boolean::New(env, same);
}

// sayFailing(why): tells every peer's watch that this rank is failing (once).
void SayFailingJs(const Napi::CallbackInfo& info) {
  World& w = W();
  const std::string why = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "it failed";
  w.watch.SayFailing(why);
}

void FinalizeLocked(World& w) {
  if (w.state != State::kInitialized) return;
  Api& a = w.api;
  w.state = State::kFinalized;
  // Goodbye first: the peers' watches must not take this rank's leaving for a loss.
  w.watch.SayBye(w.last_collective);
  // Not watched: a rank that finished its own MPI_Finalize and exited is not a lost rank (under
  // load, a peer can leave while this rank is still finalizing); a rank that dies earlier is
  // caught by the collectives before this one, and mpirun ends the job if one exits failing.
  RunOnMpiThread(w, "MPI_Finalize", [&] { return a.Finalize(); }, /*watch=*/false);
}

void Finalize(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(info.Env(), [&] { FinalizeLocked(w); });
}

// The process is exiting with this code: a non-zero exit skips MPI_Finalize (it would wait
// for ranks that are themselves waiting for this one; mpirun ends the job instead).
void SetExitCode(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  const double code = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : 1;
  if (code != 0) {
    w.skip_finalize = true;
    w.watch.SayFailing("its process is exiting with code " + std::to_string(static_cast<int>(code)));
  }
}

// lostPeer(): the message naming a peer rank on this host whose process is gone, or null
// (for a SIGTERM that arrives while JS runs, outside any collective).
Napi::Value LostPeerJs(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  for (int i = 0; i < 25 && w.state == State::kInitialized; i++) {
    int r = -1;
    std::string message = WatchLostMessage(w, "the run", &r);
    if (r < 0 && (r = LostPeer(w)) >= 0) message = LostMessage(w, r, "the run");
    if (r >= 0) {
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("rank", r);
      o.Set("message", message);
      return o;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return info.Env().Null();
}

// MPI_Abort(COMM_WORLD, code): ends every rank of the job.
void Abort(const Napi::CallbackInfo& info) {
  World& w = W();
  const int code = IntArg(info, 0, "code", 0, 255);
  if (w.state == State::kInitialized) w.api.Abort(w.api.comm_world, code);
  _exit(code);
}

// watchTest: the watch's listening sockets without MPI, for tests (test/distributed/watch.test.ts).
// listen(testTaken = 0) -> { id, port, addresses (listened on; [] = every interface), published
// (what init tells the peers) }, or throws the reason (code TSPTO_MPI_WATCH) that makes
// init fail; close(id) closes that watch's sockets. `testTaken`: see Watch::Listen.
std::map<int, std::unique_ptr<Watch>>& TestWatches() {
  static auto* m = new std::map<int, std::unique_ptr<Watch>>();
  return *m;
}

Napi::Value WatchTestListen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int taken = info.Length() > 0 && !info[0].IsUndefined() ? IntArg(info, 0, "testTaken", 0, 65535) : 0;
  auto watch = std::make_unique<Watch>();
  const std::string why = watch->Listen(taken);
  if (!why.empty()) {
    Napi::Error e = Napi::Error::New(env, why);
    e.Set("code", Napi::String::New(env, kCodeWatch));
    throw e;
  }
  static int next_id = 0;
  const int id = ++next_id;
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", id);
  o.Set("port", watch->port());
  auto texts = [&](const std::vector<uint32_t>& addrs) {
    Napi::Array a = Napi::Array::New(env, addrs.size());
    for (uint32_t i = 0; i < addrs.size(); i++) {
      char buf[INET_ADDRSTRLEN] = "";
      in_addr x{};
      x.s_addr = addrs[i];
      inet_ntop(AF_INET, &x, buf, sizeof buf);
      a.Set(i, std::string(buf));
    }
    return a;
  };
  o.Set("addresses", texts(watch->listens_any() ? std::vector<uint32_t>{} : watch->Addresses(kMaxWatchAddrs)));
  o.Set("published", texts(watch->Addresses(kMaxWatchAddrs)));
  TestWatches()[id] = std::move(watch);
  return o;
}

void WatchTestClose(const Napi::CallbackInfo& info) {
  TestWatches().erase(IntArg(info, 0, "id", 1, INT_MAX));
}

}  // namespace

Napi::Object MpiBinding(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("load", Napi::Function::New<Load>(env, "load"));
  o.Set("init", Napi::Function::New<Init>(env, "init"));
  o.Set("state", Napi::Function::New<StateName>(env, "state"));
  o.Set("setTimeout", Napi::Function::New<SetTimeout>(env, "setTimeout"));
  o.Set("allreduce", Napi::Function::New<Allreduce>(env, "allreduce"));
  o.Set("bcast", Napi::Function::New<Bcast>(env, "bcast"));
  o.Set("allgather", Napi::Function::New<Allgather>(env, "allgather"));
  o.Set("reduceScatter", Napi::Function::New<ReduceScatter>(env, "reduceScatter"));
  o.Set("allgatherv", Napi::Function::New<Allgatherv>(env, "allgatherv"));
  o.Set("reduceScatterv", Napi::Function::New<ReduceScatterv>(env, "reduceScatterv"));
  o.Set("agree", Napi::Function::New<AgreeJs>(env, "agree"));
  o.Set("sayFailing", Napi::Function::New<SayFailingJs>(env, "sayFailing"));
  o.Set("barrier", Napi::Function::New<Barrier>(env, "barrier"));
  o.Set("finalize", Napi::Function::New<Finalize>(env, "finalize"));
  o.Set("setExitCode", Napi::Function::New<SetExitCode>(env, "setExitCode"));
  o.Set("abort", Napi::Function::New<Abort>(env, "abort"));
  o.Set("lostPeer", Napi::Function::New<LostPeerJs>(env, "lostPeer"));
  Napi::Object watch_test = Napi::Object::New(env);
  watch_test.Set("listen", Napi::Function::New<WatchTestListen>(env, "listen"));
  watch_test.Set("close", Napi::Function::New<WatchTestClose>(env, "close"));
  o.Set("watchTest", watch_test);
  // At env teardown (the main thread's): finalize a world still open, unless the process
  // fails (SetExitCode) or the world is broken.
  env.AddCleanupHook([] {
    World& w = W();
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.state == State::kInitialized && !w.skip_finalize) {
      try {
        FinalizeLocked(w);
      } catch (...) {
      }
    }
  });
  return o;
}

}  // namespace tspto
