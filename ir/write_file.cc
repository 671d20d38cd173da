// Writing a whole file with its errors returned.
#include "ir/write_file.h"

#include "support/error.h"

namespace oar {

llvm::Error writeFile(llvm::StringRef file, llvm::StringRef shown, llvm::StringRef what,
                      llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::error_code ec;
  llvm::raw_fd_ostream os(file, ec);
  if (ec)
    return makeError("{0}: cannot write{1}: {2}", shown, what, ec.message());
  write(os);
  os.close();
  if (!os.has_error())
    return llvm::Error::success();
  std::error_code failed = os.error();
  os.clear_error(); // left set, the stream's destructor would end the process
  return makeError("{0}: write failed: {1}", shown, failed.message());
}

} // namespace oar
