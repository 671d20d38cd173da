// The direct-link channel: a ZmtpLink to a pserver of this host.
#include "runtime/transport/channel.h"
#include "runtime/transport/zmtp_link.h"
#include "support/error.h"

namespace oar::runtime {
namespace {

class LinkChannel final : public Channel {
public:
  explicit LinkChannel(std::unique_ptr<ZmtpLink> link) : link_(std::move(link)) {}

  llvm::Error send(EncodedMessage &&message, std::chrono::milliseconds timeout) override {
    llvm::SmallVector<llvm::ArrayRef<uint8_t>, 2> frames{
        {message.header.data<uint8_t>(), message.header.size()}};
    if (!message.payload.empty())
      frames.push_back(message.payload);
    return link_->send(frames, timeout);
  }

  llvm::Expected<std::optional<Frames>> receive(std::chrono::milliseconds wait) override {
    llvm::Expected<std::optional<std::vector<zmq::message_t>>> got = std::nullopt;
    try {
      got = link_->receive(wait);
    } catch (const zmq::error_t &e) { // libzmq could not allocate a frame
      return makeError("cannot receive: {0}", e.what());
    }
    if (!got)
      return got.takeError();
    if (!*got)
      return std::nullopt;
    return Frames(std::move(**got));
  }

  ChannelNews news() override {
    ChannelNews news;
    news.dropped = link_->peerHungUp();
    return news;
  }

  bool peerClosed() const override { return link_->peerClosed(); }
  pid_t peerPid() const override { return link_->peerPid(); }
  bool direct() const override { return true; }

private:
  std::unique_ptr<ZmtpLink> link_;
};

} // namespace

llvm::Expected<std::unique_ptr<Channel>> openLink(const std::string &ipcAddress,
                                                  std::chrono::milliseconds timeout,
                                                  std::function<bool()> shouldStop) {
  auto link = ZmtpLink::connect(ipcAddress, timeout, announcedPayloadBytes);
  if (!link) {
    // Refusals become the channel's, in the words a DEALER's failed handshake gets.
    return llvm::handleErrors(link.takeError(), [](const ZmtpRefusal &r) -> llvm::Error {
      return llvm::make_error<ChannelRefused>(
          r.wantsCurve() ? "the ZeroMQ handshake failed: does it require CURVE keys "
                           "(--curve-secret, --curve-server-key)?"
                         : r.message());
    });
  }
  (*link)->setShouldStop(std::move(shouldStop));
  return std::unique_ptr<Channel>(std::make_unique<LinkChannel>(std::move(*link)));
}

} // namespace oar::runtime
