// CURVE: key files, and a pserver that serves listed trainer keys only.
#include <arpa/inet.h>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "runtime/security/curve.h"
#include "test/helpers/expect.h"
#include "test/runtime/pserver_job.h"

using namespace oar;
using namespace oar::runtime;
using namespace oar::test;
using Catch::Matchers::Contains;

namespace {

void writeText(const std::string &path, const std::string &text) { std::ofstream(path) << text; }

/// A key pair written by oar-keygen's code under `dir`/`name`.
CurveKeyPair keyPair(const std::string &dir, const std::string &name) {
  CurveKeyPair keys = requireValue(newCurveKeyPair());
  REQUIRE_OK(writeCurveKeyPair(keys, dir + "/" + name));
  return keys;
}

CurveConfig serverConfig(const CurveKeyPair &own, std::set<std::string> allowed) {
  CurveConfig c;
  c.own = own;
  c.allowed = std::move(allowed);
  return c;
}

CurveConfig trainerConfig(const CurveKeyPair &own, const std::string &serverKey) {
  CurveConfig c;
  c.own = own;
  c.serverKey = serverKey;
  return c;
}

/// What a peer without ZeroMQ sees: the mechanism in the greeting a pserver sends on its TCP
/// port (ZMTP 3: signature, version, a 20-byte mechanism name, ...).
std::string greetingMechanism(int port) {
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = -1;
  for (int attempt = 0; attempt < 60 && fd < 0; ++attempt) { // the pserver binds in its thread
    fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
      close(fd), fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  REQUIRE(fd >= 0);
  timeval timeout{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  // The start of a ZMTP 3 greeting (signature, major version): the pserver answers with its
  // whole greeting before it waits for ours to go on.
  std::string hello(11, '\0');
  hello[0] = '\xff', hello[9] = '\x7f', hello[10] = 3;
  REQUIRE(write(fd, hello.data(), hello.size()) == 11);
  std::string got(64, '\0');
  size_t have = 0;
  while (have < got.size()) {
    ssize_t n = read(fd, &got[have], got.size() - have);
    if (n <= 0)
      break;
    have += n;
  }
  close(fd);
  REQUIRE(have >= 32);
  return got.substr(12, 20).c_str();
}

/// Sends frames on `s` and says whether anything came back within `ms`.
bool answered(zmq::socket_t &s, const std::vector<std::string> &frames, int ms = 500) {
  for (size_t i = 0; i < frames.size(); ++i)
    (void)s.send(zmq::message_t(frames[i].data(), frames[i].size()),
                 (i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none) |
                     zmq::send_flags::dontwait);
  return receiveFrames(s, std::chrono::milliseconds(ms)).has_value();
}

} // namespace

TEST_CASE("CURVE key files: oar-keygen's pair reads back, and bad files are errors naming them",
          "[runtime][curve]") {
  std::string dir = scratchDir("curve_key_files");
  CurveKeyPair keys = keyPair(dir, "node");
  CurveKeyPair read = requireValue(readCurveSecretFile(dir + "/node.key"));
  CHECK(read.publicKey == keys.publicKey);
  CHECK(read.secretKey == keys.secretKey);
  struct stat st;
  REQUIRE(stat((dir + "/node.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600); // the secret is the owner's alone
  CHECK(requireValue(readCurvePublicKeys(dir + "/node.pub")) == std::set{keys.publicKey});
  CHECK(requireValue(readCurvePublicKeys(dir + "/node.key")) == std::set{keys.publicKey});
  CHECK_THAT(errorText(writeCurveKeyPair(keys, dir + "/node")),
             Contains("node.key: cannot create: File exists"));

  // An allow-list: bare keys and .pub lines, comments; Z85 keys may hold '#' and '='.
  CurveKeyPair other = requireValue(newCurveKeyPair());
  writeText(dir + "/allow",
            "# trainers\n" + keys.publicKey + "\n\n  public-key = \"" + other.publicKey + "\"\n");
  CHECK(requireValue(readCurvePublicKeys(dir + "/allow")) ==
        std::set{keys.publicKey, other.publicKey});
  CHECK(requireValue(decodeCurveKey("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")).size() == 32);

  writeText(dir + "/short", "public-key = \"abcde\"\n");
  CHECK_THAT(errorText(readCurvePublicKeys(dir + "/short")),
             Contains("short:1: a CURVE key is 40 Z85 characters, not 5"));
  writeText(dir + "/empty", "# nothing\n");
  CHECK_THAT(errorText(readCurvePublicKeys(dir + "/empty")), Contains("empty: no public key"));
  CHECK_THAT(errorText(readCurveSecretFile(dir + "/node.pub")),
             Contains("node.pub: no secret-key"));
  writeText(dir + "/mixed",
            "public-key = \"" + other.publicKey + "\"\nsecret-key = \"" + keys.secretKey + "\"\n");
  CHECK_THAT(errorText(readCurveSecretFile(dir + "/mixed")),
             Contains("mixed:1: the public key is not the secret key's"));
  CHECK_THAT(errorText(readCurveSecretFile(dir + "/missing")), Contains("missing: cannot read"));
  // A secret others can read is refused, as ssh refuses such a private key.
  writeText(dir + "/open.key", readFile(dir + "/node.key"));
  REQUIRE(chmod((dir + "/open.key").c_str(), 0640) == 0);
  CHECK_THAT(errorText(readCurveSecretFile(dir + "/open.key")),
             Contains("open.key: the secret key file is readable by others (mode 640): chmod 600"));
}

TEST_CASE("CURVE: a client without a listed key can neither push nor pull, and the listed "
          "trainers are served",
          "[runtime][curve]") {
  std::string dir = scratchDir("curve_pserver");
  CurveKeyPair server = keyPair(dir, "pserver"), t0Keys = keyPair(dir, "trainer.0"),
               t1Keys = keyPair(dir, "trainer.1"), intruder = keyPair(dir, "intruder");
  OnePserverJob job;
  LogLines log;
  auto served = job.serve("", &log, serverConfig(server, {t0Keys.publicKey, t1Keys.publicKey}));
  int port = std::stoi(llvm::StringRef(job.endpoint).rsplit(':').second.str());
  std::string grad(13 * 4, '\x01');
  std::vector<std::string> push{header(proto::SEND_VAR, "fc_0.w_0@GRAD", 0, {13, 1}), grad};
  std::vector<std::string> pull{header(proto::GET_VAR, "fc_0.w_0", 0), ""};

  // The pserver speaks nothing but CURVE, even to a peer that is not ZeroMQ.
  CHECK(greetingMechanism(port) == "CURVE");

  zmq::context_t ctx;
  {
    zmq::socket_t plain = rawClient(ctx, job.endpoint); // no keys at all
    CHECK_FALSE(answered(plain, {hello(job), ""}));
    CHECK_FALSE(answered(plain, push));
    CHECK_FALSE(answered(plain, pull));

    zmq::socket_t unlisted(ctx, zmq::socket_type::dealer); // keys, but not on the list
    unlisted.set(zmq::sockopt::linger, 0);
    unlisted.set(zmq::sockopt::curve_serverkey, server.publicKey);
    unlisted.set(zmq::sockopt::curve_publickey, intruder.publicKey);
    unlisted.set(zmq::sockopt::curve_secretkey, intruder.secretKey);
    unlisted.connect(zmqAddress(job.endpoint));
    CHECK_FALSE(answered(unlisted, {hello(job), ""}));
    CHECK_FALSE(answered(unlisted, push));
    CHECK_FALSE(answered(unlisted, pull));
  }
  // A trainer with an unlisted key is told so at once, not after its connect timeout.
  Timeouts unhurried = shortTimeouts();
  unhurried.connect = std::chrono::seconds(30);
  Communicator stranger(0, {job.endpoint}, unhurried, trainerConfig(intruder, server.publicKey));
  auto start = std::chrono::steady_clock::now();
  CHECK_THAT(errorText(stranger.connect(job.job())),
             Contains("trainer 0: pserver " + job.endpoint +
                      " refused this trainer's CURVE key (ZAP status 400)"));
  CHECK(std::chrono::steady_clock::now() - start < unhurried.connect / 2);
  // A trainer that trusts another server key never completes the handshake.
  CurveKeyPair impostor = requireValue(newCurveKeyPair());
  Communicator misled(0, {job.endpoint}, shortTimeouts(),
                      trainerConfig(t0Keys, impostor.publicKey));
  CHECK_THAT(errorText(misled.connect(job.job())),
             Contains("the ZeroMQ handshake with pserver " + job.endpoint +
                      " failed: does it "
                      "serve CURVE (--curve-secret) with the key pair whose public key is this "
                      "trainer's --curve-server-key?"));
  // IPC, as a local trainer connects. A loaded machine (the suite beside a sanitizer run) can
  // take seconds to report the failed handshake: allow 10.
  Timeouts patient = shortTimeouts();
  patient.connect = std::chrono::milliseconds(10000);
  Communicator keyless(0, {job.endpoint}, patient);
  CHECK_THAT(errorText(keyless.connect(job.job())), Contains("does it require CURVE keys"));

  // The listed trainers are served, and nothing of the others was applied.
  Executor exec;
  Scope fresh;
  REQUIRE_OK(exec.run(job.r.pserverStartup(0), fresh));
  Communicator t0(0, {job.endpoint}, shortTimeouts(), trainerConfig(t0Keys, server.publicKey));
  Communicator t1(1, {job.endpoint}, shortTimeouts(), trainerConfig(t1Keys, server.publicKey));
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  Tensor w;
  REQUIRE_OK(t1.getVars({"fc_0.w_0"}, {job.endpoint}, {&w}));
  CHECK(w.toVector<float>() == fresh.find("fc_0.w_0")->toVector<float>());
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete());
  CHECK(served.get() == "");
  std::string all;
  for (const std::string &l : log.lines)
    all += l + "\n";
  CHECK_THAT(all, Contains("CURVE: accepting 2 trainer key(s)") &&
                      Contains("refused a connection from 127.0.0.1: its CURVE key " +
                               intruder.publicKey + " is not on the allow-list") &&
                      Contains("refused a connection from a local process (pid " +
                               std::to_string(getpid())));
}

TEST_CASE("a CURVE node missing the other side's keys is refused before it starts",
          "[runtime][curve]") {
  OnePserverJob job;
  CurveKeyPair keys = requireValue(newCurveKeyPair());
  Node opts;
  opts.options.timeouts = shortTimeouts();
  opts.curve.own = keys; // neither an allow-list nor a server key
  CHECK_THAT(errorText(runPserver({job.r.pserver(0), job.r.pserverStartup(0)}, opts)),
             Contains("needs the trainers' public keys to accept (--curve-allow FILE)"));
  std::optional<EvalResult> eval;
  CHECK_THAT(errorText(runTrainer({job.r.trainer(), job.r.trainerStartup()}, opts, eval)),
             Contains("needs the pservers' public key (--curve-server-key FILE)"));
}
