// A keyless job on one host serves only its own user's processes: another user's process can
// neither join it, read a param nor end it.
#include <cstdlib>
#include <unistd.h>

#include "runtime/cluster/launcher.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"
#include "test/helpers/skip.h"

using namespace oar;
using Catch::Matchers::Contains;

TEST_CASE("without CURVE keys a pserver on loopback refuses every process of another user, over "
          "its local socket and over TCP",
          "[runtime][e2e][security]") {
  std::string out;
  if (std::string why = whyNobodyCannotRun("oar-executor"); !why.empty()) {
    OAR_SKIP(why);
  }
  // Nobody cannot enter the test scratch folder (0750): the model goes to a folder of its own.
  char tmpl[] = "/tmp/oar-keyless-test.XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  std::string dir = tmpl;
  makeFitALine(dir + "/model", "--lr=0.003 --batch-size=10 --epochs=2");
  REQUIRE(runCommand("chmod -R a+rX " + dir, out) == 0);
  std::shared_ptr<runtime::HeldPort> port = holdPort();
  std::string ep = endpointOf(*port);
  std::string node = binDir() + "/oar-executor --pservers " + ep +
                     " --trainers 1 --main model/main.pb --startup model/startup.pb "
                     "--connect-timeout-ms 3000 --reply-timeout-ms 3000 ";
  std::string nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  out =
      run("cd " + dir + " && (" + handOver(*port) + " " + node + "--role pserver --endpoint " + ep +
          " > ps.log 2>&1 & pid=$!; "
          "for i in $(seq 300); do grep -q serving ps.log && break; sleep 0.05; done; " +
          // The trainer's own direct link refuses a pserver of another user; through libzmq
          // (OAR_DIRECT_LINKS=0) it reaches the socket, where the pserver must refuse it.
          nobody + "env OAR_DIRECT_LINKS=0 " + node +
          "--role trainer --trainer-id 0 > ipc.log 2>&1; echo \"ipc rc $?\"; " + nobody +
          "env OAR_LOCAL_TCP=1 " + node +
          "--role trainer --trainer-id 0 > tcp.log 2>&1; echo \"tcp rc $?\"; " + node +
          "--role trainer --trainer-id 0 --save own > own.log 2>&1; echo \"own rc $?\"; "
          "wait $pid; echo \"pserver rc $?\")");
  std::string logs = readFile(dir + "/ipc.log") + readFile(dir + "/tcp.log") +
                     readFile(dir + "/own.log") + readFile(dir + "/ps.log");
  INFO(out << logs);
  CHECK_THAT(out, Contains("ipc rc 1") && Contains("tcp rc 1") && Contains("own rc 0") &&
                      Contains("pserver rc 0"));
  CHECK_THAT(readFile(dir + "/ipc.log"),
             Contains("a process of another user (uid 65534) is refused"));
  CHECK_THAT(readFile(dir + "/tcp.log"), Contains("not TCP peers"));
  runCommand("rm -rf " + dir, out);
}

TEST_CASE("without CURVE keys a scheduler on loopback takes no registration from a process of "
          "another user, over its local socket or over TCP",
          "[runtime][e2e][security][scheduler]") {
  std::string out;
  if (std::string why = whyNobodyCannotRun("oar-executor"); !why.empty()) {
    OAR_SKIP(why);
  }
  char tmpl[] = "/tmp/oar-keyless-scheduler-test.XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  std::string dir = tmpl;
  makeFitALine(dir + "/model", "--lr=0.003 --batch-size=10 --epochs=2");
  REQUIRE(runCommand("chmod -R a+rX " + dir, out) == 0);
  // The scheduler takes its port over; each refused pserver is handed the same one in turn.
  std::shared_ptr<runtime::HeldPort> schedPort = holdPort(), psPort = holdPort();
  std::string sched = endpointOf(*schedPort), ps = endpointOf(*psPort);
  std::string takeSched = handOver(*schedPort) + " ", takePs = handOver(*psPort) + " ";
  std::string node = binDir() + "/oar-executor --scheduler " + sched +
                     " --pserver-count 1 --trainers 1 --register-timeout-ms 3000 "
                     "--main model/main.pb --startup model/startup.pb ";
  std::string nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  // Another user's "pserver 0" would get every gradient of the job: it must not register, over
  // the scheduler's local socket (the uid the kernel names) or over TCP (no user at all).
  out = run("cd " + dir + " && (" + takeSched + node + "--role scheduler > sched.log 2>&1 & " +
            "pid=$!; " +
            "for i in $(seq 300); do grep -q 'waiting for' sched.log && break; sleep 0.05; done; " +
            nobody + takePs + node + "--role pserver --endpoint " + ps +
            " > ipc.log 2>&1; echo \"ipc rc $?\"; " + nobody + takePs + "env OAR_LOCAL_TCP=1 " +
            node + "--role pserver --endpoint " + ps + " > tcp.log 2>&1; echo \"tcp rc $?\"; " +
            "wait $pid; echo \"scheduler rc $?\")");
  std::string logs =
      readFile(dir + "/ipc.log") + readFile(dir + "/tcp.log") + readFile(dir + "/sched.log");
  INFO(out << logs);
  CHECK_THAT(out, Contains("ipc rc 1") && Contains("tcp rc 1") && Contains("scheduler rc 1"));
  CHECK_THAT(readFile(dir + "/ipc.log"),
             Contains("refused this pserver: a process of another user (uid 65534) is refused"));
  CHECK_THAT(readFile(dir + "/tcp.log"), Contains("not TCP peers"));
  CHECK_THAT(readFile(dir + "/sched.log"),
             Contains("only 0 of 1 pserver(s) and 0 of 1 trainer(s)"));
  runCommand("rm -rf " + dir, out);
}
