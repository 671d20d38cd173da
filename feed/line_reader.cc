// Reading lines through zlib, which passes plain files through as they are.
#include "feed/line_reader.h"

#include <cerrno>
#include <cstring>

#include "support/error.h"

namespace oar {

llvm::Error LineReader::open(const std::string &path) {
  close();
  path_ = path;
  file_ = gzopen(path.c_str(), "rb");
  if (!file_)
    return makeError("{0}: cannot open data file: {1}", path, std::strerror(errno));
  gzbuffer(file_, 1 << 17);
  buf_.clear();
  pos_ = 0;
  lines_ = 0;
  eof_ = false;
  return llvm::Error::success();
}

llvm::Error LineReader::tooLong() const {
  return makeError("{0}:{1}: the line is longer than {2} MiB (a binary file, or lost newlines?)",
                   path_, lines_ + 1, kMaxLine >> 20);
}

void LineReader::close() {
  if (file_)
    gzclose(file_);
  file_ = nullptr;
}

llvm::Expected<bool> LineReader::next(llvm::StringRef &line) {
  for (;;) {
    size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos || (eof_ && pos_ < buf_.size())) {
      size_t end = nl == std::string::npos ? buf_.size() : nl;
      if (end - pos_ > kMaxLine)
        return tooLong();
      line = llvm::StringRef(buf_).slice(pos_, end);
      line.consume_back("\r");
      pos_ = end + 1;
      ++lines_;
      return true;
    }
    if (eof_)
      return false;
    buf_.erase(0, pos_); // keep the partial line, read the next chunk after it
    pos_ = 0;
    size_t have = buf_.size();
    if (have > kMaxLine) // the buffer holds at most kMaxLine + kChunk bytes
      return tooLong();
    buf_.resize(have + kChunk);
    int got = gzread(file_, buf_.data() + have, kChunk);
    int status = Z_OK;
    const char *message = gzerror(file_, &status);
    if (got < 0)
      return makeError("{0}: cannot read data file: {1}", path_, message);
    // zlib hands out what it could decompress of a stream that stops early, then reports EOF
    // with Z_BUF_ERROR: a file cut short (a copy or download that did not finish).
    if (status == Z_BUF_ERROR)
      return makeError("{0}: the gzip stream stops before its end: the file is cut short (a "
                       "copy or download that did not finish?)",
                       path_);
    buf_.resize(have + got);
    eof_ = got == 0;
  }
}

} // namespace oar
