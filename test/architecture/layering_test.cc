// The layers of cmake/layers.cmake hold: no include reaches up, no cycle, no folder left out.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test/architecture/layering_check.h"
#include "test/helpers/expect.h"

namespace fs = std::filesystem;
using oar::test::layeringProblems;
using oar::test::readLayers;

namespace {

/// A scratch source tree under /tmp, removed at the end of the test.
struct ScratchTree {
  fs::path root;
  ScratchTree() {
    char tmpl[] = "/tmp/oar-layering-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    root = tmpl;
  }
  ~ScratchTree() { fs::remove_all(root); }
  void write(const std::string &relative, const std::string &text) const {
    fs::create_directories((root / relative).parent_path());
    std::ofstream(root / relative) << text;
  }
  std::vector<std::string> problems(const std::string &layersText) const {
    write("layers.txt", layersText);
    auto layers = requireValue(readLayers((root / "layers.txt").string()));
    return layeringProblems(layers, root.string());
  }
};

std::string joined(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

} // namespace

TEST_CASE("every include of oar's layers reaches only the layers its own builds on",
          "[architecture]") {
  auto layers = requireValue(readLayers(OAR_BINARY_DIR "/layers.txt"));
  REQUIRE(layers.size() > 10);
  std::vector<std::string> problems = layeringProblems(layers, OAR_SOURCE_DIR);
  INFO(joined(problems));
  CHECK(problems.empty());
}

TEST_CASE("an include that reaches up a layer is named with its file and line", "[architecture]") {
  ScratchTree tree;
  tree.write("low/a.h", "#pragma once\n#include \"mid/b.h\"\n");
  tree.write("mid/b.h", "#pragma once\n#include \"low/a.h\"\n#include \"llvm/ADT/StringRef.h\"\n");
  tree.write("top/c.cc", "#include \"mid/b.h\"\n#include \"low/a.h\"\n");
  std::vector<std::string> problems = tree.problems("low|low|\nmid|mid|low\ntop|top|mid\n");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "low/a.h:2: layer low includes \"mid/b.h\" of layer mid, which it does not "
                       "build on (cmake/layers.cmake)");
}

TEST_CASE("a cycle among the declared layers is named", "[architecture]") {
  ScratchTree tree;
  tree.write("a/x.h", "#pragma once\n");
  tree.write("b/y.h", "#pragma once\n");
  std::vector<std::string> problems = tree.problems("a|a|b\nb|b|a\n");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "layers form a cycle: a -> b -> a");
}

TEST_CASE("a folder of sources in no layer, an include of a folder in no layer and an unknown "
          "dependency are named",
          "[architecture]") {
  ScratchTree tree;
  tree.write("lib/a.cc", "#include \"tools/helper.h\"\n");
  tree.write("lib/extra/b.cc", "int b;\n");
  tree.write("tools/helper.h", "#pragma once\n");
  std::vector<std::string> problems = tree.problems("lib|lib|nothing\n");
  std::string text = joined(problems);
  CHECK_THAT(text, Catch::Contains("layer lib builds on nothing, which is no layer"));
  CHECK_THAT(text, Catch::Contains("lib/extra holds sources but is in no layer"));
  CHECK_THAT(text, Catch::Contains("lib/a.cc:1: layer lib includes \"tools/helper.h\", which no "
                                   "layer holds"));
  CHECK(problems.size() == 3);
}

TEST_CASE("a malformed layers file is refused with its file and line", "[architecture]") {
  ScratchTree tree;
  tree.write("layers.txt", "# comment\nok|ok|\nbroken line\n");
  auto layers = readLayers((tree.root / "layers.txt").string());
  REQUIRE(!layers);
  CHECK_THAT(llvm::toString(layers.takeError()), Catch::EndsWith("layers.txt:3: expected "
                                                                  "name|folders|dependencies, got "
                                                                  "\"broken line\""));
}
