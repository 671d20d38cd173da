// Ports held from their choice until their server takes them over: no other process can take one
// in between.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;

namespace {
/// Whether a fresh socket can bind 127.0.0.1:`port` (as a server picked it, or any socket taking
/// it as its source port).
bool canBind(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}
} // namespace

TEST_CASE("a held port cannot be taken by anyone else until it is let go", "[runtime][transport]") {
  auto ports = requireValue(HeldPort::onLoopback(3));
  CHECK(ports[0].port() != ports[1].port());
  CHECK(ports[1].port() != ports[2].port());
  int port = ports[0].port();
  CHECK(ports[0].host() == "127.0.0.1");
  CHECK_FALSE(canBind(port));
  ports.clear();
  CHECK(canBind(port));
}

TEST_CASE("a pserver takes over the port handed to it and never binds it again",
          "[runtime][transport][e2e]") {
  // This test keeps its own copy of the socket open throughout: a pserver that bound the port
  // anew would fail (address in use) instead of serving.
  std::string dir = scratchDir("held_port_pserver");
  makeFitALine(dir + "/model", "--batch-size=20 --epochs=2");
  std::shared_ptr<HeldPort> port = holdPort();
  std::string ep = endpointOf(*port);
  std::string node = binDir() + "/oar-executor --main model/main.pb --startup model/startup.pb " +
                     "--trainers 1 --pservers " + ep + " --num-threads 1 ";
  std::string out = run("cd " + dir + " && (" + handOver(*port) + " " + node +
                        "--role pserver --endpoint " + ep + " > ps.log 2>&1 & ps=$!; " + node +
                        "--role trainer --trainer-id 0 > t.log 2>&1; echo \"trainer $?\"; "
                        "wait $ps; echo \"pserver $?\")");
  INFO(out << readFile(dir + "/ps.log") << readFile(dir + "/t.log"));
  CHECK_THAT(out, Contains("trainer 0") && Contains("pserver 0"));
  CHECK_THAT(readFile(dir + "/t.log"), Contains("trainer 0: trained 42 steps"));
}

TEST_CASE("a handed-over port that is not a listening socket is refused naming the variable",
          "[runtime][transport][e2e]") {
  std::string dir = scratchDir("held_port_bad");
  makeFitALine(dir + "/model", "--batch-size=20 --epochs=1");
  std::string node = binDir() + "/oar-executor --main " + dir + "/model/main.pb --startup " + dir +
                     "/model/startup.pb --trainers 1 --pservers 127.0.0.1:1 --endpoint "
                     "127.0.0.1:1 --role pserver";
  CHECK_THAT(errorLines(runFailing("OAR_LISTEN_FD=two " + node)),
             Contains("OAR_LISTEN_FD=two: not a file descriptor number (3 or more)"));
  CHECK_THAT(errorLines(runFailing("OAR_LISTEN_FD=1 " + node)),
             Contains("OAR_LISTEN_FD=1: not a file descriptor number (3 or more)"));
  // A file, open in the node as fd 7: not a socket.
  CHECK_THAT(errorLines(runFailing("OAR_LISTEN_FD=7 " + node + " 7<" + dir + "/model/main.pb")),
             Contains("OAR_LISTEN_FD=7: fd 7 is not a listening IPv4 TCP socket"));
  CHECK_THAT(errorLines(runFailing("OAR_LISTEN_FD=99 " + node)),
             Contains("OAR_LISTEN_FD=99: fd 99 is not a listening IPv4 TCP socket"));
}
