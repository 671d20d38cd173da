// The metrics CSV.
#include "train/metrics_writer.h"

#include <cerrno>
#include <cstring>

#include "support/error.h"
#include "llvm/Support/Path.h"

namespace oar {

llvm::Expected<std::unique_ptr<MetricsWriter>>
MetricsWriter::open(llvm::StringRef path, const std::vector<std::string> &metricNames) {
  FILE *f = std::fopen(path.str().c_str(), "w");
  if (!f)
    return makeError("{0}: cannot write metrics: {1}", path, std::strerror(errno));
  std::fprintf(f, "step,epoch,phase,loss");
  for (const std::string &m : metricNames)
    std::fprintf(f, ",%s", m.c_str());
  std::fprintf(f, ",samples_per_sec\n");
  std::fflush(f);
  return std::unique_ptr<MetricsWriter>(new MetricsWriter(f));
}

void MetricsWriter::writeStep(const StepReport &r) {
  std::fprintf(f_, "%lld,%lld,train,%.9g", static_cast<long long>(r.step),
               static_cast<long long>(r.epoch), r.loss);
  for (double m : r.metrics)
    std::fprintf(f_, ",%.9g", m);
  std::fprintf(f_, ",%.1f\n", r.samplesPerSec);
  std::fflush(f_);
}

void MetricsWriter::writeEval(const StepReport &after, const EvalResult &eval) {
  std::fprintf(f_, "%lld,%lld,test,%.9g", static_cast<long long>(after.step),
               static_cast<long long>(after.epoch), eval.loss);
  for (const auto &[name, value] : eval.metrics)
    std::fprintf(f_, ",%.9g", value);
  std::fprintf(f_, ",\n");
  std::fflush(f_);
}

MetricsWriter::~MetricsWriter() { std::fclose(f_); }

std::string metricsPathFor(llvm::StringRef path, int64_t trainerId, int64_t trainers) {
  if (trainers <= 1)
    return path.str();
  llvm::StringRef ext = llvm::sys::path::extension(path);
  return (path.drop_back(ext.size()) + ".trainer" + llvm::Twine(trainerId) + ext).str();
}

} // namespace oar
