// Internals of the preloaded traffic profiler (libtiresias_profiler.so):
// the per-process recorder that the interposed calls (preload_io.cc,
// preload_verbs.cc) report to. Not a public API; nothing here is used
// outside the library.
//
// Cost model. When the process was started without TIRESIAS_PROFILE_OUT,
// or once recording has stopped, an interposed call is the real call plus
// one relaxed atomic load and a branch (Recording()). While recording, a
// call on a file descriptor that is not a socket adds a table lookup; a
// message on a socket adds a clock read and a short critical section that
// formats one line into a buffer. The buffer goes to the file by open,
// write, close at most every 100 ms or 64 KiB, at a stop, a fork, an exec
// and an exit, never holding a descriptor of the job's between calls.
//
// Safety. The library allocates nothing, starts no thread, installs no
// signal handler and keeps no descriptor open. Every recording path saves
// and restores errno, and any failure (the file cannot be written) only
// stops recording. A signal handler that sends while its thread is inside
// the recorder is passed through unrecorded (a thread-local flag), so the
// recorder's mutex is never taken twice by one thread.
//
// Built with no C++ runtime (no exceptions, no RTTI, no libstdc++ calls):
// the library needs only libc, so it can be preloaded into any program.
#ifndef TIRESIAS_PROFILER_PRELOAD_RECORDER_H_
#define TIRESIAS_PROFILER_PRELOAD_RECORDER_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>

namespace tiresias::profiler::preload {

enum State : int { kOff = 0, kRecording = 1, kStopped = 2 };

extern std::atomic<int> g_state;

// True while this process records. The only cost of the library when off.
inline bool Recording() {
  return __builtin_expect(g_state.load(std::memory_order_relaxed) == kRecording,
                          0);
}

// The real definition of `name` (the next one after this library in the
// lookup order), or nullptr. Thread-safe; callers cache the result.
void* NextSymbol(const char* name);

// `sent` bytes of a send of `requested` bytes went out on `fd`. A send
// that wrote less than asked (a non-blocking socket) is continued by the
// next send on the fd, and the pieces are one message. Ignores descriptors
// that are not TCP or Unix sockets (decided once per descriptor).
void OnSocketSend(int fd, size_t requested, size_t sent);

// `fd` was closed or will be reused: forget what is known of it (a
// message in pieces is recorded as it stands).
void ForgetFd(int fd);
// Forgets every descriptor in [first, last].
void ForgetFdRange(unsigned first, unsigned last);

// One message of `bytes` on the verbs queue pair `qp_num`; `peer` is
// called (outside any lock) the first time the queue pair is seen, to
// describe its remote end into `out` (size `size`).
void OnVerbsSend(uint32_t qp_num, uint64_t bytes,
                 void (*peer)(void* arg, char* out, size_t size), void* arg);

// Writes what is buffered to the file; `final` also stops recording (an
// exit). Safe to call whether or not recording; does nothing in a child
// of vfork(), which shares this memory with its parent until it execs or
// exits (CPython's subprocess uses vfork).
void Flush(bool final);

}  // namespace tiresias::profiler::preload

#endif  // TIRESIAS_PROFILER_PRELOAD_RECORDER_H_
