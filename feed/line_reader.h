// Lines of a plain or gzip-compressed file, read in chunks: what every streamed feed reads.
#pragma once

#include <string>
#include <zlib.h>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

class LineReader {
public:
  LineReader() = default;
  LineReader(const LineReader &) = delete;
  LineReader &operator=(const LineReader &) = delete;
  ~LineReader() { close(); }

  /// Opens `path` (gzip or plain: zlib reads both).
  llvm::Error open(const std::string &path);
  bool isOpen() const { return file_ != nullptr; }
  void close();
  /// The next line without its newline (or "\r\n"), valid until the next call; false at the end.
  /// A gzip file cut short, or a line longer than kMaxLine, is an error naming the file (and
  /// line): a truncated file must not train on what is left, and a runaway line (a binary file,
  /// a lost newline) must not be buffered whole.
  llvm::Expected<bool> next(llvm::StringRef &line);

  static constexpr size_t kMaxLine = size_t(16) << 20;

private:
  static constexpr unsigned kChunk = 1 << 18;
  int64_t lines_ = 0; ///< lines returned so far

  llvm::Error tooLong() const;
  std::string path_, buf_;
  gzFile file_ = nullptr;
  size_t pos_ = 0;
  bool eof_ = false;
};

} // namespace oar
