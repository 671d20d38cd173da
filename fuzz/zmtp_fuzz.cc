// libFuzzer target: what a pserver's side of a ZMTP connection sends a trainer's ZmtpLink. The
// input is the peer's bytes from its greeting on, written into one end of a socket pair whose
// other end the link greets and then reads messages from until the bytes run out.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/transport/zmtp_link.h"
#include "runtime/wire/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return 0;
  // What fits in the socket's buffer (all of it, at libFuzzer's input sizes), then the end of
  // the stream: the link never waits.
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  ssize_t written = write(fds[0], data, size);
  (void)written;
  shutdown(fds[0], SHUT_WR);
  using std::chrono::milliseconds;
  auto link = oar::runtime::ZmtpLink::greet(fds[1], "fuzz peer", milliseconds(100),
                                            oar::runtime::announcedPayloadBytes);
  if (!link) {
    llvm::consumeError(link.takeError());
  } else {
    for (int i = 0; i < 64; ++i) { // every message it takes is decoded as the trainer does
      auto frames = (*link)->receive(milliseconds(0));
      if (!frames) {
        llvm::consumeError(frames.takeError());
        break;
      }
      if (!*frames)
        break;
      auto msg = oar::runtime::decodeMessage(**frames, 0);
      if (!msg)
        llvm::consumeError(msg.takeError());
    }
  }
  close(fds[0]);
  return 0;
}
