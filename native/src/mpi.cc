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
//  - SIGTERM while waiting (mpirun tears the job down when one rank dies) triggers the same
//    scan before the process goes, so the surviving ranks say which rank was lost;
//  - an optional timeout (setTimeout) ends a wait that never completes.
// After a peer is lost the world is broken: the MPI thread may be stuck inside libmpi for
// good, so it is detached and every later call fails at once with the same message, and
// MPI_Finalize is skipped at exit.
//
// Buffers: a host ArrayBufferView, or [Device, address]: a device range resolved through the
// device arena's allocation records (DeviceCore::Resolve), so MPI reads and writes device
// memory in place and a freed or out-of-range address is refused before MPI sees it.
#include "mpi.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "errors.h"

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

std::string LostMessage(World& w, int r, const std::string& op) {
  return "MPI rank " + std::to_string(r) + " (pid " + std::to_string(w.peers[r].pid) + " on host " +
         w.peers[r].host + ") was lost during " + op + ": its process exited; rank " +
         std::to_string(w.rank) + " stops here instead of waiting for it";
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

void CheckUsable(World& w, const std::string& op) {
  if (w.state == State::kBroken) throw MpiError(w.broken, w.broken_code);
  if (w.state == State::kFinalized) {
    throw MpiError(op + ": MPI was finalized (DistributedWorker.close()); MPI cannot be started again in this process", kCodeState);
  }
  if (w.state != State::kInitialized) throw MpiError(op + ": MPI is not initialized", kCodeState);
}

// Runs `job` on the MPI thread and waits, watching the world (see the header comment).
// `watch` is false for MPI_Init (no peers known yet).
void RunOnMpiThread(World& w, const std::string& op, std::function<int()> job, bool watch = true) {
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
    w.state = State::kBroken;
    w.broken = LostMessage(w, r, op);
    w.skip_finalize = true;
    if (w.thread.joinable()) w.thread.detach();
    throw MpiError(w.broken, kCodePeerLost, r);
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
    if (int r = LostPeer(w); r >= 0) fail_lost(r);
    if (g_sigterm.load() != 0) {
      // mpirun tears the job down: find the rank that went (it may take a moment to exit).
      for (int i = 0; i < 25; i++) {
        if (int r = LostPeer(w); r >= 0) fail_lost(r);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      restore();
      w.state = State::kBroken;
      w.broken = "rank " + std::to_string(w.rank) + " was terminated (SIGTERM) during " + op +
                 ": mpirun is ending the job, most likely because a rank on another host was lost "
                 "(mpirun's own message names it)";
      w.skip_finalize = true;
      if (w.thread.joinable()) w.thread.detach();
      throw MpiError(w.broken, kCodePeerLost);
    }
    if (w.timeout_s > 0) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > w.timeout_s) {
        restore();
        w.state = State::kBroken;
        std::ostringstream m;
        m << op << " did not complete within " << w.timeout_s
          << " s (TSPTO_MPI_TIMEOUT): a rank did not join it (it is stuck, or was lost on another host)";
        w.broken = m.str();
        w.broken_code = kCodeTimeout;
        w.skip_finalize = true;
        if (w.thread.joinable()) w.thread.detach();
        throw MpiError(w.broken, kCodeTimeout);
      }
    }
  }
  restore();
  if (g_sigterm.load() != 0) raise(SIGTERM);  // arrived as the call completed: die as asked
  if (rc != 0) throw MpiError(op + " failed: " + ErrorString(w, rc), kCodeMpi);
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

Napi::Value Load(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  const std::string err = LoadLocked(w);
  if (!err.empty()) return Napi::String::New(info.Env(), err);
  return info.Env().Null();
}

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
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
    // Exchange pids and host names: the watch needs them.
    struct Rec {
      int32_t pid;
      char host[124];
    };
    Rec mine{};
    mine.pid = static_cast<int32_t>(getpid());
    gethostname(mine.host, sizeof mine.host - 1);
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

// allreduce(buf, count, type, op): in place.
void Allreduce(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "allReduce"); });
  const int count = IntArg(info, 1, "count", 0, INT_MAX);
  const int type = IntArg(info, 2, "type", 0, kNumTypes - 1);
  const int op = IntArg(info, 3, "op", 0, kNumOps - 1);
  void* buf = BufferArg(info, 0, static_cast<uint64_t>(count) * kTypeBytes[type], "allReduce");
  Api& a = w.api;
  Guarded(env, [&] {
    RunOnMpiThread(w, "allReduce", [&] { return a.Allreduce(a.in_place, buf, count, a.types[type], a.ops[op], a.comm_world); });
  });
}

// bcast(buf, count, type, root).
void Bcast(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "broadcast"); });
  const int count = IntArg(info, 1, "count", 0, INT_MAX);
  const int type = IntArg(info, 2, "type", 0, kNumTypes - 1);
  const int root = IntArg(info, 3, "root", 0, w.size - 1);
  void* buf = BufferArg(info, 0, static_cast<uint64_t>(count) * kTypeBytes[type], "broadcast");
  Api& a = w.api;
  Guarded(env, [&] {
    RunOnMpiThread(w, "broadcast", [&] { return a.Bcast(buf, count, a.types[type], root, a.comm_world); });
  });
}

// allgather(send, recv, count, type): count elements per rank; recv holds size * count.
void Allgather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "allGather"); });
  const int count = IntArg(info, 2, "count", 0, INT_MAX);
  const int type = IntArg(info, 3, "type", 0, kNumTypes - 1);
  const uint64_t bytes = static_cast<uint64_t>(count) * kTypeBytes[type];
  void* send = BufferArg(info, 0, bytes, "allGather");
  void* recv = BufferArg(info, 1, bytes * static_cast<uint64_t>(w.size), "allGather");
  Api& a = w.api;
  Guarded(env, [&] {
    RunOnMpiThread(w, "allGather", [&] { return a.Allgather(send, count, a.types[type], recv, count, a.types[type], a.comm_world); });
  });
}

// reduceScatter(send, recv, count, type, op): send holds size * count, recv count elements.
void ReduceScatter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "reduceScatter"); });
  const int count = IntArg(info, 2, "count", 0, INT_MAX);
  const int type = IntArg(info, 3, "type", 0, kNumTypes - 1);
  const int op = IntArg(info, 4, "op", 0, kNumOps - 1);
  const uint64_t bytes = static_cast<uint64_t>(count) * kTypeBytes[type];
  void* send = BufferArg(info, 0, bytes * static_cast<uint64_t>(w.size), "reduceScatter");
  void* recv = BufferArg(info, 1, bytes, "reduceScatter");
  Api& a = w.api;
  Guarded(env, [&] {
    RunOnMpiThread(w, "reduceScatter", [&] { return a.Reduce_scatter_block(send, recv, count, a.types[type], a.ops[op], a.comm_world); });
  });
}

void Barrier(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  Guarded(env, [&] { CheckUsable(w, "barrier"); });
  Api& a = w.api;
  Guarded(env, [&] { RunOnMpiThread(w, "barrier", [&] { return a.Barrier(a.comm_world); }); });
}

void FinalizeLocked(World& w) {
  if (w.state != State::kInitialized) return;
  Api& a = w.api;
  w.state = State::kFinalized;
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
  if (code != 0) w.skip_finalize = true;
}

// lostPeer(): the message naming a peer rank on this host whose process is gone, or null
// (for a SIGTERM that arrives while JS runs, outside any collective).
Napi::Value LostPeerJs(const Napi::CallbackInfo& info) {
  World& w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  for (int i = 0; i < 25 && w.state == State::kInitialized; i++) {
    if (int r = LostPeer(w); r >= 0) {
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("rank", r);
      o.Set("message", LostMessage(w, r, "the run"));
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
  o.Set("barrier", Napi::Function::New<Barrier>(env, "barrier"));
  o.Set("finalize", Napi::Function::New<Finalize>(env, "finalize"));
  o.Set("setExitCode", Napi::Function::New<SetExitCode>(env, "setExitCode"));
  o.Set("abort", Napi::Function::New<Abort>(env, "abort"));
  o.Set("lostPeer", Napi::Function::New<LostPeerJs>(env, "lostPeer"));
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
