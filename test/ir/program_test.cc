// Program files: round trips, text errors, and the verifier's messages.
#include <fstream>
#include <set>

#include "api/optimizer.h"
#include "api/recipes.h"
#include "ir/listing.h"
#include "ir/names.h"
#include "ops/verify.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

static ModelBuilder smallMlp() {
  RecipeSpec s;
  s.model = "mlp", s.in = 4, s.hidden = {3}, s.out = 2, s.loss = "softmax_with_cross_entropy";
  s.optimizer = "adam";
  return requireValue(buildRecipe(s));
}

TEST_CASE("a program survives binary and text round trips unchanged", "[ir]") {
  ModelBuilder m = smallMlp();
  std::string dir = scratchDir("roundtrip");
  REQUIRE_OK(saveProgram(m.main(), dir + "/main.pb", "test"));
  REQUIRE_OK(saveProgram(m.main(), dir + "/main.pbtxt", "test"));
  proto::Program fromBinary = requireValue(loadProgram(dir + "/main.pb"));
  proto::Program fromText = requireValue(loadProgram(dir + "/main.pbtxt"));
  CHECK(fromBinary.SerializeAsString() == m.main().SerializeAsString());
  CHECK(fromText.SerializeAsString() == m.main().SerializeAsString());
  REQUIRE_OK(verifyProgram(fromText, "main.pbtxt"));
}

TEST_CASE("a program that cannot be written is an error, not the end of the process", "[ir]") {
  // The write fails at close (the stream buffers); an error left on an LLVM stream ends the
  // process from its destructor.
  ModelBuilder m = smallMlp();
  CHECK_THAT(errorText(saveProgram(m.main(), "/dev/full", "test")),
             Contains("/dev/full: write failed"));
}

// appendProgramBytes writes the default serialization, which equals the deterministic one only
// while no message of a program has a map field (maps serialize in hash order).
static void collectMapFields(const google::protobuf::Descriptor &d,
                             std::set<const google::protobuf::Descriptor *> &seen,
                             std::vector<std::string> &maps) {
  if (!seen.insert(&d).second)
    return;
  for (int i = 0; i < d.field_count(); ++i) {
    const google::protobuf::FieldDescriptor &f = *d.field(i);
    if (f.is_map())
      maps.push_back(f.full_name());
    if (f.message_type())
      collectMapFields(*f.message_type(), seen, maps);
  }
}

TEST_CASE("program messages have no map fields, so their bytes are deterministic", "[ir]") {
  std::set<const google::protobuf::Descriptor *> seen;
  std::vector<std::string> maps;
  collectMapFields(*proto::Program::descriptor(), seen, maps);
  CHECK(seen.size() > 5); // the walk reached the nested messages
  CHECK(maps == std::vector<std::string>{});
  std::string bytes = "head";
  REQUIRE(appendProgramBytes(smallMlp().main(), bytes));
  CHECK(bytes == "head" + smallMlp().main().SerializeAsString());
}

TEST_CASE("text parse errors give file, line and column", "[ir]") {
  std::string err =
      errorText(parseProgramText("version: 1\nblocks { idx: 0 nam: \"x\" }\n", "mlp.pbtxt"));
  CHECK_THAT(err, Contains("mlp.pbtxt:2:") && Contains("nam"));
}

TEST_CASE("a truncated or foreign binary file is refused by name", "[ir]") {
  ModelBuilder m = smallMlp();
  std::string bytes = m.main().SerializeAsString();
  std::string dir = scratchDir("truncated");
  {
    std::ofstream(dir + "/cut.pb") << bytes.substr(0, bytes.size() / 2);
    std::ofstream(dir + "/junk.pb") << "this is not protobuf at all \xff\xff\xff";
  }
  CHECK_THAT(errorText(loadProgram(dir + "/cut.pb")), Contains("cut.pb"));
  CHECK_THAT(errorText(loadProgram(dir + "/junk.pb")), Contains("junk.pb"));
  CHECK_THAT(errorText(loadProgram(dir + "/missing.pb")), Contains("missing.pb"));
}

TEST_CASE("the verifier names block, op, slot and var", "[ir]") {
  ModelBuilder m = smallMlp();
  REQUIRE_OK(verifyProgram(m.main(), "mlp"));

  SECTION("unknown op type") {
    m.main().mutable_blocks(0)->mutable_ops(1)->set_type("frobnicate");
    CHECK_THAT(errorText(verifyProgram(m.main(), "mlp")),
               Contains("mlp: block 0, op #1 (frobnicate): unknown op type"));
  }
  SECTION("a var used but not declared") {
    m.main().mutable_blocks(0)->mutable_ops(0)->mutable_inputs(0)->set_names(0, "ghost");
    CHECK_THAT(errorText(verifyProgram(m.main(), "mlp")),
               Contains("op #0 (mul)") && Contains("var ghost is used but not declared"));
  }
  SECTION("mismatched shapes") {
    proto::Var *w = findVar(*m.main().mutable_blocks(0), "fc_0.w_0");
    w->mutable_type()->set_dims(0, 5);
    CHECK_THAT(errorText(verifyProgram(m.main(), "mlp")),
               Contains("op #0 (mul)") && Contains("X's columns (4) must equal Y's rows (5)"));
  }
  SECTION("an attr of the wrong type") {
    setAttr(*m.main().mutable_blocks(0)->mutable_ops(0), "x_num_col_dims", AttrValue(1.5f));
    CHECK_THAT(errorText(verifyProgram(m.main(), "mlp")),
               Contains("attr x_num_col_dims is a float but must be a int"));
  }
  SECTION("a missing required slot") {
    m.main().mutable_blocks(0)->mutable_ops(0)->mutable_inputs()->RemoveLast();
    CHECK_THAT(errorText(verifyProgram(m.main(), "mlp")),
               Contains("required input slot Y is missing"));
  }
}

TEST_CASE("the listing shows one line per op with outputs on the left", "[ir]") {
  ModelBuilder m = smallMlp();
  std::string text = listing(m.main());
  CHECK_THAT(text, Contains("fc_0.tmp_0 = mul(X: img, Y: fc_0.w_0) {x_num_col_dims=1}"));
  CHECK_THAT(text, Contains("= adam(Param: fc_0.w_0, Grad: fc_0.w_0@GRAD"));
  CHECK_THAT(dotGraph({{"main", m.main()}}), Contains("digraph oar"));
}

TEST_CASE("a VarTable keeps one var per name and finds it by a name the caller no longer holds",
          "[ir]") {
  proto::Program prog = newProgram();
  proto::Block &block = *prog.mutable_blocks(0);
  VarTable vars(block);
  for (unsigned i = 0; i < 100; ++i) // temporaries, gone after each declare; the table regrows
    vars.declare(blockName("w", i), proto::F32, {2, 3});
  vars.declare(std::string("w.block7"), proto::F32, {4}); // retypes the one var
  REQUIRE(block.vars_size() == 100);
  for (unsigned i = 0; i < 100; ++i) {
    const proto::Var *v = vars.find(blockName("w", i));
    REQUIRE(v);
    CHECK(v->name() == "w.block" + std::to_string(i));
  }
  CHECK(vars.find("w.block7")->type().dims_size() == 1);
  CHECK(vars.find("w.block100") == nullptr);
}

TEST_CASE("derived names of blocks and trainer copies", "[ir]") {
  CHECK(blockName("fc_0.w_0", 0) == "fc_0.w_0.block0");
  CHECK(blockName("w", 4294967295u) == "w.block4294967295");
  CHECK(trainerCopyName("fc_0.w_0@GRAD.block3", 12) == "fc_0.w_0@GRAD.block3.trainer_12");
}
