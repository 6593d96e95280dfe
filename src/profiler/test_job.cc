// Test-only: a small job with one mode per behaviour the preloaded
// profiler must get right, run by preload_test.cc and the CLI tests with
// and without the library. Every mode prints what it received (a byte
// count and checksum) so that runs with and without the profiler can be
// compared, and exits 0 when it worked.
//
//   unix N       N iterations of send, write, writev, sendmsg, sendto on a
//                Unix socket pair (100, 2000, 30, 100, 500 bytes), plus
//                writes to a file, a pipe and /dev/null
//   tcp N        a TCP connection on 127.0.0.1: 1000 and 10 bytes one
//                way and 10 back per iteration
//   fork         3 x 111 bytes, fork; the child 5 x 222 on the same socket
//                and 4 x 444 on its own; the parent 2 x 333 after
//   threads N M  N threads, each M messages of 1000 + its index bytes on
//                its own socket pair
//   reopen       10 bytes, close; a file on the same descriptor number
//                (77 bytes); a new socket on it (20 bytes); a file dup2()ed
//                over that (55 bytes)
//   partial      3 x 1 MiB on a non-blocking socket with a small buffer
//                and a slow reader, so each goes out in pieces
//   errno        errno is what the real calls left
//   exit         5 messages, then _exit(0) at once
//   hang         6 messages (the last after 150 ms), "ready", then sleeps
//   many N       N messages of 64 bytes
//   exec         3 x 99 bytes, then execs itself as `unix 2`
//   periodic N   N iterations of 4000, 1000, 500, 500 bytes, 20 ms apart
//   random N     N messages of random sizes at random times (seed 7)
//   quiet        sends nothing on any socket
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void Die(const char* what) {
  fprintf(stderr, "test_job: %s: %s\n", what, strerror(errno));
  exit(1);
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

std::vector<char> Payload(size_t n, int seed) {
  std::vector<char> data(n);
  for (size_t i = 0; i < n; ++i)
    data[i] = static_cast<char>((i * 31 + seed) & 0xff);
  return data;
}

void SendAll(int fd, const void* data, size_t n) {
  const ssize_t sent = send(fd, data, n, 0);
  if (sent != static_cast<ssize_t>(n)) Die("send");
}

// Reads everything from `fd` until EOF, summing bytes and a checksum.
struct Drain {
  explicit Drain(int fd, int delay_us = 0) {
    thread = std::thread([this, fd, delay_us] {
      char buf[4096];
      for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
          if (errno == EINTR) continue;
          break;
        }
        for (ssize_t i = 0; i < n; ++i) {
          sum = sum * 131 + static_cast<unsigned char>(buf[i]);
        }
        bytes += static_cast<uint64_t>(n);
        if (delay_us > 0) usleep(static_cast<useconds_t>(delay_us));
      }
    });
  }
  void Join() { thread.join(); }
  std::thread thread;
  uint64_t bytes = 0;
  uint64_t sum = 0;
};

void Pair(int sv[2]) {
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
}

int Unix(int iterations) {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) Die("pipe");
  Drain pipe_drain(pipe_fds[0]);
  char file_name[] = "/tmp/tiresias-test-job-XXXXXX";
  const int file = mkstemp(file_name);
  if (file < 0) Die("mkstemp");
  unlink(file_name);
  const int null = open("/dev/null", O_WRONLY);
  const auto a = Payload(2000, 1);
  for (int it = 0; it < iterations; ++it) {
    SendAll(sv[0], a.data(), 100);
    if (write(sv[0], a.data(), 2000) != 2000) Die("write");
    iovec iov[2] = {{const_cast<char*>(a.data()), 10},
                    {const_cast<char*>(a.data() + 10), 20}};
    if (writev(sv[0], iov, 2) != 30) Die("writev");
    iovec iov2[2] = {{const_cast<char*>(a.data()), 40},
                     {const_cast<char*>(a.data() + 40), 60}};
    msghdr msg{};
    msg.msg_iov = iov2;
    msg.msg_iovlen = 2;
    if (sendmsg(sv[0], &msg, 0) != 100) Die("sendmsg");
    if (sendto(sv[0], a.data(), 500, 0, nullptr, 0) != 500) Die("sendto");
    // Not sockets: none of these is a message.
    if (write(file, a.data(), 700) != 700) Die("write file");
    if (write(pipe_fds[1], a.data(), 300) != 300) Die("write pipe");
    if (write(null, a.data(), 900) != 900) Die("write null");
  }
  close(sv[0]);
  close(pipe_fds[1]);
  drain.Join();
  pipe_drain.Join();
  printf("received %llu bytes checksum %llu\n",
         static_cast<unsigned long long>(drain.bytes),
         static_cast<unsigned long long>(drain.sum));
  return 0;
}

int Tcp(int iterations) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("listen");
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Die("connect");
  }
  const int server = accept(listener, nullptr, nullptr);
  if (server < 0) Die("accept");
  const auto data = Payload(1000, 2);
  uint64_t total = 0;
  for (int it = 0; it < iterations; ++it) {
    SendAll(client, data.data(), 1000);
    SendAll(client, data.data(), 10);
    char buf[1010];
    size_t got = 0;
    while (got < sizeof buf) {
      const ssize_t n = recv(server, buf + got, sizeof buf - got, 0);
      if (n <= 0) Die("recv");
      got += static_cast<size_t>(n);
    }
    total += got;
    SendAll(server, buf, 10);
    char ack[10];
    got = 0;
    while (got < sizeof ack) {
      const ssize_t n = recv(client, ack + got, sizeof ack - got, 0);
      if (n <= 0) Die("recv ack");
      got += static_cast<size_t>(n);
    }
    total += got;
  }
  printf("received %llu bytes\n", static_cast<unsigned long long>(total));
  return 0;
}

int Fork() {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  const auto data = Payload(444, 3);
  for (int i = 0; i < 3; ++i) SendAll(sv[0], data.data(), 111);
  const pid_t child = fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    for (int i = 0; i < 5; ++i) SendAll(sv[0], data.data(), 222);
    int own[2];
    Pair(own);
    for (int i = 0; i < 4; ++i) {
      SendAll(own[0], data.data(), 444);
      char buf[444];
      size_t got = 0;
      while (got < sizeof buf) {
        const ssize_t n = read(own[1], buf + got, sizeof buf - got);
        if (n <= 0) Die("child read");
        got += static_cast<size_t>(n);
      }
    }
    exit(0);  // exit, not _exit: the library's destructor flushes
  }
  int status = 0;
  waitpid(child, &status, 0);
  for (int i = 0; i < 2; ++i) SendAll(sv[0], data.data(), 333);
  close(sv[0]);
  drain.Join();
  printf("received %llu bytes checksum %llu child %d\n",
         static_cast<unsigned long long>(drain.bytes),
         static_cast<unsigned long long>(drain.sum),
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

int Threads(int threads, int messages) {
  std::vector<std::thread> workers;
  std::atomic<uint64_t> total{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, messages, &total] {
      int sv[2];
      Pair(sv);
      const size_t size = 1000 + static_cast<size_t>(t);
      const auto data = Payload(size, t);
      std::vector<char> buf(size);
      for (int i = 0; i < messages; ++i) {
        SendAll(sv[0], data.data(), size);
        size_t got = 0;
        while (got < size) {
          const ssize_t n = read(sv[1], buf.data() + got, size - got);
          if (n <= 0) Die("thread read");
          got += static_cast<size_t>(n);
        }
        total += got;
      }
      close(sv[0]);
      close(sv[1]);
    });
  }
  for (auto& w : workers) w.join();
  printf("received %llu bytes\n",
         static_cast<unsigned long long>(total.load()));
  return 0;
}

int Reopen() {
  const auto data = Payload(100, 4);
  int sv[2];
  Pair(sv);
  const int first = sv[0];
  SendAll(first, data.data(), 10);
  close(first);
  char name[] = "/tmp/tiresias-test-job-XXXXXX";
  const int file = mkstemp(name);  // takes the lowest number: `first`
  if (file < 0) Die("mkstemp");
  unlink(name);
  if (write(file, data.data(), 77) != 77) Die("write file");
  close(file);
  int again[2];
  Pair(again);
  SendAll(again[0], data.data(), 20);
  int other[2];
  Pair(other);
  char name2[] = "/tmp/tiresias-test-job-XXXXXX";
  const int file2 = mkstemp(name2);
  unlink(name2);
  if (dup2(file2, again[0]) != again[0]) Die("dup2");
  if (write(again[0], data.data(), 55) != 55) Die("write dup2");
  printf("reused %s %s\n", file == first ? "yes" : "no",
         again[0] == first ? "yes" : "no");
  return 0;
}

int Partial() {
  int sv[2];
  Pair(sv);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  Drain drain(sv[1], 50);
  const auto data = Payload(1 << 20, 5);
  int pieces = 0;
  for (int m = 0; m < 3; ++m) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = send(sv[0], data.data() + done, data.size() - done, 0);
      if (n > 0) {
        done += static_cast<size_t>(n);
        ++pieces;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{sv[0], POLLOUT, 0};
        poll(&p, 1, 1000);
      } else {
        Die("send partial");
      }
    }
  }
  close(sv[0]);
  drain.Join();
  printf("received %llu bytes checksum %llu in %s pieces\n",
         static_cast<unsigned long long>(drain.bytes),
         static_cast<unsigned long long>(drain.sum),
         pieces > 3 ? "many" : "few");
  return 0;
}

int Errno() {
  int sv[2];
  Pair(sv);
  const auto data = Payload(10, 6);
  int failures = 0;
  errno = 4321;
  SendAll(sv[0], data.data(), 10);
  if (errno != 4321) ++failures;
  errno = 4321;
  if (write(sv[0], data.data(), 10) != 10 || errno != 4321) ++failures;
  if (send(-1, data.data(), 10, 0) != -1 || errno != EBADF) ++failures;
  if (write(12345, data.data(), 10) != -1 || errno != EBADF) ++failures;
  if (close(12345) != -1 || errno != EBADF) ++failures;
  errno = 4321;
  close(sv[1]);
  if (errno != 4321) ++failures;
  signal(SIGPIPE, SIG_IGN);
  if (send(sv[0], data.data(), 10, 0) != -1 || errno != EPIPE) ++failures;
  printf("errno %s\n", failures == 0 ? "ok" : "wrong");
  return failures == 0 ? 0 : 1;
}

int Exit() {
  int sv[2];
  Pair(sv);
  const auto data = Payload(50, 7);
  for (int i = 0; i < 5; ++i) SendAll(sv[0], data.data(), 50);
  printf("sent\n");
  fflush(stdout);
  _exit(0);
}

int Hang() {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  const auto data = Payload(60, 8);
  for (int i = 0; i < 5; ++i) SendAll(sv[0], data.data(), 60);
  SleepMs(150);
  SendAll(sv[0], data.data(), 60);
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}

int Many(int n) {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  const auto data = Payload(64, 9);
  for (int i = 0; i < n; ++i) SendAll(sv[0], data.data(), 64);
  close(sv[0]);
  drain.Join();
  printf("received %llu bytes\n", static_cast<unsigned long long>(drain.bytes));
  return 0;
}

int Exec(const char* self) {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  const auto data = Payload(99, 10);
  for (int i = 0; i < 3; ++i) SendAll(sv[0], data.data(), 99);
  SleepMs(10);  // let the reader take them
  char* const argv[] = {const_cast<char*>(self), const_cast<char*>("unix"),
                        const_cast<char*>("2"), nullptr};
  execv("/proc/self/exe", argv);
  Die("execv");
}

int Periodic(int iterations) {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  const auto data = Payload(4000, 11);
  for (int it = 0; it < iterations; ++it) {
    for (size_t size : {4000, 1000, 500, 500})
      SendAll(sv[0], data.data(), size);
    SleepMs(20);
  }
  close(sv[0]);
  drain.Join();
  printf("received %llu bytes checksum %llu\n",
         static_cast<unsigned long long>(drain.bytes),
         static_cast<unsigned long long>(drain.sum));
  return 0;
}

int Random(int n) {
  int sv[2];
  Pair(sv);
  Drain drain(sv[1]);
  srand(7);
  const auto data = Payload(20000, 12);
  for (int i = 0; i < n; ++i) {
    SendAll(sv[0], data.data(), 1 + static_cast<size_t>(rand() % 20000));
    SleepMs(rand() % 8);
  }
  close(sv[0]);
  drain.Join();
  printf("received %llu bytes\n", static_cast<unsigned long long>(drain.bytes));
  return 0;
}

int Quiet() {
  char name[] = "/tmp/tiresias-test-job-XXXXXX";
  const int file = mkstemp(name);
  unlink(name);
  if (write(file, "nothing", 7) != 7) Die("write");
  printf("quiet\n");
  return 0;
}

int Arg(int argc, char** argv, int i, int fallback) {
  return argc > i ? atoi(argv[i]) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "unix") return Unix(Arg(argc, argv, 2, 5));
  if (mode == "tcp") return Tcp(Arg(argc, argv, 2, 5));
  if (mode == "fork") return Fork();
  if (mode == "threads")
    return Threads(Arg(argc, argv, 2, 4), Arg(argc, argv, 3, 50));
  if (mode == "reopen") return Reopen();
  if (mode == "partial") return Partial();
  if (mode == "errno") return Errno();
  if (mode == "exit") return Exit();
  if (mode == "hang") return Hang();
  if (mode == "many") return Many(Arg(argc, argv, 2, 1000));
  if (mode == "exec") return Exec(argv[0]);
  if (mode == "periodic") return Periodic(Arg(argc, argv, 2, 10));
  if (mode == "random") return Random(Arg(argc, argv, 2, 200));
  if (mode == "quiet") return Quiet();
  fprintf(stderr, "test_job: unknown mode '%s'\n", mode.c_str());
  return 2;
}
