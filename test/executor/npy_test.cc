// .npy files: written whole or not at all.
#include "executor/npy.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

TEST_CASE("writeNpy replaces a file whole and leaves no temporary behind", "[executor]") {
  std::string dir = scratchDir("npy_atomic");
  std::string path = dir + "/x.npy";
  REQUIRE_OK(writeNpy(path, Tensor::fromVector<float>({2}, {1.0f, 2.0f})));
  REQUIRE_OK(writeNpy(path, Tensor::fromVector<float>({3}, {3.0f, 4.0f, 5.0f})));
  Tensor back = requireValue(readNpy(path));
  CHECK(back.numel() == 3);
  CHECK(back.data<float>()[2] == 5.0f);
  CHECK(!llvm::sys::fs::exists(path + ".tmp"));
  // A write that cannot land (a directory holds the name) fails by name and leaves both as
  // they were.
  std::string blocked = dir + "/blocked.npy";
  llvm::sys::fs::create_directories(blocked);
  CHECK_THAT(errorText(writeNpy(blocked, back)), Contains("blocked.npy: cannot replace it"));
  CHECK(llvm::sys::fs::is_directory(blocked));
  CHECK(!llvm::sys::fs::exists(blocked + ".tmp"));
}

TEST_CASE("writeNpy writes a device in place instead of renaming over it", "[executor]") {
  Tensor t = Tensor::fromVector<float>({1024}, std::vector<float>(1024, 1.0f));
  CHECK_THAT(errorText(writeNpy("/dev/full", t)), Contains("/dev/full: write failed"));
  llvm::sys::fs::file_status st;
  REQUIRE(!llvm::sys::fs::status("/dev/full", st));
  CHECK(st.type() == llvm::sys::fs::file_type::character_file);
  CHECK(!llvm::sys::fs::exists("/dev/full.tmp"));
}
