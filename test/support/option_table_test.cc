// Settings declared once (support/option_table.h): their defaults and help, setting them from
// text, refusals that name the option, and the checks across options; and the node's whole table.
#include <catch2/catch.hpp>

#include "runtime/node/node_options.h"
#include "support/error.h"
#include "support/option_table.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

const OptionTable::Option &find(const OptionTable &t, const std::string &name) {
  for (const OptionTable::Option &o : t.options())
    if (o.name == name)
      return o;
  FAIL("no option " << name);
  return t.options().front();
}

enum class Colour { Red, Blue };

} // namespace

TEST_CASE("an option table sets its fields from text and keeps the defaults of those not given",
          "[support]") {
  int64_t every = 100;
  std::optional<int64_t> id;
  bool quiet = false, slice = true;
  std::string dir;
  std::chrono::milliseconds wait{3000};
  Colour colour = Colour::Blue;
  OptionTable t;
  t.group("g").add("every", every, "steps", 0).add("id", id, "an id").add("quiet", quiet, "q");
  t.add("slice", slice, "s").add("dir", dir, "DIR", "d").add("wait-ms", wait, "w", 10);
  t.choice("colour", colour, {{"red", Colour::Red}, {"blue", Colour::Blue}}, "c");
  CHECK(find(t, "every").help == "steps (default 100)");
  CHECK(find(t, "slice").help == "s (default true)");
  CHECK(find(t, "colour").help == "c (default blue)");
  CHECK(find(t, "colour").valueName == "red | blue");
  CHECK(find(t, "id").help == "an id"); // unset unless given: no default to show
  CHECK(find(t, "quiet").isSwitch);
  CHECK(find(t, "wait-ms").group == "g");

  REQUIRE_OK(t.set("every", "7"));
  REQUIRE_OK(t.set("--quiet", "")); // a switch given alone
  REQUIRE_OK(t.set("slice", "false"));
  REQUIRE_OK(t.set("wait_ms", "250")); // Paddle's underscores name the same option
  REQUIRE_OK(t.set("colour", "red"));
  REQUIRE_OK(t.finish());
  CHECK(every == 7);
  CHECK(!id);
  CHECK(quiet);
  CHECK(!slice);
  CHECK(dir.empty());
  CHECK(wait == std::chrono::milliseconds(250));
  CHECK(colour == Colour::Red);
}

TEST_CASE("a value an option cannot take is refused naming the option, the value and why",
          "[support][errors]") {
  int64_t every = 100;
  int streams = 1;
  double mb = 1;
  bool on = false;
  Colour colour = Colour::Red;
  OptionTable t;
  t.add("every", every, "", 0).add("streams", streams, "", 1, 8).add("mb", mb, "", 0, 10);
  t.add("on", on, "").choice("colour", colour, {{"red", Colour::Red}}, "");
  CHECK(errorText(t.set("every", "-1")) == "--every -1: must be from 0 to 9223372036854775807");
  CHECK(errorText(t.set("every", "ten")) == "--every ten: not an integer");
  CHECK(errorText(t.set("streams", "9")) == "--streams 9: must be from 1 to 8");
  CHECK(errorText(t.set("mb", "inf")) == "--mb inf: not a number");
  CHECK(errorText(t.set("mb", "11")) == "--mb 11: must be from 0 to 10");
  CHECK(errorText(t.set("on", "yes")) == "--on yes: expected true or false");
  CHECK(errorText(t.set("colour", "green")) == "--colour green: expected red");
  CHECK(errorText(t.set("colours", "red")) == "unknown option colours");
  CHECK(every == 100); // nothing refused was stored
  CHECK(streams == 1);
}

TEST_CASE("the checks across options run at the end, in order, and stop at the first failure",
          "[support][errors]") {
  std::vector<int> ran;
  OptionTable t;
  t.check([&]() -> llvm::Error {
    ran.push_back(1);
    return llvm::Error::success();
  });
  t.check([&]() -> llvm::Error {
    ran.push_back(2);
    return makeError("the second check");
  });
  t.check([&]() -> llvm::Error {
    ran.push_back(3);
    return llvm::Error::success();
  });
  CHECK(errorText(t.finish()) == "the second check");
  CHECK(ran == std::vector<int>{1, 2});
}

TEST_CASE("a node's table declares each flag once, with the settings types' defaults, and sets "
          "the plan's mode from --mode and --hybrid-tables together",
          "[support][runtime]") {
  runtime::NodeOptions o;
  OptionTable t;
  o.declare(t);
  std::set<std::string> names;
  for (const OptionTable::Option &opt : t.options()) {
    INFO(opt.name);
    CHECK(names.insert(opt.name).second);
    CHECK_FALSE(opt.help.empty());
  }
  CHECK(names.size() == 59); // every flag of oar-executor but --help and --version
  CHECK(find(t, "checkpoint-every").help == "steps between checkpoints (0: only on request, "
                                            "kill -USR1 PID, and at the end) (default 100)");
  CHECK_THAT(find(t, "min-block-size").help, Contains("(default 8192)"));
  CHECK_THAT(find(t, "first-bucket-mb").help, Contains("(default 1)"));
  CHECK_THAT(find(t, "idle-timeout-ms").help, Contains("(default 600000)"));

  REQUIRE_OK(t.set("mode", "hybrid"));
  REQUIRE_OK(t.set("hybrid-tables", "async"));
  REQUIRE_OK(t.set("table-memory-mb", "200"));
  REQUIRE_OK(t.set("bucket-mb", "0.5"));
  REQUIRE_OK(t.finish());
  CHECK(o.config.hybrid);
  CHECK(o.config.mode == Mode::Async);
  CHECK(o.pserver.tableBudget.bytes == int64_t(200) << 20);
  CHECK(o.config.bucketBytes == 524288);

  runtime::NodeOptions bad;
  OptionTable badTable;
  bad.declare(badTable);
  REQUIRE_OK(badTable.set("hybrid-tables", "async"));
  CHECK_THAT(errorText(badTable.finish()),
             Contains("--hybrid-tables=async is for --mode hybrid; this job runs sync"));
  CHECK(errorText(badTable.set("table-memory-mb", "-1")) ==
        "--table-memory-mb -1: must be 0 (no limit) to 2^30");
}
