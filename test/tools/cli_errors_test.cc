// Bad input to the real binaries: a one-line error naming the problem, a non-zero exit, no crash.
#include <fstream>
#include <sstream>

#include "test/helpers/expect.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

using Catch::Matchers::Contains;

namespace {

std::string replaceOnce(std::string s, const std::string &from, const std::string &to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

/// A fit_a_line model in `dir` (main/startup as .pb and .pbtxt) training on `dataFile` as csv.
void makeModel(const std::string &dir, const std::string &dataArgs) {
  std::string out;
  int rc = runCommand(binDir() + "/oar-model --model=linear --in=2 --out=1 --batch-size=2 --text " +
                          dataArgs + " -o " + dir,
                      out);
  REQUIRE(rc == 0);
}

/// Runs oar-executor and checks: exit 1, exactly one line, which starts with the tool's prefix
/// and contains every `needles`.
void expectOneLineError(const std::string &args, std::vector<std::string> needles) {
  std::string out;
  int rc = runCommand(binDir() + "/oar-executor " + args, out);
  INFO("oar-executor " << args << "\n" << out);
  CHECK(rc == 1);
  llvm::StringRef text = llvm::StringRef(out).rtrim();
  CHECK(text.count('\n') == 0);
  CHECK(text.startswith("oar-executor: error: "));
  for (const std::string &n : needles)
    CHECK_THAT(out, Contains(n));
}

} // namespace

TEST_CASE("oar-executor refuses bad input with one clear line", "[tools][errors]") {
  std::string dir = scratchDir("cli_errors");
  writeFile(dir + "/rows.csv", "1,2,3\n4,5,6\n7,8,9\n");
  makeModel(dir, "--format=csv --data=" + dir + "/rows.csv");
  std::string startup = " --startup " + dir + "/startup.pb";
  std::string mainText = readFile(dir + "/main.pbtxt");

  SECTION("a truncated program file") {
    std::string bytes = readFile(dir + "/main.pb");
    writeFile(dir + "/cut.pb", bytes.substr(0, bytes.size() / 3));
    expectOneLineError("--main " + dir + "/cut.pb" + startup, {"cut.pb"});
  }
  SECTION("a file that is not protobuf") {
    writeFile(dir + "/junk.pb", "\x89PNG\r\n\x1a\n not a program");
    expectOneLineError("--main " + dir + "/junk.pb" + startup, {"junk.pb"});
  }
  SECTION("an unknown op") {
    writeFile(dir + "/bad.pbtxt", replaceOnce(mainText, "type: \"mean\"", "type: \"meen\""));
    expectOneLineError("--main " + dir + "/bad.pbtxt" + startup,
                       {"bad.pbtxt", "unknown op type \"meen\""});
  }
  SECTION("a var used but not declared") {
    writeFile(dir + "/bad.pbtxt",
              replaceOnce(mainText, "names: \"fc_0.w_0\"", "names: \"fc_9.w_0\""));
    expectOneLineError("--main " + dir + "/bad.pbtxt" + startup,
                       {"var fc_9.w_0 is used but not declared"});
  }
  SECTION("mismatched shapes") {
    writeFile(dir + "/bad.pbtxt", replaceOnce(mainText, "dims: [2, 1]", "dims: [3, 1]"));
    expectOneLineError("--main " + dir + "/bad.pbtxt" + startup,
                       {"op #0 (mul)", "must equal Y's rows"});
  }
  SECTION("a missing data file") {
    writeFile(dir + "/bad.pbtxt", replaceOnce(mainText, "rows.csv", "gone.csv"));
    expectOneLineError("--main " + dir + "/bad.pbtxt" + startup, {"gone.csv"});
  }
  SECTION("a malformed data row") {
    writeFile(dir + "/rows.csv", "1,2,3\n4,x,6\n");
    expectOneLineError("--main " + dir + "/main.pb" + startup, {"rows.csv:2: malformed row"});
  }
  SECTION("a .npy of the wrong shape or dtype for --load") {
    std::string ckpt = dir + "/ckpt";
    std::string out;
    REQUIRE(runCommand(binDir() + "/oar-executor --main " + dir + "/main.pb" + startup +
                           " --save " + ckpt,
                       out) == 0);
    std::string b = readFile(ckpt + "/fc_0.b_0.npy"), w = readFile(ckpt + "/fc_0.w_0.npy");
    writeFile(ckpt + "/fc_0.b_0.npy", w); // [2,1] where [1] belongs
    expectOneLineError("--main " + dir + "/main.pb" + startup + " --load " + ckpt,
                       {"fc_0.b_0.npy", "f32[2,1]", "var fc_0.b_0 is f32[1]"});
    writeFile(ckpt + "/fc_0.b_0.npy", replaceOnce(b, "<f4", "<i4"));
    expectOneLineError("--main " + dir + "/main.pb" + startup + " --load " + ckpt,
                       {"fc_0.b_0.npy", "i32[1]"});
  }
  SECTION("CURVE key flags that cannot work") {
    std::string out;
    REQUIRE(runCommand("cd " + dir + " && " + binDir() + "/oar-keygen a b", out) == 0);
    CHECK_THAT(out, Contains("a.key, a.pub: public key "));
    CHECK(runCommand("cd " + dir + " && " + binDir() + "/oar-keygen a", out) == 1);
    CHECK_THAT(out, Contains("oar-keygen: error: a.key: cannot create: File exists"));
    writeFile(dir + "/two.allow", readFile(dir + "/a.pub") + readFile(dir + "/b.pub"));
    std::string trainer = "--role trainer --pservers 127.0.0.1:9 --main " + dir + "/main.pb" +
                          startup + " --connect-timeout-ms 100";
    expectOneLineError(trainer + " --curve-allow " + dir + "/two.allow",
                       {"--curve-server-key and --curve-allow need --curve-secret"});
    expectOneLineError(trainer + " --curve-secret " + dir + "/none.key", {"none.key: cannot read"});
    expectOneLineError(trainer + " --curve-secret " + dir + "/a.pub", {"a.pub: no secret-key"});
    expectOneLineError(trainer + " --curve-secret " + dir + "/a.key --curve-server-key " + dir +
                           "/two.allow",
                       {"two.allow: holds 2 public keys; the pservers share one key pair"});
    expectOneLineError(trainer + " --curve-secret " + dir + "/a.key",
                       {"needs the pservers' public key (--curve-server-key FILE)"});
  }
}

TEST_CASE("oar-model refuses unknown choices by name", "[tools][errors]") {
  std::string out;
  CHECK(runCommand(binDir() + "/oar-model --model=resnet -o " + scratchDir("model_err"), out) == 1);
  CHECK_THAT(out, Contains("unknown --model \"resnet\""));
  CHECK(runCommand(binDir() + "/oar-model --optimizer=rmsprop -o " + scratchDir("model_err"),
                   out) == 1);
  CHECK_THAT(out, Contains("unknown optimizer \"rmsprop\""));
}

TEST_CASE("oar-show lists and draws a program", "[tools]") {
  std::string dir = scratchDir("show");
  makeModel(dir, "");
  std::string out;
  REQUIRE(runCommand(binDir() + "/oar-show " + dir + "/main.pb", out) == 0);
  CHECK_THAT(out, Contains("fc_0.tmp_0 = mul(X: x, Y: fc_0.w_0) {x_num_col_dims=1}"));
  REQUIRE(runCommand(binDir() + "/oar-show --dot " + dir + "/main.pbtxt", out) == 0);
  CHECK_THAT(out, Contains("digraph oar"));
}

TEST_CASE("oar-executor trains fit_a_line, writes metrics and a numpy checkpoint", "[tools]") {
  std::string dir = scratchDir("fit_a_line_cli");
  std::string out;
  REQUIRE(runCommand(binDir() +
                         "/oar-model --model=linear --in=13 --out=1 --lr=0.01 --batch-size=20 "
                         "--epochs=10 --format=uci_housing --data=" +
                         sourceDir() + "/data/uci_housing/housing.data -o " + dir,
                     out) == 0);
  int rc = runCommand(binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir +
                          "/startup.pb --metrics " + dir + "/m.csv --save " + dir + "/ckpt",
                      out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Contains("test: 102 rows, loss"));
  std::string csv = readFile(dir + "/m.csv");
  CHECK(llvm::StringRef(csv).startswith("step,epoch,phase,loss,samples_per_sec\n0,0,train,"));
  CHECK(llvm::StringRef(csv).count('\n') == 211); // header + 21 steps x 10 epochs
  CHECK(readFile(dir + "/ckpt/fc_0.w_0.npy").substr(1, 5) == "NUMPY");
}

TEST_CASE("the C++ examples write programs that verify and train", "[tools]") {
  std::string dir = scratchDir("examples");
  std::string out, mnist = sourceDir() + "/data/mnist/";
  REQUIRE(runCommand(binDir() + "/example_fit_a_line " + dir + " " + sourceDir() +
                         "/data/uci_housing/housing.data",
                     out) == 0);
  int rc = runCommand(
      binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir + "/startup.pb", out);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Contains("test: 102 rows"));
  for (const char *ex : {"example_mnist_mlp", "example_mnist_lenet"}) {
    std::string sub = dir + "/" + ex;
    llvm::sys::fs::create_directories(sub);
    REQUIRE(runCommand(binDir() + "/" + ex + " " + sub + " " + mnist +
                           "t10k-images-idx3-ubyte.gz " + mnist + "t10k-labels-idx1-ubyte.gz " +
                           mnist + "t10k-images-idx3-ubyte.gz " + mnist +
                           "t10k-labels-idx1-ubyte.gz",
                       out) == 0);
    CHECK(runCommand(binDir() + "/oar-show " + sub + "/main.pb", out) == 0);
    CHECK_THAT(out, Contains("softmax_with_cross_entropy"));
  }
}
