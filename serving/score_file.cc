// Writing an evaluation's scores.
#include "serving/score_file.h"

#include "serving/predict_stream.h"
#include "support/error.h"

namespace oar {

llvm::Expected<std::unique_ptr<ScoreFile>> ScoreFile::open(llvm::StringRef path,
                                                           std::vector<std::string> outputs) {
  std::error_code ec;
  auto os = std::make_unique<llvm::raw_fd_ostream>(path, ec);
  if (ec)
    return makeError("{0}: cannot write: {1}", path, ec.message());
  return std::unique_ptr<ScoreFile>(new ScoreFile(path.str(), std::move(outputs), std::move(os)));
}

void ScoreFile::write(const Scope &scope) {
  std::vector<Tensor> values;
  for (const std::string &o : outputs_) {
    const Tensor *t = scope.find(o);
    if (!t || !t->initialized()) {
      missing_ = true;
      return;
    }
    values.push_back(onHost(*t));
  }
  for (int64_t r = 0; !values.empty() && r < values[0].dim(0); ++r)
    writeScoreRow(*os_, values, r);
}

llvm::Error ScoreFile::close() {
  os_->close();
  if (missing_)
    return makeError("{0}: the evaluation computed no {1}", path_, outputs_.front());
  if (os_->has_error()) {
    std::string why = os_->error().message();
    os_->clear_error();
    return makeError("{0}: write failed: {1}", path_, why);
  }
  return llvm::Error::success();
}

} // namespace oar
