// Progress display.
#include "train/progress.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

namespace oar {

ProgressPrinter::ProgressPrinter(llvm::raw_ostream &os, std::string prefix, int64_t logEvery)
    : os_(os), prefix_(std::move(prefix)), logEvery_(logEvery), terminal_(os.is_displayed()) {}

void ProgressPrinter::update(const StepReport &r) {
  if (r.samplesPerSec > 0) {
    samples_ += r.rows;
    seconds_ += r.rows / r.samplesPerSec;
  }
  double rate = seconds_ > 0 ? samples_ / seconds_ : 0;
  bool last = r.step + 1 == r.totalSteps;
  // A streamed feed's step count is unknown (0) until it ends.
  std::string total = r.totalSteps ? llvm::formatv("/{0}", r.totalSteps).str() : "";
  if (terminal_) {
    int width = 30,
        filled = r.totalSteps ? static_cast<int>(width * (r.step + 1) / r.totalSteps) : 0;
    os_ << "\r" << prefix_ << "[" << std::string(filled, '#') << std::string(width - filled, '.')
        << llvm::formatv("] step {0}{1} epoch {2} loss {3:f4} {4:f0} samples/s", r.step + 1, total,
                         r.epoch, r.loss, rate);
    os_.flush();
    return;
  }
  int64_t every = logEvery_ > 0       ? logEvery_
                  : r.totalSteps == 0 ? 100
                                      : std::max<int64_t>(1, r.totalSteps / 20);
  if (r.step % every == 0 || last)
    os_ << prefix_
        << llvm::formatv("step {0}{1} epoch {2} loss {3:f6} {4:f0} samples/s\n", r.step + 1, total,
                         r.epoch, r.loss, rate);
  os_.flush(); // a pipe (oar-launch) should see each line as it happens
}

void ProgressPrinter::finish() {
  if (terminal_)
    os_ << "\n";
}

} // namespace oar
