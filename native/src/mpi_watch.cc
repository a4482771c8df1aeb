// The watch of an MPI world: see mpi_watch.h.
#include "mpi_watch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tspto {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kHelloBytes = 16;
constexpr size_t kMaxFailText = 1000;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Hello(uint64_t nonce, int rank) {
  std::string h(kHelloBytes, '\0');
  std::memcpy(&h[0], "TSPW", 4);
  std::memcpy(&h[4], &nonce, 8);
  const int32_t r = rank;
  std::memcpy(&h[12], &r, 4);
  return h;
}

// The rank of a valid hello, or -1.
int HelloRank(const std::string& in, uint64_t nonce) {
  if (in.size() < kHelloBytes || std::memcmp(in.data(), "TSPW", 4) != 0) return -1;
  uint64_t n = 0;
  int32_t r = -1;
  std::memcpy(&n, in.data() + 4, 8);
  std::memcpy(&r, in.data() + 12, 4);
  return n == nonce ? r : -1;
}

struct IfRule {
  std::string name;
  uint32_t net = 0, mask = 0;  // host byte order
  bool cidr = false;
};

std::vector<IfRule> ParseRules(const char* spec) {
  std::vector<IfRule> rules;
  if (spec == nullptr) return rules;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    IfRule r;
    const size_t slash = item.find('/');
    in_addr a{};
    const std::string bits_text = slash == std::string::npos ? "" : item.substr(slash + 1);
    if (slash != std::string::npos && inet_pton(AF_INET, item.substr(0, slash).c_str(), &a) == 1 &&
        !bits_text.empty() && bits_text.size() <= 2 && bits_text.find_first_not_of("0123456789") == std::string::npos &&
        std::atoi(bits_text.c_str()) <= 32) {
      const int bits = std::atoi(bits_text.c_str());
      r.cidr = true;
      r.mask = bits <= 0 ? 0 : bits >= 32 ? 0xffffffffu : ~((1u << (32 - bits)) - 1);
      r.net = ntohl(a.s_addr) & r.mask;
    } else {
      r.name = item;  // an interface name (a malformed CIDR, taken as one, matches nothing)
    }
    rules.push_back(r);
  }
  return rules;
}

bool Matches(const std::vector<IfRule>& rules, const char* ifname, uint32_t addr_host) {
  for (const IfRule& r : rules) {
    if (r.cidr ? (addr_host & r.mask) == r.net : r.name == ifname) return true;
  }
  return false;
}

void Close(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// The include list Open MPI's TCP traffic is limited to, as the variable that holds it:
// btl_tcp_if_include (the transport between ranks), else oob_tcp_if_include (mpirun's own
// channel); nullptr when neither is set. mpirun's `--mca <name> <value>` (and `-x`, and an
// exported OMPI_MCA_<name>) reaches every rank as the variable OMPI_MCA_<name>.
const char* IncludeVar() {
  for (const char* v : {"OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"}) {
    const char* spec = std::getenv(v);
    if (spec != nullptr && spec[strspn(spec, " \t,")] != '\0') return v;
  }
  return nullptr;
}

// This host's IPv4 interfaces that are up, as (name, address in network order).
std::vector<std::pair<std::string, uint32_t>> Interfaces() {
  std::vector<std::pair<std::string, uint32_t>> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0) continue;
    out.emplace_back(i->ifa_name, reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

struct Watch::Slot {
  enum State { kIdle, kConnecting, kHelloSent, kUp, kLost, kLeft, kUnwatched };
  State state = kIdle;
  int fd = -1;
  size_t next_addr = 0;
  Clock::time_point since{}, last_rx{}, retry_at{};
  std::string in;
  bool said_bye = false;
};

namespace {

std::string AddrText(uint32_t addr_net) {
  char buf[INET_ADDRSTRLEN] = "?";
  in_addr a{};
  a.s_addr = addr_net;
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

// A socket listening on addr:port (port 0: an ephemeral one), or -1 with *why ("bind: ...").
// SO_REUSEADDR lets it bind a port that connections of an earlier job still hold in TIME_WAIT
// (without it a pinned range is unusable for a minute after each job). On Linux it never lets
// two sockets listen on one address and port (SO_REUSEPORT would: it is never set), but two
// sockets may both bind() one port while neither listens yet, so the second listen() fails
// (EADDRINUSE): the caller then tries the next port, as for a failed bind().
int ListenOn(uint32_t addr_net, uint16_t port, bool test_take, std::vector<int>* taken, std::string* why) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = addr_net;
  a.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    *why = std::string("bind: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  if (test_take) {  // another rank of this host binds the same port now and listens first
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const int other = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (other >= 0) {
      setsockopt(other, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(other, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(other, 1) == 0) {
        taken->push_back(other);
      } else {
        close(other);
      }
    }
  }
  if (listen(fd, 64) != 0) {
    *why = std::string("listen: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Watch::~Watch() {
  if (!thread_.joinable()) CloseListening();
}

void Watch::CloseListening() {
  for (int& fd : listen_fds_) Close(fd);
  listen_fds_.clear();
  for (int& fd : test_taken_fds_) Close(fd);
  test_taken_fds_.clear();
}

std::string Watch::Listen(int test_taken) {
  int lo = 0, hi = 0;
  if (const char* spec = std::getenv("TSPTO_MPI_WATCH_PORTS"); spec != nullptr && *spec != '\0') {
    int end = 0;
    if (std::sscanf(spec, "%d-%d%n", &lo, &hi, &end) != 2 || spec[end] != '\0' || lo < 1 || hi > 65535 || lo > hi) {
      return std::string("TSPTO_MPI_WATCH_PORTS must be '<min>-<max>' (ports 1..65535), got '") + spec + "'";
    }
  }
  // Where: the addresses Open MPI's TCP traffic is limited to, else every interface.
  std::vector<uint32_t> addrs = {htonl(INADDR_ANY)};
  if (const char* var = IncludeVar()) {
    const std::vector<IfRule> include = ParseRules(std::getenv(var));
    addrs.clear();
    std::string seen;
    for (const auto& [name, addr] : Interfaces()) {
      seen += (seen.empty() ? "" : ", ") + name + " " + AddrText(addr);
      if (Matches(include, name.c_str(), ntohl(addr)) && addrs.size() < kMaxWatchAddrs &&
          std::find(addrs.begin(), addrs.end(), addr) == addrs.end()) {
        addrs.push_back(addr);
      }
    }
    if (addrs.empty()) {
      return std::string(var) + "='" + std::getenv(var) + "' selects no IPv4 address of this host (its IPv4 interfaces: " +
             (seen.empty() ? "none" : seen) + "), and the watch listens only where Open MPI's TCP traffic may go";
    }
  }
  std::string where;
  for (uint32_t a : addrs) where += (where.empty() ? "" : ", ") + AddrText(a);
  // The candidates: each port of the range in turn, or (no range) a few ephemeral ports: with
  // several addresses, the port the first one got may be taken on another.
  const int candidates = lo ? hi - lo + 1 : 8;
  std::vector<std::string> failed;  // "<port>: <why>" per candidate
  for (int c = 0; c < candidates; c++) {
    uint16_t port = static_cast<uint16_t>(lo ? lo + c : 0);
    std::vector<int> fds;
    std::string why;
    for (size_t k = 0; k < addrs.size(); k++) {
      const int fd = ListenOn(addrs[k], port, k == 0 && c < test_taken, &test_taken_fds_, &why);
      if (fd < 0) {
        if (addrs.size() > 1) why += " (on " + AddrText(addrs[k]) + ")";
        break;
      }
      fds.push_back(fd);
      if (port == 0) {
        sockaddr_in a{};
        socklen_t len = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
      }
    }
    if (fds.size() == addrs.size()) {
      listen_fds_ = std::move(fds);
      listen_addrs_ = addrs[0] == htonl(INADDR_ANY) ? std::vector<uint32_t>{} : addrs;
      port_ = port;
      return "";
    }
    for (int& fd : fds) Close(fd);
    failed.push_back((lo ? std::to_string(lo + c) + ": " : "") + why);
  }
  // The first few failures and the last: they say why (one reason, usually) without listing a wide range.
  std::string list;
  for (size_t i = 0; i < failed.size(); i++) {
    if (i < 3 || i + 1 == failed.size()) list += (list.empty() ? "" : "; ") + failed[i];
    else if (i == 3) list += "; ...";
  }
  if (!lo) {  // the ports differ from try to try: the distinct reasons say it
    std::vector<std::string> reasons;
    for (const std::string& f : failed) {
      if (std::find(reasons.begin(), reasons.end(), f) == reasons.end()) reasons.push_back(f);
    }
    std::string text;
    for (const std::string& r : reasons) text += (text.empty() ? "" : "; ") + r;
    return "could not listen on an ephemeral port at " + where + " in " + std::to_string(candidates) + " tries (" + text + ")";
  }
  return "none of the " + std::to_string(hi - lo + 1) + " port" + (hi > lo ? "s" : "") + " of TSPTO_MPI_WATCH_PORTS=" +
         std::to_string(lo) + "-" + std::to_string(hi) + " could listen at " + where + " (" + list + ")";
}

std::vector<uint32_t> Watch::Addresses(size_t max) const {
  if (!listen_addrs_.empty()) {
    return std::vector<uint32_t>(listen_addrs_.begin(), listen_addrs_.begin() + static_cast<long>(std::min(max, listen_addrs_.size())));
  }
  std::vector<uint32_t> out;
  const std::vector<IfRule> exclude = ParseRules(std::getenv("OMPI_MCA_btl_tcp_if_exclude"));
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr && out.size() < max; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0) continue;
    const uint32_t net = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    if ((i->ifa_flags & IFF_LOOPBACK) != 0 || Matches(exclude, i->ifa_name, ntohl(net))) continue;
    if (std::find(out.begin(), out.end(), net) == out.end()) out.push_back(net);
  }
  freeifaddrs(list);
  return out;
}

void Watch::Start(int rank, uint64_t nonce, std::vector<WatchEndpoint> peers, double silence_s) {
  if (started_ || listen_fds_.empty()) return;
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return;
  rank_ = rank;
  nonce_ = nonce;
  silence_s_ = silence_s;
  peers_ = std::move(peers);
  slots_.clear();
  for (size_t r = 0; r < peers_.size(); r++) {
    Slot* s = new Slot();
    if (static_cast<int>(r) == rank_ || peers_[r].port == 0) s->state = Slot::kUnwatched;
    slots_.push_back(s);
  }
  left_.assign(peers_.size(), -1);
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

std::vector<int> Watch::WaitConnected(double timeout_s) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    std::vector<int> missing;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t r = 0; r < slots_.size(); r++) {
        const Slot::State s = slots_[r]->state;
        if (static_cast<int>(r) != rank_ && peers_[r].port != 0 && s != Slot::kUp && s != Slot::kLost && s != Slot::kLeft) {
          missing.push_back(static_cast<int>(r));
        }
      }
    }
    if (missing.empty() || Clock::now() >= end || !started_) return missing;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<WatchLoss> Watch::Losses() {
  std::lock_guard<std::mutex> lock(mu_);
  return losses_;
}

int Watch::LeftBefore(uint32_t collective, uint32_t* left_after) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t r = 0; r < left_.size(); r++) {
    if (left_[r] >= 0 && static_cast<uint64_t>(left_[r]) < collective) {
      *left_after = static_cast<uint32_t>(left_[r]);
      return static_cast<int>(r);
    }
  }
  return -1;
}

void Watch::WriteAll(const std::string& frame) {
  for (Slot* s : slots_) {
    if (s->state == Slot::kUp) {
      // A full buffer (a stopped peer) or a closed one is found by the reading side.
      (void)!send(s->fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
}

void Watch::SayFailing(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || failing_said_) return;
  failing_said_ = true;
  const std::string text = why.substr(0, kMaxFailText);
  std::string frame = "f";
  const uint16_t len = static_cast<uint16_t>(text.size());
  frame.append(reinterpret_cast<const char*>(&len), 2);
  frame += text;
  WriteAll(frame);
}

void Watch::SayBye(uint32_t collectives) {
  if (!started_) {
    CloseListening();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string frame = "b";
    frame.append(reinterpret_cast<const char*>(&collectives), 4);
    if (!failing_said_) WriteAll(frame);
  }
  stop_.store(true);
  (void)!write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (Slot* s : slots_) Close(s->fd);
  CloseListening();
  started_ = false;
}

void Watch::Run() {
  struct Pending {
    int fd;
    Clock::time_point since;
    std::string in;
  };
  std::vector<Pending> pending;
  const double beat_s = std::max(0.05, std::min(0.25, silence_s_ > 0 ? silence_s_ / 10 : 0.25));
  const auto beat = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(beat_s));
  auto next_beat = Clock::now();
  const int n = static_cast<int>(slots_.size());

  auto lose = [&](int r, const std::string& why) {  // mu_ held
    Slot* s = slots_[r];
    Close(s->fd);
    s->state = Slot::kLost;
    losses_.push_back(WatchLoss{r, why});
    has_loss_.store(true, std::memory_order_release);
  };
  // Closes a connection attempt to peer r; the next address at once, or after a pause once
  // every address was tried.
  auto retry_later = [&](int r) {  // mu_ held
    Slot* s = slots_[r];
    Close(s->fd);
    s->state = Slot::kIdle;
    s->in.clear();
    const bool wrapped = s->next_addr % peers_[r].addrs.size() == 0;
    s->retry_at = Clock::now() + std::chrono::milliseconds(wrapped ? 300 : 0);
  };
  // Frames from peer r after its hello; false when the connection ended.
  auto frames = [&](int r) -> bool {  // mu_ held
    Slot* s = slots_[r];
    std::string& in = s->in;
    size_t i = 0;
    bool alive = true;
    while (i < in.size() && alive) {
      const char c = in[i];
      if (c == 'h') {
        i += 1;
      } else if (c == 'b') {
        if (in.size() - i < 5) break;
        uint32_t k = 0;
        std::memcpy(&k, in.data() + i + 1, 4);
        left_[r] = k;
        s->said_bye = true;
        i += 5;
      } else if (c == 'f') {
        if (in.size() - i < 3) break;
        uint16_t len = 0;
        std::memcpy(&len, in.data() + i + 1, 2);
        if (in.size() - i < 3u + len) break;
        lose(r, "it failed: " + in.substr(i + 3, len));
        alive = false;
      } else {
        std::fprintf(stderr, "tspto: rank %d: the watch connection of rank %d sent an unknown frame; it is no longer watched\n", rank_, r);
        Close(s->fd);
        s->state = Slot::kUnwatched;
        alive = false;
      }
    }
    if (alive) in.erase(0, i);
    return alive;
  };

  while (!stop_.load()) {
    auto now = Clock::now();
    std::vector<pollfd> fds;
    struct Who {
      enum Kind { kWake, kListening, kPending, kSlot } kind;
      int i;  // listening socket k, pending k, or the slot's rank
    };
    std::vector<Who> who;  // per pollfd
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int r = rank_ + 1; r < n; r++) {  // this rank connects to the ranks above it
        Slot* s = slots_[r];
        if (s->state != Slot::kIdle || now < s->retry_at) continue;
        const std::vector<uint32_t>& addrs = peers_[r].addrs;
        if (addrs.empty()) {
          s->state = Slot::kUnwatched;
          continue;
        }
        const uint32_t addr = addrs[s->next_addr % addrs.size()];
        s->next_addr++;
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
          s->retry_at = now + std::chrono::milliseconds(500);
          continue;
        }
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = addr;
        a.sin_port = htons(peers_[r].port);
        s->fd = fd;
        s->since = now;
        if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 || errno == EINPROGRESS) {
          s->state = Slot::kConnecting;
        } else {
          retry_later(r);
        }
      }
      fds.push_back({wake_[0], POLLIN, 0});
      who.push_back({Who::kWake, 0});
      for (size_t k = 0; k < listen_fds_.size(); k++) {
        fds.push_back({listen_fds_[k], POLLIN, 0});
        who.push_back({Who::kListening, static_cast<int>(k)});
      }
      for (size_t k = 0; k < pending.size(); k++) {
        fds.push_back({pending[k].fd, POLLIN, 0});
        who.push_back({Who::kPending, static_cast<int>(k)});
      }
      for (int r = 0; r < n; r++) {
        Slot* s = slots_[r];
        if (s->state == Slot::kConnecting) fds.push_back({s->fd, POLLOUT, 0});
        else if (s->state == Slot::kHelloSent || s->state == Slot::kUp) fds.push_back({s->fd, POLLIN, 0});
        else continue;
        who.push_back({Who::kSlot, r});
      }
    }
    const int wait_ms = std::max(0, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - now).count()) + 1);
    poll(fds.data(), fds.size(), std::min(wait_ms, 100));
    now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<size_t> done_pending;
    for (size_t i = 0; i < fds.size(); i++) {
      const short ev = fds[i].revents;
      const Who::Kind kind = who[i].kind;
      const int w = who[i].i;
      if (kind == Who::kWake) {
        char buf[64];
        while (read(wake_[0], buf, sizeof buf) > 0) {
        }
        continue;
      }
      if (kind == Who::kListening) {
        if ((ev & POLLIN) == 0) continue;
        for (;;) {
          const int c = accept4(listen_fds_[static_cast<size_t>(w)], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          const int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          pending.push_back(Pending{c, now, ""});
        }
        continue;
      }
      if (kind == Who::kPending) {  // an accepted connection waiting for its hello
        Pending& p = pending[static_cast<size_t>(w)];
        if (ev == 0) continue;
        char buf[256];
        const ssize_t got = recv(p.fd, buf, sizeof buf, 0);
        if (got <= 0) {
          if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
          Close(p.fd);
          done_pending.push_back(static_cast<size_t>(w));
          continue;
        }
        p.in.append(buf, static_cast<size_t>(got));
        if (p.in.size() < kHelloBytes) continue;
        const int r = HelloRank(p.in, nonce_);
        done_pending.push_back(static_cast<size_t>(w));
        const bool ok = r >= 0 && r < rank_ && slots_[r]->state != Slot::kUp && slots_[r]->state != Slot::kLost &&
                        slots_[r]->state != Slot::kLeft;
        const std::string reply = Hello(nonce_, rank_);
        if (!ok || send(p.fd, reply.data(), reply.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(reply.size())) {
          Close(p.fd);
          continue;
        }
        Slot* s = slots_[r];
        Close(s->fd);
        s->fd = p.fd;
        p.fd = -1;
        s->state = Slot::kUp;
        s->last_rx = now;
        s->in = p.in.substr(kHelloBytes);
        frames(r);
        continue;
      }
      Slot* s = slots_[w];
      if (s->state == Slot::kConnecting) {
        if (ev == 0) continue;
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        const std::string hello = Hello(nonce_, rank_);
        if (err != 0 || send(s->fd, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) {
          retry_later(w);
          continue;
        }
        s->state = Slot::kHelloSent;
        s->since = now;
        continue;
      }
      if (ev == 0) continue;
      char buf[4096];
      ssize_t got = 0;
      bool ended = false;
      for (;;) {
        got = recv(s->fd, buf, sizeof buf, 0);
        if (got > 0) {
          s->in.append(buf, static_cast<size_t>(got));
          continue;
        }
        ended = got == 0 || (errno != EAGAIN && errno != EINTR);
        break;
      }
      if (s->state == Slot::kHelloSent) {
        if (s->in.size() >= kHelloBytes) {
          if (HelloRank(s->in, nonce_) != w) {  // someone else listens there: try the next address
            retry_later(w);
            continue;
          }
          s->in.erase(0, kHelloBytes);
          s->state = Slot::kUp;
          s->last_rx = now;
        } else if (ended) {
          retry_later(w);
          continue;
        } else {
          continue;
        }
      }
      s->last_rx = now;
      if (!frames(w)) continue;
      if (ended) {
        if (s->said_bye) {
          Close(s->fd);
          s->state = Slot::kLeft;
        } else {
          lose(w, "its process exited");
        }
      }
    }
    std::sort(done_pending.begin(), done_pending.end());
    for (size_t k = done_pending.size(); k-- > 0;) {
      Close(pending[done_pending[k]].fd);
      pending.erase(pending.begin() + static_cast<long>(done_pending[k]));
    }
    // Timeouts: handshakes that hang, accepted connections that never say hello, silence.
    for (size_t k = pending.size(); k-- > 0;) {
      if (Seconds(now - pending[k].since) > 5) {
        Close(pending[k].fd);
        pending.erase(pending.begin() + static_cast<long>(k));
      }
    }
    for (int r = 0; r < n; r++) {
      Slot* s = slots_[r];
      if ((s->state == Slot::kConnecting || s->state == Slot::kHelloSent) && Seconds(now - s->since) > 2) {
        retry_later(r);
      } else if (s->state == Slot::kUp && !s->said_bye && silence_s_ > 0 && Seconds(now - s->last_rx) > silence_s_) {
        char why[160];
        std::snprintf(why, sizeof why,
                      "no heartbeat from it for %.1f s (its host or network link is down, or the process is stopped)",
                      Seconds(now - s->last_rx));
        lose(r, why);
      }
    }
    if (now >= next_beat) {
      WriteAll("h");
      next_beat = now + beat;
    }
  }
  for (Pending& p : pending) Close(p.fd);
}

}  // namespace tspto
